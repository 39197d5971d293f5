"""Schema version 14's statements (gw/store/migrations.py lists them): budgets per API
key and per policy. Released SQL: never edit, add a version instead.

- ``api_keys`` gains ``daily_usd``, ``weekly_usd``, ``monthly_usd`` and ``total_usd``
  (NULL: no budget for that period), set by ``gw keys create/update --daily-usd ...``;
- ``usage`` gains ``policy``, the policy that decided the request (NULL in rows written
  before, which no policy budget counts);
- ``policy_spend`` holds the cost per policy and UTC day (``period_start``, with the
  day's and month's budget labels), added by a trigger in the transaction that writes
  the usage row, as ``usage_rollup`` is, so deleting old rows (``state.usage_max_age``)
  keeps the sums the policy budgets are seeded from at start (usage_rollup.py).
"""

from __future__ import annotations

from typing import Final

# The start of the UTC day holding NEW.time, as version 8's rollup computes it.
_CUT: Final = "CAST(NEW.time / 86400 AS INTEGER) * 86400"
_DAY_START: Final = f"{_CUT} - 86400 * ({_CUT} > NEW.time)"


def _v14_budgets(real: str, integer: str) -> tuple[str, ...]:
    """Version 14's statements in an engine's types, the trigger aside (never edit)."""
    return (
        *(
            f"ALTER TABLE api_keys ADD COLUMN {field} {real}"
            for field in ("daily_usd", "weekly_usd", "monthly_usd", "total_usd")
        ),
        "ALTER TABLE usage ADD COLUMN policy TEXT",
        f"""
        CREATE TABLE policy_spend (
            policy TEXT NOT NULL,
            period_start {integer} NOT NULL,
            day TEXT NOT NULL,
            month TEXT NOT NULL,
            requests {integer} NOT NULL,
            cost_usd {real} NOT NULL,
            PRIMARY KEY (policy, period_start)
        )
        """,
    )


_V14_ADD: Final = (
    "INSERT INTO policy_spend (policy, period_start, day, month, requests, cost_usd)"
    " VALUES (NEW.policy, {start}, NEW.day, NEW.month, 1, {cost})"
    " ON CONFLICT (policy, period_start) DO UPDATE SET"
    " requests = policy_spend.requests + 1,"
    " cost_usd = policy_spend.cost_usd + excluded.cost_usd"
)
_V14_SQLITE_TRIGGER: Final = (
    "CREATE TRIGGER usage_policy_spend_insert AFTER INSERT ON usage"
    " WHEN NEW.policy IS NOT NULL BEGIN "
    + _V14_ADD.format(start=_DAY_START, cost="ifnull(NEW.cost_usd, 0.0)")
    + "; END"
)
_V14_POSTGRES_TRIGGER: Final = (
    """
    CREATE FUNCTION usage_policy_spend_add() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        start bigint;
    BEGIN
        start := floor(NEW.time / 86400)::bigint * 86400;
        IF start > NEW.time THEN
            start := start - 86400;
        END IF;
        """
    + _V14_ADD.format(start="start", cost="coalesce(NEW.cost_usd, 0.0)")
    + """;
        RETURN NULL;
    END
    $$
    """,
    "CREATE TRIGGER usage_policy_spend_insert AFTER INSERT ON usage FOR EACH ROW"
    " WHEN (NEW.policy IS NOT NULL) EXECUTE FUNCTION usage_policy_spend_add()",
)


V14_SQLITE: Final = (*_v14_budgets("REAL", "INTEGER"), _V14_SQLITE_TRIGGER)
V14_POSTGRES: Final = (*_v14_budgets("double precision", "bigint"), *_V14_POSTGRES_TRIGGER)

"""The usage ledger in SQL: writing rows, the grouped report, and the ``--since`` syntax.

Rows go in as multi-row inserts (``batch_insert.py``), in one transaction;
``INSERT OR IGNORE`` on the request id keeps the first row of a request, so a batch
written twice (a retry after an unclear failure) counts once.

The report groups rows by one key and sums them; it is read from the rollup the store keeps
beside the rows (gw/store/usage_rollup.py), which gives the same answer. The rollup does
not keep the gateway that served each row (``ROWS_ONLY``): by gateway, the report sums the
rows themselves, so it covers the rows retention has kept (``state.usage_max_age``).

``gw usage --json`` and ``GET /admin/v1/usage`` print the same array, one object per
group, the biggest spender first (by day: oldest first)::

    [{"model": "gpt-4o-mini",        // the grouping key: tenant, model, key, day, route,
                                     //   provider or gateway; null where the row has none
      "requests": 12,                // routed requests (see gw/execution/usage_row.py)
      "errors": 1,                   // ... of which ended with an error code
      "input_tokens": 3400,          // every prompt token, cached ones included
      "cached_input_tokens": 1024,   // ... of which read from a provider's prompt cache
      "cached_share": 0.3012,        // cached_input_tokens / input_tokens (4 places);
                                     //   null without input tokens (sticky sessions,
                                     //   docs/guides/sticky-sessions.md, raise it)
      "output_tokens": 560,          // every answer token, reasoning included
      "reasoning_tokens": 128,
      "cost_usd": 0.0041,            // the sum of the requests' costs, as traced
      "unpriced": 0,                 // requests with tokens but no catalog price
      "estimated": 2,                // requests whose counts are gw's estimate
      "recovered": 0}]               // rows put back from the usage journal after a
                                     //   crash (gw/telemetry/usage_journal.py)

``day`` is a UTC date (``2026-03-15``), ``key`` an API key id.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from typing import Any, Final, Literal, Protocol, get_args

import msgspec

from gw.ports import UsageRow

UsageGroup = Literal["tenant", "model", "key", "day", "route", "provider", "gateway"]
USAGE_GROUPS: Final[tuple[UsageGroup, ...]] = get_args(UsageGroup)

# Group -> column of the ``usage`` table (gw/store/migrations.py, version 2).
_COLUMNS: Final[dict[UsageGroup, str]] = {
    "tenant": "tenant",
    "model": "model",
    "key": "key_id",
    "day": "day",
    "route": "route",
    "provider": "provider",
    "gateway": "gateway",  # version 10
}
ROWS_ONLY: Final[frozenset[UsageGroup]] = frozenset({"gateway"})
"""Groups the rollup does not keep: their report sums the rows (see the module docstring)."""
_DAY_PREFIX: Final = "d:"  # gw.execution.periods renders day labels as d:YYYY-MM-DD
_SINCE = re.compile(r"^(\d+)([mhdw])$")
_SECONDS: Final = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
COST_DIGITS: Final = 10

_FIELDS: Final = UsageRow.__struct_fields__
INSERT_USAGE: Final = f"INSERT OR IGNORE INTO usage ({', '.join(_FIELDS)})"
"""The head of the multi-row insert (gw/store/batch_insert.py), one value per field."""
DELETE_USAGE_BEFORE: Final = """
DELETE FROM usage WHERE rowid IN (SELECT rowid FROM usage WHERE time < ? ORDER BY time LIMIT ?)
"""
"""Retention (``state.usage_max_age``): the oldest rows before a time, a batch at a time;
the rollup keeps their sums (its trigger fires on INSERT only)."""


class UsageTotals(msgspec.Struct, frozen=True, kw_only=True):
    """One group of the report; ``key`` is the group's value (``None``: rows without one)."""

    key: str | None
    requests: int
    errors: int
    input_tokens: int
    cached_input_tokens: int
    output_tokens: int
    reasoning_tokens: int
    cost_usd: float
    unpriced: int
    estimated: int
    recovered: int = 0


class UsageReader(Protocol):
    """Reads the ledger; ``SqliteStore`` is one."""

    async def usage_report(
        self, by: UsageGroup, since: float | None = None, tenant: str | None = None
    ) -> list[UsageTotals]: ...


def group_column(by: UsageGroup) -> str:
    """The column of ``usage`` (and ``usage_rollup``) holding the ``by`` value."""
    return _COLUMNS[by]


def report_order(by: UsageGroup) -> str:
    """The report's ORDER BY over ``k``, ``requests`` and ``cost`` (see the module
    docstring); cost compared as shown (rounded), so equal sums tie however summed."""
    if by == "day":
        return "k"
    return f"round(cost, {COST_DIGITS}) DESC, requests DESC, k IS NULL, k"


ROW_MEASURES: Final = (
    "1",
    "error_code IS NOT NULL",
    "input_tokens",
    "cached_input_tokens",
    "output_tokens",
    "reasoning_tokens",
    "cost_usd",
    "cost_usd IS NULL AND input_tokens + output_tokens > 0",
    "usage_source IS 'estimate'",
    "recovered",
)
"""What one ``usage`` row adds to each measure of ``UsageTotals``, in its field order."""


def report_sql(by: UsageGroup, *, since: bool, tenant: bool) -> str:
    """The report's definition, over the rows: the grouping query, its parameters
    ``since`` then ``tenant`` where asked for. Reports are read from the rollup
    (gw/store/usage_rollup.py), which must give the same answer (tests compare)."""
    column = _COLUMNS[by]
    where = [clause for clause, on in (("time >= ?", since), ("tenant = ?", tenant)) if on]
    requests, *sums = ROW_MEASURES
    # ``column`` comes from the fixed table above, never from the caller's text.
    return (
        f"SELECT {column} AS k, SUM({requests}) AS requests, "  # noqa: S608 - fixed names
        + ", ".join(f"TOTAL({m}) AS cost" if m == "cost_usd" else f"SUM({m})" for m in sums)
        + " FROM usage"
        + (f" WHERE {' AND '.join(where)}" if where else "")
        + f" GROUP BY k ORDER BY {report_order(by)}"
    )


def totals_from_row(by: UsageGroup, row: Sequence[Any]) -> UsageTotals:
    key = None if row[0] is None else str(row[0])
    if by == "day" and key is not None:
        key = key.removeprefix(_DAY_PREFIX)
    return UsageTotals(
        key=key,
        requests=int(row[1]),
        errors=int(row[2] or 0),
        input_tokens=int(row[3] or 0),
        cached_input_tokens=int(row[4] or 0),
        output_tokens=int(row[5] or 0),
        reasoning_tokens=int(row[6] or 0),
        cost_usd=round(float(row[7] or 0.0), COST_DIGITS),
        unpriced=int(row[8] or 0),
        estimated=int(row[9] or 0),
        recovered=int(row[10] or 0),
    )


def report_json(by: UsageGroup, totals: Sequence[UsageTotals]) -> list[dict[str, Any]]:
    """The documented JSON array (see the module docstring)."""
    rows: list[dict[str, Any]] = []
    for group in totals:
        fields = msgspec.structs.asdict(group)
        key = fields.pop("key")
        rows.append({by: key, **fields, "cached_share": cached_share(group)})
    return rows


def cached_share(group: UsageTotals) -> float | None:
    """The share of the group's input tokens a provider's prompt cache served; None
    without input tokens (embeddings-free, failed-only or empty groups)."""
    if group.input_tokens <= 0:
        return None
    return round(group.cached_input_tokens / group.input_tokens, 4)


def parse_since(text: str, *, now: float) -> float:
    """``30m``, ``24h``, ``7d``, ``2w`` before ``now``, or a UTC date (``2026-03-01``) or
    ISO time, as epoch seconds. Raises ``ValueError`` with what is accepted."""
    text = text.strip()
    match = _SINCE.match(text)
    if match and len(match.group(1)) <= 9:  # longer is no real window (and overflows)
        return now - int(match.group(1)) * _SECONDS[match.group(2)]
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"{text!r}: give a duration (30m, 24h, 7d, 2w) or a date (2026-03-01)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.timestamp()

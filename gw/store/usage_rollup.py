"""The usage report read from the rollup, so its cost follows the groups, not the requests.

``usage_rollup`` (gw/store/migrations.py, version 8) holds the report's sums per UTC hour
and per UTC day, for each tenant, key, route, provider and model (and the rows' day and
month labels); a trigger adds each usage row to its hour's and its day's group in the
transaction that writes the row, and nothing takes them away: old rows may be deleted
(``state.usage_max_age``) and the sums stay.

Strategy for ``since``: whole days come from the day sums, the whole hours before the
first of them from the hour sums, and a ``since`` inside an hour (``7d`` back from now
always is) reads the rest of that hour from the rows, through their time index. So a
report reads the groups of each day, of at most 23 hours, and at most one hour of
requests; and its answer is the one summing every row gives (``gw.store.usage.report_sql``,
the definition; tests compare the two). Once retention has deleted the rows of that
first partial hour, the report counts from the next whole hour.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, Final

import aiosqlite

from gw.execution.limits import GLOBAL_SUBJECT, KEY_PREFIX, POLICY_PREFIX
from gw.execution.periods import PERIODS, period_label, week_start
from gw.store.usage import (
    ROW_MEASURES,
    ROWS_ONLY,
    UsageGroup,
    UsageTotals,
    group_column,
    report_order,
    report_sql,
    totals_from_row,
)

HOUR: Final = 3600
DAY: Final = 86_400
WEEK: Final = 7 * DAY
ROLLUP_MEASURES: Final = (
    "requests",
    "errors",
    "input_tokens",
    "cached_input_tokens",
    "output_tokens",
    "reasoning_tokens",
    "cost_usd",
    "unpriced",
    "estimated",
    "recovered",
)
"""The rollup's columns for the measures of ``UsageTotals``, in its field order."""


_SPEND_BY: Final = (
    # (kind, column, table, filter): each budget's subjects and where their spend is
    ("tenant", "tenant", "usage_rollup", "period = 'day'"),
    ("key", "key_id", "usage_rollup", "period = 'day' AND key_id IS NOT NULL"),
    ("policy", "policy", "policy_spend", "true"),
)


def budget_spend_sql(total: str) -> str:
    """USD per tenant (NULL: none), per API key and per policy, in the day, ISO week,
    month and in total, for the budgets seeded at start; parameters
    (``budget_spend_params``): the day's label, the week's first and next week's first
    second, the month's label, once per kind. ``total``: the engine's NULL-safe sum of
    ``cost_usd``."""
    where = {
        "day": "AND day = ?",
        "week": "AND period_start >= ? AND period_start < ?",
        "month": "AND month = ?",
        "total": "",
    }
    return "\nUNION ALL\n".join(
        f"SELECT '{kind}', {column}, '{period}', {total} FROM {table}"  # noqa: S608 - fixed parts
        f" WHERE {only} {clause} GROUP BY {column}"
        for kind, column, table, only in _SPEND_BY
        for period, clause in where.items()
    )


def budget_spend_params(wall: float) -> tuple[str | int, ...]:
    start = week_start(wall)
    once = (period_label("day", wall), start, start + WEEK, period_label("month", wall))
    return once * len(_SPEND_BY)


def budget_rows(rows: Iterable[Sequence[Any]], wall: float) -> list[tuple[str, str, float]]:
    """(subject, period label, USD) from ``budget_spend_sql``'s rows: each tenant's, the
    global limits' (``GLOBAL_SUBJECT``), which count every row, each key's
    (``@key:<id>``) and each policy's (``@policy:<name>``)."""
    labels: dict[str, str] = {period: period_label(period, wall) for period in PERIODS}
    spend: list[tuple[str, str, float]] = []
    everyone: dict[str, float] = {}
    for kind, name, period, usd in rows:
        amount = float(usd or 0.0)
        if kind == "tenant":
            everyone[period] = everyone.get(period, 0.0) + amount
            if name is not None:
                spend.append((str(name), labels[period], amount))
        else:
            prefix = KEY_PREFIX if kind == "key" else POLICY_PREFIX
            spend.append((prefix + str(name), labels[period], amount))
    return spend + [(GLOBAL_SUBJECT, labels[p], usd) for p, usd in everyone.items()]


BUDGET_SPEND: Final = budget_spend_sql("TOTAL(cost_usd)")


def period_start(moment: float, seconds: int) -> int:
    """The start of the UTC period of ``seconds`` (an hour, a day) holding ``moment``
    (epoch seconds), as the rollup's trigger computes it: start <= moment < start +
    seconds."""
    start = math.floor(moment / seconds) * seconds
    if start > moment:  # the division rounded up to a boundary just above ``moment``
        start -= seconds
    return start


def hour_start(moment: float) -> int:
    """The start of the UTC hour holding ``moment``."""
    return period_start(moment, HOUR)


def next_start(moment: float, seconds: int) -> int | float:
    """``moment`` when a period of ``seconds`` starts there, else the next start."""
    start = period_start(moment, seconds)
    return moment if start == moment else start + seconds


Params = tuple[float | str, ...]


def rollup_query(by: UsageGroup, since: float | None, tenant: str | None) -> tuple[str, Params]:
    """The report query and its parameters: whole days from the day sums, whole hours
    before them from the hour sums, the rest of a first partial hour from the rows; for a
    group the rollup does not keep (``ROWS_ONLY``), every row."""
    if by in ROWS_ONLY:
        sql = report_sql(by, since=since is not None, tenant=tenant is not None)
        return sql, tuple(v for v in (since, tenant) if v is not None)
    column = group_column(by)
    rollup = f"SELECT {column} AS k, {', '.join(ROLLUP_MEASURES)} FROM usage_rollup"  # noqa: S608
    # The time index, named: with a tenant, SQLite would otherwise pick (tenant, day)
    # and read every row of the tenant.
    rows = (
        f"SELECT {column} AS k, {', '.join(ROW_MEASURES)}"  # noqa: S608 - fixed names
        " FROM usage INDEXED BY usage_time"
    )
    filters: list[str] = []
    params: Params = ()
    if tenant is not None:
        filters, params = ["tenant = ?"], (tenant,)
    days = ["period = 'day'", *filters]
    parts: list[tuple[str, list[str], Params]] = [(rollup, days, params)]
    if since is not None:
        hours, whole_days = next_start(since, HOUR), next_start(since, DAY)
        parts = [(rollup, [*days, "period_start >= ?"], (*params, whole_days))]
        if hours < whole_days:
            where = ["period = 'hour'", *filters, "period_start >= ?", "period_start < ?"]
            parts.append((rollup, where, (*params, hours, whole_days)))
        if since < hours:  # the rows of [since, hours), one by one
            parts.append((rows, [*filters, "time >= ?", "time < ?"], (*params, since, hours)))
    selects = [f"{sql} WHERE {' AND '.join(where)}" for sql, where, _ in parts]
    requests, *sums = ROLLUP_MEASURES
    totals = ", ".join(f"TOTAL({m}) AS cost" if m == "cost_usd" else f"SUM({m})" for m in sums)
    # ``column`` and the measures are fixed names, never the caller's text.
    sql = (
        f"SELECT k, SUM({requests}) AS requests, {totals}"  # noqa: S608
        f" FROM ({' UNION ALL '.join(selects)}) GROUP BY k ORDER BY {report_order(by)}"
    )
    return sql, tuple(value for _, _, values in parts for value in values)


async def rollup_report(
    conn: aiosqlite.Connection, by: UsageGroup, since: float | None, tenant: str | None
) -> list[UsageTotals]:
    """Usage summed per ``by`` value, from ``since`` (epoch seconds) on and of ``tenant``
    when given; the same answer as ``report_sql`` over every row."""
    sql, params = rollup_query(by, since, tenant)
    rows = await conn.execute_fetchall(sql, params)
    return [totals_from_row(by, row) for row in rows]

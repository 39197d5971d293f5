"""The usage report read from the rollup, so its cost follows the groups, not the requests.

``usage_rollup`` (gw/store/migrations.py, version 8) holds the report's sums per UTC hour,
day and month label, tenant, key, route, provider and model; a trigger adds each usage
row to its group in the transaction that writes the row, and nothing takes it away: old
rows may be deleted (``state.usage_max_age``) and the sums stay.

Strategy for ``since``: whole hours come from the rollup. A ``since`` inside an hour
(``7d`` back from now always is) reads the rest of that hour from the rows, through their
time index: at most one hour of requests, and the answer is the same as summing every row
(``gw.store.usage.report_sql``, the definition; tests compare the two). Once retention
has deleted the rows of that first partial hour, the report counts from the next whole
hour.
"""

from __future__ import annotations

import math
from typing import Final

import aiosqlite

from gw.store.usage import (
    ROW_MEASURES,
    UsageGroup,
    UsageTotals,
    group_column,
    report_order,
    totals_from_row,
)

HOUR: Final = 3600
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

TENANT_SPEND: Final = """
SELECT tenant, 'day', TOTAL(cost_usd) FROM usage_rollup
WHERE day = ? AND tenant IS NOT NULL GROUP BY tenant
UNION ALL
SELECT tenant, 'month', TOTAL(cost_usd) FROM usage_rollup
WHERE month = ? AND tenant IS NOT NULL GROUP BY tenant
"""
"""USD per tenant in a day and a month (their labels), for the budgets seeded at start."""


def hour_start(moment: float) -> int:
    """The start of the UTC hour holding ``moment`` (epoch seconds), as the rollup's
    trigger computes it: hour <= moment < hour + 3600."""
    hour = math.floor(moment / HOUR) * HOUR
    if hour > moment:  # the division rounded up to a boundary just above ``moment``
        hour -= HOUR
    return hour


Params = tuple[float | str, ...]


def rollup_query(by: UsageGroup, since: float | None, tenant: str | None) -> tuple[str, Params]:
    """The report query and its parameters: whole hours from the rollup, the rest of a
    first partial hour from the rows."""
    column = group_column(by)
    rollup = f"SELECT {column} AS k, {', '.join(ROLLUP_MEASURES)} FROM usage_rollup"  # noqa: S608
    # The time index, named: with a tenant, SQLite would otherwise pick (tenant, day)
    # and read every row of the tenant.
    rows = (
        f"SELECT {column} AS k, {', '.join(ROW_MEASURES)}"  # noqa: S608 - fixed names
        " FROM usage INDEXED BY usage_time"
    )
    filters, params = [], []
    if tenant is not None:
        filters, params = ["tenant = ?"], [tenant]
    parts: list[tuple[str, list[str], Params]] = [(rollup, filters, tuple(params))]
    if since is not None:
        first = hour_start(since)
        whole = first if first == since else first + HOUR
        parts = [(rollup, ["hour >= ?", *filters], (whole, *params))]
        if whole != since:  # the rows of [since, whole), one by one (the time index)
            parts.append((rows, ["time >= ?", "time < ?", *filters], (since, whole, *params)))
    selects = [sql + (f" WHERE {' AND '.join(where)}" if where else "") for sql, where, _ in parts]
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

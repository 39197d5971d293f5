"""The usage ledger in PostgreSQL: rows de-duplicated by request id across gateways, the
report from the rollup, the budgets' spend, retention, and the journal's recovery.

``INSERT ... ON CONFLICT (request_id) DO NOTHING`` keeps the first row of a request,
whichever gateway wrote it; the rollup's trigger (gw/store/postgres/schema.py) fires only
for rows inserted. The report follows the SQLite store's strategy and answer
(gw/store/usage_rollup.py): whole days from the day sums, whole hours from the hour
sums, the rest of a first partial hour from the rows.

Usage writes of all gateways take turns, under one transaction-scoped advisory lock: the
trigger locks each row's hour group and then its day group, so two batches spanning
the same groups in different hours could each hold a lock the other waits for (a
deadlock PostgreSQL breaks only after a second, failing one batch: the store contract
test of concurrent batches hit it every time without the lock). A batch of 100 rows
takes ~1.5 ms (bench/pg_driver.py), so turns cap a fleet at tens of thousands of rows
a second.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import msgspec

from gw.ports import UsageRow
from gw.store.postgres.database import Database, execute_many
from gw.store.postgres.sql import numbered
from gw.store.usage import (
    COST_DIGITS,
    ROWS_ONLY,
    UsageGroup,
    UsageTotals,
    group_column,
    totals_from_row,
)
from gw.store.usage_recovery import CHUNK, RecoveredRows
from gw.store.usage_rollup import (
    DAY,
    HOUR,
    ROLLUP_MEASURES,
    budget_rows,
    budget_spend_params,
    budget_spend_sql,
    hour_start,
    next_start,
)

_FIELDS: Final = UsageRow.__struct_fields__
INSERT_USAGE: Final = (
    f"INSERT INTO usage ({', '.join(_FIELDS)})"  # noqa: S608 - fixed names
    f" VALUES ({', '.join('?' * len(_FIELDS))}) ON CONFLICT (request_id) DO NOTHING"
)
ROW_MEASURES: Final = (
    "1",
    "(error_code IS NOT NULL)::int",
    "input_tokens",
    "cached_input_tokens",
    "output_tokens",
    "reasoning_tokens",
    "cost_usd",
    "(cost_usd IS NULL AND input_tokens + output_tokens > 0)::int",
    "(usage_source IS NOT DISTINCT FROM 'estimate')::int",
    "recovered::int",
)
"""As gw.store.usage.ROW_MEASURES, in PostgreSQL's words."""
BUDGET_SPEND: Final = budget_spend_sql("coalesce(sum(cost_usd), 0.0)")
DELETE_BEFORE: Final = """
DELETE FROM usage WHERE request_id IN
    (SELECT request_id FROM usage WHERE time < ? ORDER BY time LIMIT ?)
"""


USAGE_LOCK: Final = 0x67770002  # pg_advisory_xact_lock key: "gw", usage writes


def _values(rows: Sequence[UsageRow]) -> list[tuple[object, ...]]:
    return [msgspec.structs.astuple(row) for row in rows]


class Usage:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def write(self, rows: Sequence[UsageRow]) -> None:
        """Store rows in one transaction; a known request id keeps its first row."""
        if not rows:
            return
        async with self._db.transaction() as conn:
            await conn.execute("SELECT pg_advisory_xact_lock($1)", USAGE_LOCK)
            await execute_many(conn, INSERT_USAGE, _values(rows))

    async def report(
        self, by: UsageGroup, since: float | None, tenant: str | None
    ) -> list[UsageTotals]:
        sql, params = report_query(by, since, tenant)
        return [totals_from_row(by, tuple(row)) for row in await self._db.fetch(sql, *params)]

    async def budget_spend(self, wall: float) -> list[tuple[str, str, float]]:
        rows = await self._db.fetch(BUDGET_SPEND, *budget_spend_params(wall))
        return budget_rows(rows, wall)

    async def delete_before(self, cutoff: float, *, limit: int) -> int:
        """Whole UTC hours before the one holding ``cutoff`` (see SqliteStore)."""
        return await self._db.execute(DELETE_BEFORE, float(hour_start(cutoff)), limit)


class Recovery:
    """Journal rows back into the ledger at start-up (``StateStore.usage_recovery``)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def insert(self, rows: Sequence[UsageRow]) -> RecoveredRows:
        """The journal's rows the ledger lacks, marked recovered (gw/store/usage_recovery.py
        documents why): the insert reports which went in, so a row another gateway or an
        earlier attempt wrote counts once."""
        inserted = untraced = 0
        unique = [
            msgspec.structs.replace(row, recovered=True)
            for row in {row.request_id: row for row in rows}.values()
        ]
        for start in range(0, len(unique), CHUNK):
            part = unique[start : start + CHUNK]
            async with self._db.transaction() as conn:
                await conn.execute("SELECT pg_advisory_xact_lock($1)", USAGE_LOCK)
                new = await conn.fetch(
                    numbered(
                        f"INSERT INTO usage ({', '.join(_FIELDS)})"  # noqa: S608 - fixed names
                        f" SELECT * FROM unnest({', '.join(_casts())})"
                        " ON CONFLICT (request_id) DO NOTHING RETURNING request_id"
                    ),
                    *_columns(part),
                )
                ids = [str(row[0]) for row in new]
                traced = await conn.fetchval(
                    "SELECT count(*) FROM traces WHERE request_id = ANY($1::text[])", ids
                )
            inserted += len(ids)
            untraced += len(ids) - int(traced)
        return RecoveredRows(inserted, untraced)


_TYPES: Final = {
    "time": "float8",
    "status": "int4",
    "input_tokens": "int8",
    "output_tokens": "int8",
    "cached_input_tokens": "int8",
    "cache_write_tokens": "int8",
    "reasoning_tokens": "int8",
    "cost_usd": "float8",
    "recovered": "bool",
}


def _casts() -> list[str]:
    return [f"?::{_TYPES.get(field, 'text')}[]" for field in _FIELDS]


def _columns(rows: Sequence[UsageRow]) -> list[list[object]]:
    values = [msgspec.structs.astuple(row) for row in rows]
    return [[row[index] for row in values] for index in range(len(_FIELDS))]


Params = tuple[float | str, ...]


def report_query(by: UsageGroup, since: float | None, tenant: str | None) -> tuple[str, Params]:
    """The report over the rollup and the first partial hour's rows: the SQLite store's
    query (``gw.store.usage_rollup.rollup_query``) in PostgreSQL's words; for a group
    the rollup does not keep (``ROWS_ONLY``), every row."""
    column = group_column(by)
    rollup = f"SELECT {column} AS k, {', '.join(ROLLUP_MEASURES)} FROM usage_rollup"  # noqa: S608
    # Named as the rollup's columns: the outer query reads them by name.
    measures = ", ".join(f"{m} AS {n}" for m, n in zip(ROW_MEASURES, ROLLUP_MEASURES, strict=True))
    rows = f"SELECT {column} AS k, {measures} FROM usage"  # noqa: S608
    filters: list[str] = []
    params: Params = ()
    if tenant is not None:
        filters, params = ["tenant = ?"], (tenant,)
    days = ["period = 'day'", *filters]
    parts: list[tuple[str, list[str], Params]] = [(rollup, days, params)]
    if by in ROWS_ONLY:
        since_filter, since_params = (["time >= ?"], (since,)) if since is not None else ([], ())
        parts = [(rows, ["true", *filters, *since_filter], (*params, *since_params))]
    elif since is not None:
        hours, whole_days = next_start(since, HOUR), next_start(since, DAY)
        parts = [(rollup, [*days, "period_start >= ?::float8"], (*params, float(whole_days)))]
        if hours < whole_days:
            where = [
                "period = 'hour'",
                *filters,
                "period_start >= ?::float8",
                "period_start < ?::float8",
            ]
            parts.append((rollup, where, (*params, float(hours), float(whole_days))))
        if since < hours:
            parts.append((rows, [*filters, "time >= ?", "time < ?"], (*params, since, hours)))
    selects = [f"{sql} WHERE {' AND '.join(where)}" for sql, where, _ in parts]
    requests, *sums = ROLLUP_MEASURES
    totals = ", ".join(
        f"coalesce(sum({m}), 0.0) AS cost" if m == "cost_usd" else f"sum({m})" for m in sums
    )
    order = (
        "k"
        if by == "day"
        else f"round(coalesce(sum(cost_usd), 0.0)::numeric, {COST_DIGITS}) DESC,"
        ' requests DESC, k IS NULL, k COLLATE "C"'
    )
    sql = (
        f"SELECT k, sum({requests}) AS requests, {totals}"  # noqa: S608 - fixed names
        f" FROM ({' UNION ALL '.join(selects)}) AS parts GROUP BY k ORDER BY {order}"
    )
    return sql, tuple(float(v) if isinstance(v, int) else v for _, _, vs in parts for v in vs)

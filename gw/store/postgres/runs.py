"""Runs of ``gw serve`` and the traces each lost, in PostgreSQL (gw/store/runs.py says why).

Several gateways share the table: "the run before" a start is the latest run that has
ended, cleanly (``stopped_at``) or not (its runner's lock is free: the process is gone,
gw/store/postgres/runner.py), never one another gateway is serving right now, which
would otherwise look killed.
"""

from __future__ import annotations

from gw.store.postgres.database import Database
from gw.store.postgres.runner import RunnerLock, gone
from gw.store.postgres.sql import numbered
from gw.store.runs import KEPT_RUNS, RunRow


class PgRuns:
    def __init__(self, db: Database, runner: RunnerLock) -> None:
        self._db = db
        self._runner = runner

    async def begin(
        self, started_at: float, *, gateway: str | None = None
    ) -> tuple[int, RunRow | None]:
        runner = await self._runner.hold()
        async with self._db.transaction() as conn:
            rows = await conn.fetch(
                "SELECT id, started_at, stopped_at, routed_lost, unrouted_lost, counted_from,"
                " runner, gateway FROM runs ORDER BY id DESC LIMIT $1",
                KEPT_RUNS,
            )
            running = {int(r[6]) for r in rows if r[2] is None and r[6] is not None}
            # This store's own earlier run (a second begin: tests) counts as ended.
            others = running - {runner}
            live = others - set(await gone(conn, sorted(others)))
            row = next((r for r in rows if r[2] is not None or r[6] not in live), None)
            run = int(
                await conn.fetchval(
                    "INSERT INTO runs (started_at, runner, gateway) VALUES ($1, $2, $3)"
                    " RETURNING id",
                    started_at,
                    runner,
                    gateway,
                )
            )
            await conn.execute("DELETE FROM runs WHERE id <= $1", run - KEPT_RUNS)
        previous = None
        if row is not None:
            stopped_at = row[2]
            previous = RunRow(
                id=int(row[0]),
                started_at=float(row[1]),
                stopped_at=stopped_at,
                routed_lost=int(row[3]) if stopped_at is not None else None,
                unrouted_lost=int(row[4]),
                counted_from=row[5],
                gateway=row[7],
            )
        return run, previous

    async def record_lost(
        self, run: int, *, routed: int, unrouted: int, stopped_at: float | None = None
    ) -> None:
        await self._db.execute(
            "UPDATE runs SET routed_lost = ?, unrouted_lost = ?, stopped_at = ? WHERE id = ?",
            routed,
            unrouted,
            stopped_at,
            run,
        )

    async def record_counted(self, run: int, *, routed_lost: int, counted_from: float) -> None:
        await self._db.execute(
            "UPDATE runs SET routed_lost = ?, counted_from = ? WHERE id = ?",
            routed_lost,
            counted_from,
            run,
        )

    async def count_routed_lost(
        self, since: float, until: float, *, gateway: str | None
    ) -> tuple[int, float]:
        async with self._db.transaction() as conn:
            oldest = await conn.fetchval("SELECT min(time) FROM traces")
            start = max(since, float(oldest)) if oldest is not None else since
            count = await conn.fetchval(
                numbered(
                    "SELECT count(*) FROM usage AS u WHERE u.time >= ? AND u.time < ?"
                    " AND u.gateway IS NOT DISTINCT FROM ?::text"
                    " AND NOT EXISTS (SELECT 1 FROM traces AS t WHERE t.request_id = u.request_id)"
                ),
                start,
                until,
                gateway,
            )
        return int(count), start

"""Runs of ``gw serve`` and the traces each lost, in PostgreSQL (gw/store/runs.py says why)."""

from __future__ import annotations

from gw.store.postgres.database import Database
from gw.store.postgres.sql import numbered
from gw.store.runs import KEPT_RUNS, RunRow


class PgRuns:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def begin(self, started_at: float) -> tuple[int, RunRow | None]:
        async with self._db.transaction() as conn:
            row = await conn.fetchrow(
                "SELECT id, started_at, stopped_at, routed_lost, unrouted_lost, counted_from"
                " FROM runs ORDER BY id DESC LIMIT 1"
            )
            run = int(
                await conn.fetchval(
                    "INSERT INTO runs (started_at) VALUES ($1) RETURNING id", started_at
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

    async def count_routed_lost(self, since: float, until: float) -> tuple[int, float]:
        async with self._db.transaction() as conn:
            oldest = await conn.fetchval("SELECT min(time) FROM traces")
            start = max(since, float(oldest)) if oldest is not None else since
            count = await conn.fetchval(
                numbered(
                    "SELECT count(*) FROM usage AS u WHERE u.time >= ? AND u.time < ?"
                    " AND NOT EXISTS (SELECT 1 FROM traces AS t"
                    " WHERE t.request_id = u.request_id)"
                ),
                start,
                until,
            )
        return int(count), start

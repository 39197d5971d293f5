"""The ``runs`` table: one row per ``gw serve`` start, with the traces that run lost.

Traces are lossy (invariant 8) but every loss is counted, and the count must outlive the
process: a run writes its counts with each trace batch and at a clean stop
(gw/telemetry/trace_losses.py). A killed run could not write the traces still queued, nor
their count; its usage rows are durable (the usage journal), so the next start counts the
run's usage rows that have no trace (``count_routed_lost``), from the later of the run's
start and the oldest trace kept (older ones may have been pruned, which is not a loss).
In a fleet other gateways write usage rows in the same window: a run names its gateway
(gw/fleet/gateway_id.py), and only that gateway's rows are counted.
Runs on the state store's own connection and lock (``SqliteStore.runs``); the count on a
connection of its own, in a thread, as it reads every usage row of the run.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, closing
from pathlib import Path
from typing import Final

import aiosqlite
import msgspec

from gw.store.read_connection import BUSY_TIMEOUT_MS, reader_uri

Transaction = Callable[[], AbstractAsyncContextManager[None]]
KEPT_RUNS: Final = 100  # older rows are deleted at start: a history, not a ledger


class RunRow(msgspec.Struct, frozen=True, kw_only=True):
    """A run as ``gw status`` shows the last one: ``stopped_at`` None means it was killed
    (or is still running); ``routed_lost`` None: not counted yet after a kill."""

    id: int
    started_at: float
    stopped_at: float | None
    routed_lost: int | None
    unrouted_lost: int
    counted_from: float | None
    gateway: str | None = None  # the gateway that ran it (None: before gw recorded it)


class Runs:
    def __init__(
        self,
        conn: Callable[[], aiosqlite.Connection],
        transaction: Transaction,
        database: Path,
    ) -> None:
        self._conn = conn  # read at each use: the store reopens a database that vanished
        self._transaction = transaction
        self._database = database

    async def count_routed_lost(
        self, since: float, until: float, *, gateway: str | None
    ) -> tuple[int, float]:
        """``count_routed_lost`` below, in a thread, on a connection of its own."""
        return await asyncio.to_thread(count_routed_lost, self._database, since, until, gateway)

    async def begin(
        self, started_at: float, *, gateway: str | None = None
    ) -> tuple[int, RunRow | None]:
        """Record a run starting now; return its id and the run before it, whose
        ``routed_lost`` is None when it was killed (``count_routed_lost`` then counts it)."""
        async with self._transaction():
            conn = self._conn()
            rows = await conn.execute_fetchall(
                "SELECT id, started_at, stopped_at, routed_lost, unrouted_lost, counted_from,"
                " gateway FROM runs ORDER BY id DESC LIMIT 1"
            )
            cursor = await conn.execute(
                "INSERT INTO runs (started_at, gateway) VALUES (?, ?)", (started_at, gateway)
            )
            run = int(cursor.lastrowid or 0)
            await conn.execute("DELETE FROM runs WHERE id <= ?", (run - KEPT_RUNS,))
        previous = None
        for row in rows:
            stopped_at = row[2]
            previous = RunRow(
                id=int(row[0]),
                started_at=float(row[1]),
                stopped_at=stopped_at,
                routed_lost=int(row[3]) if stopped_at is not None else None,
                unrouted_lost=int(row[4]),
                counted_from=row[5],
                gateway=row[6],
            )
        return run, previous

    async def record_lost(
        self, run: int, *, routed: int, unrouted: int, stopped_at: float | None = None
    ) -> None:
        """This run's losses so far (absolute counts, so a repeat is harmless); with
        ``stopped_at``, its clean end."""
        async with self._transaction():
            await self._conn().execute(
                "UPDATE runs SET routed_lost = ?, unrouted_lost = ?, stopped_at = ? WHERE id = ?",
                (routed, unrouted, stopped_at, run),
            )

    async def record_counted(self, run: int, *, routed_lost: int, counted_from: float) -> None:
        """A killed run's routed losses, as counted by the next start."""
        async with self._transaction():
            await self._conn().execute(
                "UPDATE runs SET routed_lost = ?, counted_from = ? WHERE id = ?",
                (routed_lost, counted_from, run),
            )


def count_routed_lost(
    database: Path, since: float, until: float, gateway: str | None
) -> tuple[int, float]:
    """The usage rows of ``gateway`` timed in ``[since, until)`` that have no trace,
    counted from the oldest trace kept when that is later than ``since``; returns (count,
    counted from). Blocking (it reads every row of the period): call it in a thread."""
    with closing(sqlite3.connect(reader_uri(database), uri=True)) as conn:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA query_only = 1")
        oldest = conn.execute("SELECT min(time) FROM traces").fetchone()[0]
        start = max(since, oldest) if oldest is not None else since
        row = conn.execute(
            "SELECT count(*) FROM usage AS u WHERE u.time >= ? AND u.time < ? AND u.gateway IS ?"
            " AND NOT EXISTS (SELECT 1 FROM traces AS t WHERE t.request_id = u.request_id)",
            (start, until, gateway),
        ).fetchone()
    return int(row[0]), start

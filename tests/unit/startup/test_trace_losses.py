"""Trace losses outlive the process: a run's drops are written to a real SQLite store with
its trace batches and at a clean stop, and a killed run's are counted by the next start
from its usage rows without a trace (from the oldest trace kept, when older ones were
pruned)."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest
from unit.store.test_sqlite_store import make_trace
from unit.store.test_usage_ledger import row
from unit.telemetry.test_otel import decision

from gw.record import TraceRecord
from gw.startup.trace_losses import TraceLosses
from gw.store import SqliteStore
from gw.store.runs import KEPT_RUNS, count_routed_lost
from gw.telemetry.recorder import TraceRecorder


def routed(request_id: str, time: float = 1.0) -> TraceRecord:
    """A trace whose request reached routing: it has a usage row."""
    return make_trace(request_id, time, decision=decision())


def refused(request_id: str, time: float = 1.0) -> TraceRecord:
    """A trace of a request refused before routing: no usage row."""
    return make_trace(request_id, time, status=401)


async def begin(path: Path) -> tuple[SqliteStore, TraceLosses]:
    store = await SqliteStore.open(path)
    losses = await TraceLosses.begin(store)
    assert losses is not None
    return store, losses


def test_drops_are_written_with_the_next_batch_and_at_a_clean_stop(tmp_path: Path) -> None:
    path = tmp_path / "gw.db"

    async def first_run() -> tuple[int, int]:
        store, losses = await begin(path)
        counts_written = asyncio.Event()
        write = losses.write

        async def write_then_signal() -> None:
            await write()
            counts_written.set()

        losses.write = write_then_signal  # type: ignore[method-assign]
        recorder = TraceRecorder(store, maxsize=2, losses=losses)
        for trace in [routed("a"), routed("b"), routed("c"), refused("d"), refused("e")]:
            recorder.submit(trace)  # not started: the queue holds two, the rest are dropped
        await recorder.start()
        await asyncio.wait_for(counts_written.wait(), timeout=30)  # after a and b
        with sqlite3.connect(path) as db:  # written with that batch, before any stop
            mid_run = db.execute("SELECT routed_lost, unrouted_lost FROM runs").fetchone()
        await recorder.stop()
        recorder.submit(refused("g"))  # after the stop: dropped too
        await losses.stopped()
        await store.close()
        return mid_run

    assert asyncio.run(first_run()) == (1, 2)

    async def second_run() -> dict[str, object]:
        store, losses = await begin(path)
        await losses.start()
        report = losses.report()
        await store.close()
        return report

    report = asyncio.run(second_run())
    last = report["last_run"]
    assert isinstance(last, dict)
    assert (last["ended"], last["routed"], last["unrouted"]) == ("stopped", 1, 3)
    assert last["stopped_at"] is not None
    assert report["this_run"] == {"routed": 0, "unrouted": 0}


class SignallingStore:
    """The store, with an event set after each trace batch is written."""

    def __init__(self, store: SqliteStore) -> None:
        self.store = store
        self.batch_written = asyncio.Event()

    async def write_traces(self, traces: Sequence[TraceRecord]) -> None:
        await self.store.write_traces(traces)
        self.batch_written.set()


def test_a_killed_runs_losses_are_counted_at_the_next_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "gw.db"

    async def killed_run() -> float:
        store, losses = await begin(path)
        started_at = losses._started_at
        signalling = SignallingStore(store)
        recorder = TraceRecorder(signalling, maxsize=1, losses=losses)
        recorder.submit(refused("refused-early"))
        recorder.submit(refused("dropped-refusal"))  # full: dropped, unrouted
        await recorder.start()
        await asyncio.wait_for(signalling.batch_written.wait(), timeout=30)
        # The run's usage rows: one traced, three whose traces never got written (still
        # queued at the kill), and one from before the run, untraced (not this run's);
        # all timed before the next start.
        await store.write_usage(
            [
                row("traced", time=started_at + 1e-6),
                row("lost-1", time=started_at + 2e-6),
                row("lost-2", time=started_at + 3e-6),
                row("lost-3", time=started_at + 4e-6),
                row("before", time=started_at - 10),
            ]
        )
        await store.write_traces([routed("traced", started_at + 1e-6)])
        # kill -9: no stop, no final count; the store's file is as the process left it
        await store.close()
        return started_at

    asyncio.run(killed_run())

    async def next_start() -> tuple[dict[str, object], dict[str, object]]:
        store, losses = await begin(path)
        counting = losses.report()
        await losses.start()
        assert losses._task is not None
        await losses._task
        report = losses.report()
        await store.close()
        return counting, report

    with caplog.at_level(logging.WARNING, logger="gw.telemetry"):
        counting, report = asyncio.run(next_start())
    assert counting["last_run"]["routed"] is None  # type: ignore[index]
    last = report["last_run"]
    assert isinstance(last, dict)
    assert (last["ended"], last["routed"], last["unrouted"]) == ("killed", 3, 1)
    assert last["stopped_at"] is None
    assert "the last run was killed having lost 4 traces: 3 of requests" in caplog.text
    with sqlite3.connect(path) as db:  # written: a later start reads it as counted
        stored = db.execute("SELECT routed_lost, counted_from FROM runs ORDER BY id").fetchall()
    assert stored[0] == (3, last["started_at"])


def test_the_count_starts_at_the_oldest_trace_kept(tmp_path: Path) -> None:
    path = tmp_path / "gw.db"

    async def fill() -> None:
        async with await SqliteStore.open(path) as store:
            await store.write_usage([row(f"u{n}", time=100.0 + n) for n in range(10)])
            await store.write_traces([routed("u6", 106.0), routed("u8", 108.0)])

    asyncio.run(fill())
    # Traces before 106 were pruned: u0..u5 are not counted as lost; u7 and u9 are.
    assert count_routed_lost(path, 100.0, 200.0, None) == (2, 106.0)
    assert count_routed_lost(path, 107.0, 109.0, None) == (1, 107.0)  # the window's own bounds


def test_runs_keep_a_bounded_history(tmp_path: Path) -> None:
    async def main() -> list[int]:
        async with await SqliteStore.open(tmp_path / "gw.db") as store:
            ids = [(await store.runs().begin(float(n)))[0] for n in range(KEPT_RUNS + 5)]
            _, previous = await store.runs().begin(1e9)
            assert previous is not None
            assert previous.id == ids[-1]
            assert previous.routed_lost is None  # never stopped: counted by the next start
        return ids

    asyncio.run(main())
    with sqlite3.connect(tmp_path / "gw.db") as db:
        assert db.execute("SELECT count(*) FROM runs").fetchone() == (KEPT_RUNS,)


def test_a_store_that_cannot_record_the_run_leaves_losses_in_memory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> TraceLosses | None:
        async with await SqliteStore.open(tmp_path / "gw.db") as store:
            blocker = sqlite3.connect(tmp_path / "gw.db", isolation_level=None, timeout=0)
            blocker.execute("PRAGMA busy_timeout = 0")
            blocker.execute("BEGIN EXCLUSIVE")
            try:
                await store._conn.execute("PRAGMA busy_timeout = 0")
                return await TraceLosses.begin(store)
            finally:
                blocker.close()

    with caplog.at_level(logging.ERROR, logger="gw.telemetry"):
        assert asyncio.run(main()) is None
    assert (
        "cannot record this run in the state store (OperationalError (SQLITE_BUSY))" in caplog.text
    )

"""``SqliteStore.traces_written_after``: the cursor ``gw traces --follow`` polls with."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gw.record import TraceRecord
from gw.store import SqliteStore


def make_trace(request_id: str, time: float) -> TraceRecord:
    return TraceRecord(
        request_id=request_id,
        time=time,
        endpoint="chat.completions",
        requested_model="chat",
        stream=False,
        status=200,
        revision=1,
        latency_ms=1.0,
    )


def ids(traces: list[TraceRecord]) -> list[str]:
    return [trace.request_id for trace in traces]


def test_the_cursor_follows_write_order_in_bounded_pages(tmp_path: Path) -> None:
    async def main() -> None:
        async with await SqliteStore.open(tmp_path / "gw.db") as store:
            assert await store.traces_written_after(None, limit=3) == ([], 0)
            await store.write_traces([make_trace(f"a{n}", 100.0 + n) for n in range(5)])
            last, cursor = await store.traces_written_after(None, limit=3)
            assert ids(last) == ["a2", "a3", "a4"]  # the last written, oldest first
            assert await store.traces_written_after(cursor, limit=3) == ([], cursor)
            # Started before everything above, written after: a cursor on time would skip it.
            await store.write_traces([make_trace("late", 1.0), make_trace("b", 200.0)])
            await store.write_traces([make_trace(f"c{n}", 300.0 + n) for n in range(4)])
            page, cursor = await store.traces_written_after(cursor, limit=3)
            assert ids(page) == ["late", "b", "c0"]
            page, cursor = await store.traces_written_after(cursor, limit=3)
            assert ids(page) == ["c1", "c2", "c3"]
            assert (await store.traces_written_after(cursor, limit=3))[0] == []

    asyncio.run(main())


def test_the_cursor_starts_over_when_pruning_emptied_the_table(tmp_path: Path) -> None:
    async def main() -> None:
        async with await SqliteStore.open(tmp_path / "gw.db") as store:
            await store.write_traces([make_trace(f"a{n}", 100.0 + n) for n in range(5)])
            _, cursor = await store.traces_written_after(None, limit=10)
            await store.delete_traces_before(1000.0, limit=100)
            await store.write_traces([make_trace("fresh", 2000.0)])  # reuses a low rowid
            page, _ = await store.traces_written_after(cursor, limit=10)
            assert ids(page) == ["fresh"]

    asyncio.run(main())


def test_a_limit_below_one_is_refused(tmp_path: Path) -> None:
    async def main() -> None:
        async with await SqliteStore.open(tmp_path / "gw.db") as store:
            with pytest.raises(ValueError, match="limit"):
                await store.traces_written_after(None, limit=0)

    asyncio.run(main())

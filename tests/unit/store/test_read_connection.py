"""The store's read connection: admin reads never hold the connection that writes, cannot
write themselves, never create a database, and follow the writer to a reopened file."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from gw.ports import UsageRow
from gw.record import TraceRecord
from gw.store import SqliteStore
from gw.store.read_connection import ReadConnection

GUARD_S = 30.0  # a deadlock fails the test instead of hanging it; not a latency bound


def usage_row(request_id: str) -> UsageRow:
    return UsageRow(
        request_id=request_id,
        time=1000.0,
        day="d:1970-01-01",
        month="m:1970-01",
        tenant="team-a",
        key_id="key_a",
        route="chat",
        provider="mock",
        model="echo",
        status=200,
        error_code=None,
        input_tokens=10,
        output_tokens=5,
    )


def trace(request_id: str) -> TraceRecord:
    return TraceRecord(
        request_id=request_id,
        time=1000.0,
        endpoint="/v1/chat/completions",
        requested_model="chat",
        stream=False,
        status=200,
        revision=1,
        latency_ms=1.0,
    )


def test_the_request_path_goes_on_while_an_admin_read_holds_its_connection(tmp_path: Path) -> None:
    async def main() -> None:
        async with await SqliteStore.open(tmp_path / "gw.db") as store:
            async with store._reads.use():  # a report in progress, as long as it likes
                writes = asyncio.gather(
                    store.write_usage([usage_row("r1")]),
                    store.write_traces([trace("t1")]),
                    store.find_key_by_digest("0" * 64),
                    store.count_active_keys(now=0.0),
                    store.budget_spend(0.0),
                    store.request_path_traces().get_trace("t0"),  # previous_response_id
                )
                await asyncio.wait_for(writes, GUARD_S)
            assert [t.request_id for t in await store.list_traces()] == ["t1"]
            assert [total.requests for total in await store.usage_report("model")] == [1]

    asyncio.run(main())


def test_the_read_connection_cannot_write(tmp_path: Path) -> None:
    async def main() -> None:
        async with await SqliteStore.open(tmp_path / "gw.db") as store:
            await store.write_usage([usage_row("r1")])
            async with store._reads.use() as conn:
                with pytest.raises(sqlite3.OperationalError, match="readonly"):
                    await conn.execute("DELETE FROM usage")
            assert len(await store.usage_report("tenant")) == 1

    asyncio.run(main())


def test_a_reader_never_creates_a_database(tmp_path: Path) -> None:
    path = tmp_path / "missing.db"

    async def main() -> None:
        before = set(threading.enumerate())
        reads = ReadConnection(path)
        with pytest.raises(sqlite3.OperationalError):
            async with reads.use():
                pass
        await reads.close()
        # aiosqlite's worker thread of the failed connect ends on its own, telling this
        # loop: let it, or it finds the loop closed.
        for worker in set(threading.enumerate()) - before:
            await asyncio.to_thread(worker.join, GUARD_S)

    asyncio.run(main())
    assert not path.exists()


def test_reads_follow_the_writer_to_a_file_put_at_the_path(tmp_path: Path) -> None:
    path = tmp_path / "gw.db"

    async def main() -> None:
        async with await SqliteStore.open(path) as store:
            await store.write_traces([trace("old")])
            assert [t.request_id for t in await store.list_traces()] == ["old"]
            for suffix in ("", "-wal", "-shm"):
                path.with_name(path.name + suffix).unlink(missing_ok=True)
            await store.write_traces([trace("new")])  # the writer opens a new gw.db
            assert [t.request_id for t in await store.list_traces()] == ["new"]

    asyncio.run(main())

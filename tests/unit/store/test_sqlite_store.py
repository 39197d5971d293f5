"""SqliteStore against a real SQLite file: schema migrations, traces, config revisions."""

from __future__ import annotations

import asyncio
import sqlite3
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest

from gw.record import AttemptRecord, TraceRecord, message_id
from gw.store import (
    LATEST_VERSION,
    AmbiguousRequestIdError,
    SchemaTooNewError,
    SqliteStore,
    UnreadableTraceError,
)
from gw.store.migrations import MIGRATIONS, pending_migrations

T = TypeVar("T")


def run_with_store(path: Path, body: Callable[[SqliteStore], Awaitable[T]]) -> T:
    async def main() -> T:
        async with await SqliteStore.open(path) as store:
            return await body(store)

    return asyncio.run(main())


def make_trace(request_id: str, time: float, **fields: object) -> TraceRecord:
    values: dict[str, object] = {
        "request_id": request_id,
        "time": time,
        "endpoint": "/v1/chat/completions",
        "requested_model": "chat",
        "stream": False,
        "status": 200,
        "revision": 1,
        "latency_ms": 12.5,
        "provider": "mock",
        "model": "echo",
    }
    values.update(fields)
    return TraceRecord(**values)  # type: ignore[arg-type]  # test builder: fields vary per test


def test_migrations_are_numbered_in_order() -> None:
    assert [m.version for m in MIGRATIONS] == list(range(1, len(MIGRATIONS) + 1))
    assert pending_migrations(LATEST_VERSION) == ()
    assert pending_migrations(0) == MIGRATIONS


def test_open_creates_the_file_and_migrations_are_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "state" / "nested" / "gw.db"
    for _ in range(3):
        assert run_with_store(path, lambda store: store.schema_version()) == LATEST_VERSION
    with sqlite3.connect(path) as conn:
        versions = conn.execute("SELECT version FROM schema_version").fetchall()
        journal = conn.execute("PRAGMA journal_mode").fetchone()
    assert versions == [(m.version,) for m in MIGRATIONS]
    assert journal == ("wal",)


def test_the_database_and_its_directory_are_private(tmp_path: Path) -> None:
    path = tmp_path / "state" / "gw.db"
    run_with_store(path, lambda store: store.schema_version())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    run_with_store(path, lambda store: store.write_traces([make_trace("r1", 1.0)]))
    assert all(
        stat.S_IMODE(p.stat().st_mode) == 0o600 for p in path.parent.iterdir() if p.is_file()
    ), [oct(p.stat().st_mode) for p in path.parent.iterdir()]


def test_a_database_an_older_gw_left_readable_is_made_private(tmp_path: Path) -> None:
    path = tmp_path / "gw.db"
    run_with_store(path, lambda store: store.schema_version())
    path.chmod(0o644)
    run_with_store(path, lambda store: store.schema_version())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_database_from_a_newer_gw_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "gw.db"
    run_with_store(path, lambda store: store.schema_version())
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {LATEST_VERSION + 1}")
    with pytest.raises(SchemaTooNewError, match="newer gw"):
        run_with_store(path, lambda store: store.schema_version())


def test_write_list_and_get_traces(tmp_path: Path) -> None:
    attempt = AttemptRecord(
        number=1,
        provider="mock",
        model="echo",
        account=None,
        started_at=1000.001,
        latency_ms=10.0,
        ttft_ms=None,
        outcome="answered",
    )
    traces = [
        make_trace("req-aaaaaaaa-1", 1000.0, attempts=(attempt,)),
        make_trace("req-bbbbbbbb-2", 1002.0, client_request_id="client-7"),
        make_trace("req-aaaaaaaa-3", 1001.0, status=502, error_code="upstream_error"),
    ]

    async def body(store: SqliteStore) -> None:
        await store.write_traces(traces)
        await store.write_traces([])
        newest = await store.list_traces()
        assert [t.request_id for t in newest] == [
            "req-bbbbbbbb-2",
            "req-aaaaaaaa-3",
            "req-aaaaaaaa-1",
        ]
        assert [t.request_id for t in await store.list_traces(limit=1)] == ["req-bbbbbbbb-2"]
        by_client = await store.list_traces(client_request_id="client-7")
        assert [t.request_id for t in by_client] == ["req-bbbbbbbb-2"]
        assert await store.get_trace("req-aaaaaaaa-1") == traces[0]
        # A unique prefix of 8+ characters resolves; a short or ambiguous one does not.
        assert await store.get_trace("req-bbbb") == traces[1]
        assert await store.get_trace("req-bbb") is None
        assert await store.get_trace("REQ-BBBB") is None
        assert await store.get_trace("req-zzzzzzzz") is None
        with pytest.raises(AmbiguousRequestIdError, match="req-aaaaaaaa"):
            await store.get_trace("req-aaaaaaaa")
        # Writing the same request id again replaces the trace.
        await store.write_traces([make_trace("req-aaaaaaaa-1", 1000.0, status=499)])
        replaced = await store.get_trace("req-aaaaaaaa-1")
        assert replaced is not None
        assert replaced.status == 499
        assert len(await store.list_traces(limit=10)) == 3

    run_with_store(tmp_path / "gw.db", body)
    # Traces survive a reopen.
    again = run_with_store(tmp_path / "gw.db", lambda store: store.list_traces(limit=10))
    assert len(again) == 3


def test_the_anthropic_message_id_gw_gave_finds_its_request(tmp_path: Path) -> None:
    request_id = "req_01a2350f0c31550b0b1233bfac53"
    trace = make_trace(request_id, 1.0)

    async def body(store: SqliteStore) -> None:
        await store.write_traces([trace])
        assert await store.get_trace(message_id(request_id)) == trace
        assert await store.get_trace("msg_01a2350f0c3155") == trace  # a prefix of it too

    run_with_store(tmp_path / "gw.db", body)


def test_an_unreadable_trace_is_skipped_in_lists_and_reported_by_get(tmp_path: Path) -> None:
    path = tmp_path / "gw.db"
    run_with_store(path, lambda store: store.write_traces([make_trace("req-good-0001", 1.0)]))
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO traces (request_id, time, status, route, latency_ms, revision, body)"
            " VALUES ('req-bad-00001', 2.0, 200, 'chat', 1.0, 1,"
            ' CAST(\'{"not": "a trace"}\' AS BLOB))'
        )

    async def body(store: SqliteStore) -> None:
        assert [t.request_id for t in await store.list_traces()] == ["req-good-0001"]
        with pytest.raises(UnreadableTraceError, match="req-bad-00001"):
            await store.get_trace("req-bad-00001")

    run_with_store(path, body)


def test_revision_counter_grows_by_one_per_config_and_survives_restarts(tmp_path: Path) -> None:
    path = tmp_path / "gw.db"

    def record(config_hash: str, time: float) -> int:
        return run_with_store(
            path,
            lambda store: store.record_revision(config_hash=config_hash, source="file", time=time),
        )

    assert record("h1", 1.0) == 1
    assert record("h1", 2.0) == 1  # a restart with an unchanged config is no new revision
    assert record("h2", 3.0) == 2
    assert record("h1", 4.0) == 3  # going back to an older config is still a new revision
    assert record("h1", 5.0) == 3
    rows = run_with_store(path, lambda store: store.list_revisions())
    assert [(r.revision, r.hash, r.time) for r in rows] == [
        (3, "h1", 4.0),
        (2, "h2", 3.0),
        (1, "h1", 1.0),
    ]
    assert rows[0].source == "file"
    assert len(run_with_store(path, lambda store: store.list_revisions(limit=1))) == 1


def test_concurrent_writers_on_one_store_do_not_collide(tmp_path: Path) -> None:
    async def body(store: SqliteStore) -> list[int]:
        writes = [store.write_traces([make_trace(f"req-{i:08d}", float(i))]) for i in range(20)]
        revisions = [
            store.record_revision(config_hash=f"h{i}", source="reload", time=float(i))
            for i in range(5)
        ]
        results = await asyncio.gather(*writes, *revisions)
        assert len(await store.list_traces(limit=100)) == 20
        return sorted(r for r in results if isinstance(r, int))

    assert run_with_store(tmp_path / "gw.db", body) == [1, 2, 3, 4, 5]

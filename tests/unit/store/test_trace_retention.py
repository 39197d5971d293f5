"""SqliteStore's retention methods and the TracePruner against a real SQLite file: traces
go by age and by size, oldest first, in batches; usage rows and config revisions stay."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import msgspec

from gw.config.schema import StateConfig
from gw.config.units import ByteSize, Duration
from gw.execution.periods import period_label
from gw.ports import UsageRow
from gw.record import TraceRecord
from gw.store import LATEST_VERSION, SqliteStore
from gw.store.batch_insert import ROWS_PER_STATEMENT
from gw.store.migrations import MIGRATIONS
from gw.store.trace_rows import TRACE_ROW_OVERHEAD
from gw.telemetry.pruner import TracePruner

T = TypeVar("T")
NOW = 1_800_000_000.0
DAY = 86_400.0


def run_with_store(path: Path, body: Callable[[SqliteStore], Awaitable[T]]) -> T:
    async def main() -> T:
        async with await SqliteStore.open(path) as store:
            return await body(store)

    return asyncio.run(main())


def trace(n: int, time: float, error_message: str = "x" * 400) -> TraceRecord:
    return TraceRecord(
        request_id=f"req-{n:06d}",
        time=time,
        endpoint="/v1/chat/completions",
        requested_model="chat",
        stream=False,
        status=200,
        revision=1,
        latency_ms=5.0,
        provider="mock",
        model="mock-1",
        error_message=error_message,  # by default a body of roughly half a kilobyte
    )


WIDE = "délai dépassé ⏱ 超时 " * 20  # two to four UTF-8 bytes for many characters


def body_bytes(record: TraceRecord) -> int:
    """The UTF-8 bytes of a trace's stored body (msgspec JSON)."""
    return len(msgspec.json.encode(record))


def usage(n: int, time: float) -> UsageRow:
    return UsageRow(
        request_id=f"req-{n:06d}",
        time=time,
        day=period_label("day", time),
        month=period_label("month", time),
        tenant=None,
        key_id=None,
        route="chat",
        provider="mock",
        model="mock-1",
        status=200,
        error_code=None,
        input_tokens=10,
        output_tokens=5,
        cost_usd=None,
        usage_source="provider",
    )


class FixedClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now


def seed(store: SqliteStore, times: list[float]) -> Awaitable[None]:
    async def go() -> None:
        await store.write_traces([trace(n, t) for n, t in enumerate(times)])
        await store.write_usage([usage(n, t) for n, t in enumerate(times)])
        await store.record_revision(config_hash="abc", source="test", time=times[0])

    return go()


def kept_ids(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [r[0] for r in conn.execute("SELECT request_id FROM traces ORDER BY time")]


def untouched_counts(path: Path) -> tuple[int, int]:
    with sqlite3.connect(path) as conn:
        usage_rows = conn.execute("SELECT count(*) FROM usage").fetchone()[0]
        revisions = conn.execute("SELECT count(*) FROM config_revisions").fetchone()[0]
    return usage_rows, revisions


def test_volume_is_body_bytes_plus_a_per_row_overhead(tmp_path: Path) -> None:
    path = tmp_path / "gw.db"
    traces = [trace(1, NOW), trace(2, NOW, error_message=WIDE)]

    async def body(store: SqliteStore) -> tuple[tuple[int, int], tuple[int, int]]:
        empty = await store.trace_volume()
        await store.write_traces(traces)
        return empty, await store.trace_volume()

    empty, two = run_with_store(path, body)
    assert empty == (0, 0)
    with sqlite3.connect(path) as conn:
        stored = conn.execute("SELECT sum(length(CAST(body AS BLOB))) FROM traces").fetchone()[0]
    assert stored == sum(body_bytes(t) for t in traces)
    assert two == (2, stored + 2 * TRACE_ROW_OVERHEAD)


def test_a_written_trace_records_its_body_size_in_bytes(tmp_path: Path) -> None:
    path = tmp_path / "gw.db"
    record = trace(1, NOW, error_message=WIDE)

    async def body(store: SqliteStore) -> None:
        await store.write_traces([record])

    run_with_store(path, body)
    with sqlite3.connect(path) as conn:
        size, chars, stored = conn.execute(
            "SELECT size, length(body), length(CAST(body AS BLOB)) FROM traces"
        ).fetchone()
    assert size == stored == body_bytes(record)
    assert size > chars  # non-ASCII: bytes, not characters


def test_deletes_report_the_body_bytes_they_freed(tmp_path: Path) -> None:
    path = tmp_path / "gw.db"
    traces = [trace(n, NOW - 10 * DAY + n, error_message=WIDE * (n + 1)) for n in range(4)]

    async def body(store: SqliteStore) -> tuple[tuple[int, int], tuple[int, int]]:
        await store.write_traces(traces)
        before = await store.delete_traces_before(NOW, limit=2)
        return before, await store.delete_oldest_traces(limit=5)

    before, oldest = run_with_store(path, body)
    sizes = [body_bytes(t) for t in traces]
    assert before == (2, sum(sizes[:2]) + 2 * TRACE_ROW_OVERHEAD)
    assert oldest == (2, sum(sizes[2:]) + 2 * TRACE_ROW_OVERHEAD)


def test_migration_5_fills_in_the_size_of_existing_traces(tmp_path: Path) -> None:
    path = tmp_path / "gw.db"
    old = [trace(1, NOW, error_message=WIDE), trace(2, NOW + 1)]
    with sqlite3.connect(path) as conn:  # as gw left it at schema version 4
        for migration in MIGRATIONS[:4]:
            for statement in migration.statements:
                conn.execute(statement)
        conn.execute("PRAGMA user_version = 4")
        conn.executemany(
            "INSERT INTO traces (request_id, time, status, route, latency_ms, revision, body)"
            " VALUES (?, ?, 200, 'chat', 5.0, 1, ?)",
            [(t.request_id, t.time, msgspec.json.encode(t).decode()) for t in old],
        )

    async def body(store: SqliteStore) -> tuple[int, tuple[int, int], tuple[int, int]]:
        version = await store.schema_version()
        volume = await store.trace_volume()
        return version, volume, await store.delete_oldest_traces(limit=1)

    version, volume, deleted = run_with_store(path, body)
    sizes = [body_bytes(t) for t in old]
    assert version == LATEST_VERSION >= 5
    assert volume == (2, sum(sizes) + 2 * TRACE_ROW_OVERHEAD)
    assert deleted == (1, sizes[0] + TRACE_ROW_OVERHEAD)


def test_delete_before_takes_only_old_traces_oldest_first_up_to_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "gw.db"
    times = [NOW - 10 * DAY + n for n in range(5)] + [NOW - n for n in range(3)]

    async def body(store: SqliteStore) -> list[tuple[int, int]]:
        await seed(store, times)
        cutoff = NOW - 7 * DAY
        return [await store.delete_traces_before(cutoff, limit=3) for _ in range(3)]

    rounds = run_with_store(path, body)
    assert [rows for rows, _ in rounds] == [3, 2, 0]
    assert all(size > TRACE_ROW_OVERHEAD * rows for rows, size in rounds if rows)
    assert kept_ids(path) == ["req-000007", "req-000006", "req-000005"]
    assert untouched_counts(path) == (8, 1)


def test_pruner_deletes_by_age_in_batches_and_keeps_usage(tmp_path: Path) -> None:
    path = tmp_path / "gw.db"
    old = [NOW - 30 * DAY + n for n in range(25)]
    recent = [NOW - 60 + n for n in range(5)]
    settings = StateConfig(trace_max_age=Duration(7 * DAY))

    async def body(store: SqliteStore) -> object:
        await seed(store, old + recent)
        pruner = TracePruner(store, lambda: settings, FixedClock(NOW), asyncio.sleep, batch_size=10)
        return await pruner.prune()

    report = run_with_store(path, body)
    assert (report.expired, report.evicted, report.remaining) == (25, 0, 5)  # type: ignore[attr-defined]
    assert kept_ids(path) == [f"req-{n:06d}" for n in range(25, 30)]
    assert untouched_counts(path) == (30, 1)


def test_pruner_deletes_the_oldest_until_under_the_byte_limit(tmp_path: Path) -> None:
    path = tmp_path / "gw.db"
    times = [NOW - 1000 + n for n in range(40)]

    async def body(store: SqliteStore) -> tuple[object, tuple[int, int], int]:
        await seed(store, times)
        _rows, size = await store.trace_volume()
        limit = size // 4  # room for about a quarter of the rows
        settings = StateConfig(trace_max_bytes=ByteSize(limit))
        pruner = TracePruner(store, lambda: settings, FixedClock(NOW), asyncio.sleep, batch_size=7)
        report = await pruner.prune()
        return report, await store.trace_volume(), limit

    report, (rows, size), limit = run_with_store(path, body)
    assert size <= limit
    assert rows >= 9  # no more deleted than needed (rows are of equal size, ~10 fit)
    assert report.evicted == 40 - rows  # type: ignore[attr-defined]
    assert report.remaining_bytes == size  # type: ignore[attr-defined]
    ids = kept_ids(path)
    assert ids == [f"req-{n:06d}" for n in range(40 - rows, 40)]  # the newest survive
    assert untouched_counts(path) == (40, 1)


def test_a_pruned_file_reuses_its_pages_instead_of_growing(tmp_path: Path) -> None:
    path = tmp_path / "gw.db"
    settings = StateConfig(trace_max_age=Duration(DAY))

    async def body(store: SqliteStore) -> list[int]:
        pruner = TracePruner(store, lambda: settings, FixedClock(NOW), asyncio.sleep)
        sizes = []
        for generation in range(4):
            # Each generation is older than a day by the time the next one is pruned.
            base = NOW - 2 * DAY if generation % 2 == 0 else NOW - 3 * DAY
            await store.write_traces([trace(generation * 1000 + n, base + n) for n in range(300)])
            await pruner.prune()
            await store._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            sizes.append(path.stat().st_size)
        return sizes

    sizes = run_with_store(path, body)
    assert sizes[-1] <= sizes[0]


def test_a_batch_larger_than_one_statement_stores_every_trace(tmp_path: Path) -> None:
    path = tmp_path / "gw.db"
    records = [trace(n, NOW + n) for n in range(2 * ROWS_PER_STATEMENT + 5)]
    replaced = msgspec.structs.replace(records[0], status=502)  # a later row wins

    async def body(store: SqliteStore) -> tuple[int, int]:
        await store.write_traces([*records, replaced])
        return await store.trace_volume()

    count, _ = run_with_store(path, body)
    assert count == len(records)
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT request_id, status, size, body FROM traces").fetchall()
    by_id = {request_id: (status, size, body) for request_id, status, size, body in rows}
    assert by_id[records[0].request_id][0] == 502
    for record in records[1:]:
        status, size, body = by_id[record.request_id]
        assert (status, size) == (200, body_bytes(record))
        assert msgspec.json.decode(body, type=TraceRecord) == record

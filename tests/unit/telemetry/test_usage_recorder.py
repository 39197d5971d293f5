"""UsageRecorder: batching, retried writes, backpressure, and a complete flush on stop."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path

import pytest

from gw.execution.periods import period_label
from gw.ports import UsageRow, UsageSink
from gw.store import SqliteStore
from gw.telemetry import UsageRecorder

from e2e.waiting import await_until


def make_row(n: int, tenant: str = "team-a") -> UsageRow:
    time = 1_773_583_323.0 + n
    return UsageRow(
        request_id=f"req-{n:08d}",
        time=time,
        day=period_label("day", time),
        month=period_label("month", time),
        tenant=tenant,
        key_id="key_secretish",
        route="chat",
        provider="p",
        model="m",
        status=200,
        error_code=None,
        input_tokens=10,
        output_tokens=2,
        cost_usd=0.001,
        usage_source="provider",
    )


class ListWriter:
    def __init__(self) -> None:
        self.batches: list[list[UsageRow]] = []

    async def write_usage(self, rows: Sequence[UsageRow]) -> None:
        self.batches.append(list(rows))

    @property
    def written(self) -> list[str]:
        return [r.request_id for batch in self.batches for r in batch]


class FlakyWriter(ListWriter):
    """Fails its first ``failures`` calls, then writes."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures
        self.calls = 0

    async def write_usage(self, rows: Sequence[UsageRow]) -> None:
        self.calls += 1
        if self.calls <= self.failures:
            raise OSError(f"disk full while writing {rows[0].tenant}")
        await super().write_usage(rows)


class GatedWriter(ListWriter):
    """Writes only once ``gate`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()

    async def write_usage(self, rows: Sequence[UsageRow]) -> None:
        await self.gate.wait()
        await super().write_usage(rows)


def test_recorder_is_a_usage_sink() -> None:
    sink: UsageSink = UsageRecorder(ListWriter())
    assert callable(sink.submit)


def test_rows_are_written_in_batches_in_order() -> None:
    async def main() -> ListWriter:
        writer = ListWriter()
        recorder = UsageRecorder(writer, batch_size=100, flush_interval=0.01)
        await recorder.start()
        for n in range(250):
            recorder.submit(make_row(n))
        await await_until(lambda: recorder.written == 250, "every row written")
        await recorder.stop()
        return writer

    writer = asyncio.run(main())
    assert writer.written == [f"req-{n:08d}" for n in range(250)]
    assert max(len(batch) for batch in writer.batches) <= 100


def test_stop_flushes_a_queue_of_many_rows_to_sqlite(tmp_path: Path) -> None:
    async def main() -> tuple[UsageRecorder, int]:
        async with await SqliteStore.open(tmp_path / "gw.db") as store:
            recorder = UsageRecorder(store, maxsize=30_000)
            await recorder.start()
            for n in range(25_000):
                recorder.submit(make_row(n, tenant=f"t{n % 7}"))
            await recorder.stop()
            totals = await store.usage_report("tenant")
            return recorder, sum(t.requests for t in totals)

    recorder, stored = asyncio.run(main())
    assert stored == 25_000
    assert (recorder.submitted, recorder.written, recorder.lost) == (25_000, 25_000, 0)
    assert recorder.overflowed == 0


def test_stop_without_start_still_flushes() -> None:
    async def main() -> ListWriter:
        writer = ListWriter()
        recorder = UsageRecorder(writer)
        for n in range(5):
            recorder.submit(make_row(n))
        await recorder.stop()
        return writer

    assert len(asyncio.run(main()).written) == 5


def test_a_failed_write_is_retried_and_nothing_is_lost(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> tuple[UsageRecorder, FlakyWriter]:
        writer = FlakyWriter(failures=2)
        recorder = UsageRecorder(writer, flush_interval=0.001, retry_backoff=0.01)
        await recorder.start()
        for n in range(10):
            recorder.submit(make_row(n, tenant="do-not-log-me"))
        await recorder.stop()
        return recorder, writer

    with caplog.at_level(logging.WARNING, logger="gw.telemetry"):
        recorder, writer = asyncio.run(main())
    assert writer.written == [f"req-{n:08d}" for n in range(10)]
    assert (recorder.write_errors, recorder.written, recorder.lost) == (2, 10, 0)
    assert "usage write failed: OSError" in caplog.text
    assert "do-not-log-me" not in caplog.text
    assert "key_secretish" not in caplog.text


def test_rows_left_when_stop_times_out_are_counted_lost(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> UsageRecorder:
        recorder = UsageRecorder(FlakyWriter(failures=10**9), retry_backoff=0.01)
        await recorder.start()
        for n in range(3):
            recorder.submit(make_row(n))
        await recorder.stop(timeout=0.2)
        recorder.submit(make_row(99))  # after stop: nowhere to go
        return recorder

    with caplog.at_level(logging.WARNING, logger="gw.telemetry"):
        recorder = asyncio.run(main())
    assert (recorder.written, recorder.lost, recorder.queued) == (0, 4, 0)
    assert "stopped with 3 rows unwritten" in caplog.text


def test_a_full_queue_holds_new_requests_until_the_writer_makes_room() -> None:
    async def main() -> tuple[UsageRecorder, bool, bool]:
        writer = GatedWriter()
        recorder = UsageRecorder(writer, maxsize=3, flush_interval=0.0, room_timeout=10.0)
        await recorder.start()
        for n in range(3):
            recorder.submit(make_row(n))
        waiting = asyncio.create_task(recorder.wait_for_room())
        await await_until(lambda: recorder.waited == 1, "the request to wait for room")
        blocked = not waiting.done()
        writer.gate.set()
        await asyncio.wait_for(waiting, 5.0)
        await recorder.stop()
        return recorder, blocked, waiting.done()

    recorder, blocked, released = asyncio.run(main())
    assert blocked
    assert released
    assert (recorder.waited, recorder.written, recorder.lost) == (1, 3, 0)


def test_a_stalled_writer_slows_requests_briefly_and_keeps_their_rows() -> None:
    async def main() -> UsageRecorder:
        writer = GatedWriter()
        recorder = UsageRecorder(
            writer, maxsize=2, hard_limit=4, flush_interval=0.0, room_timeout=0.05
        )
        await recorder.start()
        for n in range(2):
            recorder.submit(make_row(n))
        await recorder.wait_for_room()  # times out: the request goes ahead
        for n in range(2, 6):
            recorder.submit(make_row(n))
        writer.gate.set()
        await recorder.stop()
        return recorder

    recorder = asyncio.run(main())
    assert recorder.waited == 1
    # Rows 2 and 3 were queued beyond maxsize; 4 and 5 found the hard limit reached.
    assert (recorder.overflowed, recorder.lost, recorder.written) == (2, 2, 4)


def test_duplicate_rows_count_once_in_the_store(tmp_path: Path) -> None:
    async def main() -> int:
        async with await SqliteStore.open(tmp_path / "gw.db") as store:
            recorder = UsageRecorder(store)
            await recorder.start()
            for _ in range(3):
                recorder.submit(make_row(1))
            await recorder.stop()
            totals = await store.usage_report("tenant")
            return sum(t.requests for t in totals)

    assert asyncio.run(main()) == 1

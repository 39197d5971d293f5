"""TraceRecorder with fake writers: batching, drops when full, flush on stop, failing writes."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path

import pytest

from gw.ports import TraceSink
from gw.record import TraceRecord
from gw.store import SqliteStore
from gw.telemetry import TraceRecorder

from e2e.waiting import await_until


def make_trace(n: int) -> TraceRecord:
    return TraceRecord(
        request_id=f"req-{n:08d}",
        time=1000.0 + n,
        endpoint="/v1/chat/completions",
        requested_model="chat",
        stream=False,
        status=200,
        revision=1,
        latency_ms=1.0,
        error_message="secret-looking content",
    )


class ListWriter:
    def __init__(self) -> None:
        self.batches: list[list[TraceRecord]] = []

    async def write_traces(self, traces: Sequence[TraceRecord]) -> None:
        self.batches.append(list(traces))

    @property
    def written(self) -> list[str]:
        return [t.request_id for batch in self.batches for t in batch]


class FailingWriter:
    def __init__(self) -> None:
        self.calls = 0

    async def write_traces(self, traces: Sequence[TraceRecord]) -> None:
        self.calls += 1
        raise RuntimeError(f"cannot write {traces[0].error_message}")


class SlowWriter(ListWriter):
    async def write_traces(self, traces: Sequence[TraceRecord]) -> None:
        await asyncio.sleep(10)


def test_recorder_is_a_trace_sink() -> None:
    sink: TraceSink = TraceRecorder(ListWriter())
    assert callable(sink.submit)


def test_traces_are_written_in_batches_in_order() -> None:
    writer = ListWriter()
    recorder = TraceRecorder(writer, batch_size=4, flush_interval=0.01)

    async def main() -> None:
        await recorder.start()
        for n in range(10):
            recorder.submit(make_trace(n))
        # Everything was queued before the drainer ran: full batches, then the rest.
        await await_until(lambda: recorder.written == 10, "the first ten traces written")
        assert [len(b) for b in writer.batches] == [4, 4, 2]
        # A trace arriving later, while the drainer idles, is written within the linger.
        recorder.submit(make_trace(10))
        await await_until(lambda: recorder.written == 11, "the later trace written")
        await recorder.stop()

    asyncio.run(main())
    assert writer.written == [f"req-{n:08d}" for n in range(11)]
    assert (recorder.submitted, recorder.written, recorder.dropped) == (11, 11, 0)
    assert recorder.write_errors == 0


def test_a_full_queue_drops_and_counts_without_raising() -> None:
    writer = ListWriter()
    recorder = TraceRecorder(writer, maxsize=3)
    for n in range(5):
        recorder.submit(make_trace(n))  # no event loop and no drainer: the queue fills up
    assert (recorder.submitted, recorder.dropped, recorder.queued) == (5, 2, 3)

    asyncio.run(recorder.stop())
    assert writer.written == [f"req-{n:08d}" for n in range(3)]
    assert (recorder.written, recorder.dropped) == (3, 2)


def test_stop_flushes_everything_queued_into_a_real_store(tmp_path: Path) -> None:
    async def main() -> list[TraceRecord]:
        async with await SqliteStore.open(tmp_path / "gw.db") as store:
            recorder = TraceRecorder(store, batch_size=256, flush_interval=1.0)
            await recorder.start()
            for n in range(600):
                recorder.submit(make_trace(n))
            await recorder.stop()
            assert (recorder.written, recorder.dropped, recorder.queued) == (600, 0, 0)
            recorder.submit(make_trace(600))  # after stop: counted, not queued
            assert (recorder.dropped, recorder.queued) == (1, 0)
            return await store.list_traces(limit=1000)

    assert len(asyncio.run(main())) == 600


def test_stop_of_an_idle_recorder_returns_at_once() -> None:
    recorder = TraceRecorder(ListWriter(), flush_interval=5.0)

    async def main() -> None:
        await recorder.start()
        await asyncio.sleep(0)
        await asyncio.wait_for(recorder.stop(), timeout=1.0)

    asyncio.run(main())
    assert recorder.submitted == 0


def test_stop_gives_up_after_its_timeout_and_counts_what_is_lost() -> None:
    recorder = TraceRecorder(SlowWriter(), batch_size=2)

    async def main() -> None:
        await recorder.start()
        for n in range(5):
            recorder.submit(make_trace(n))
        await recorder.stop(timeout=0.05)

    asyncio.run(main())
    assert (recorder.written, recorder.dropped, recorder.queued) == (0, 5, 0)


def test_a_failing_writer_is_counted_and_logged_without_trace_content(
    caplog: pytest.LogCaptureFixture,
) -> None:
    writer = FailingWriter()
    recorder = TraceRecorder(writer, batch_size=2, flush_interval=0.0)

    async def main() -> None:
        await recorder.start()
        for n in range(5):
            recorder.submit(make_trace(n))
        await recorder.stop()

    with caplog.at_level(logging.WARNING, logger="gw.telemetry"):
        asyncio.run(main())
    assert writer.calls == 3
    assert (recorder.write_errors, recorder.dropped, recorder.written) == (3, 5, 0)
    assert "trace recorder write failed: RuntimeError" in caplog.text
    assert "secret-looking" not in caplog.text
    assert "req-" not in caplog.text
    # Later failures within the interval are counted, not logged again.
    assert len(caplog.records) == 1

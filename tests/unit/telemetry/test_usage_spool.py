"""The usage spool: while the store is unreachable requests are not held, rows queue (and
journal) up to the bound and drain when it answers; past the bound rows are lost, counted,
reported and logged, never blocking or crashing."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path

import pytest

from gw.execution.periods import period_label
from gw.ports import UsageRow
from gw.telemetry import UsageRecorder
from gw.telemetry.usage_journal import UsageJournal, read_journal

from e2e.waiting import await_until


def make_row(n: int) -> UsageRow:
    time = 1_773_583_323.0 + n
    return UsageRow(
        request_id=f"req-{n:08d}",
        time=time,
        day=period_label("day", time),
        month=period_label("month", time),
        tenant="team-a",
        key_id="key_a",
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


class DownWriter(ListWriter):
    """Raises ``ConnectionRefusedError`` (the store unreachable) until ``up`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.up = False
        self.failures = 0

    async def write_usage(self, rows: Sequence[UsageRow]) -> None:
        if not self.up:
            self.failures += 1
            raise ConnectionRefusedError(111, "Connect call failed")
        await super().write_usage(rows)


def _recorder(writer: ListWriter, **kwargs: object) -> UsageRecorder:
    return UsageRecorder(
        writer,
        flush_interval=0.0,
        retry_backoff=0.001,
        max_retry_backoff=0.01,
        room_timeout=10.0,  # a held request would hang the test: none may be
        **kwargs,  # type: ignore[arg-type]
    )


def test_an_unreachable_store_spools_without_holding_requests_then_drains(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "gw.telemetry")
    journal = UsageJournal(tmp_path)

    async def main() -> tuple[UsageRecorder, dict[str, object], int]:
        writer = DownWriter()
        recorder = _recorder(writer, maxsize=2, hard_limit=50, journal=journal)
        await recorder.start()
        recorder.submit(make_row(0))
        await await_until(lambda: recorder.failing is not None, "the first failed write")
        for n in range(1, 20):
            await asyncio.wait_for(recorder.wait_for_room(), 1.0)  # never held while down
            recorder.submit(make_row(n))
        report = recorder.spool_report()
        journaled = len(read_journal(tmp_path).rows)
        writer.up = True
        await await_until(lambda: recorder.written == 20, "the spool to drain")
        assert writer.written == [f"req-{n:08d}" for n in range(20)]
        await recorder.stop()
        return recorder, report, journaled

    recorder, report, journaled = asyncio.run(main())
    assert report["active"] is True
    assert report["error"] == "ConnectionRefusedError"
    assert (report["queued"], report["limit"], report["full"]) == (20, 50, False)
    assert (report["spooled"], report["lost"]) == (19, 0)
    assert journaled == 20  # every spooled row is on disk: a kill now would lose none
    assert (recorder.waited, recorder.lost, recorder.failing) == (0, 0, None)
    assert recorder.spool_report()["active"] is False
    assert "spooling them" in caplog.text
    assert "draining" in caplog.text
    assert list(tmp_path.glob("*.jsonl")) == []  # a clean stop with all written


def test_a_full_spool_counts_reports_and_logs_the_rows_it_loses(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def main() -> tuple[UsageRecorder, dict[str, object], DownWriter]:
        writer = DownWriter()
        recorder = _recorder(writer, maxsize=2, hard_limit=5)
        await recorder.start()
        recorder.submit(make_row(0))
        await await_until(lambda: recorder.failing is not None, "the first failed write")
        for n in range(1, 9):
            await asyncio.wait_for(recorder.wait_for_room(), 1.0)
            recorder.submit(make_row(n))  # never raises, never blocks
        report = recorder.spool_report()
        writer.up = True
        await recorder.stop()
        return recorder, report, writer

    recorder, report, writer = asyncio.run(main())
    assert (report["queued"], report["full"], report["lost"]) == (5, True, 4)
    # The oldest rows are kept (they reach the store); the newest found it full.
    assert writer.written == [f"req-{n:08d}" for n in range(5)]
    assert (recorder.submitted, recorder.written, recorder.lost) == (9, 5, 4)
    assert "the usage spool is full (5 rows waiting for the store)" in caplog.text


def test_a_store_that_hangs_counts_as_unreachable() -> None:
    class HungWriter(ListWriter):
        async def write_usage(self, rows: Sequence[UsageRow]) -> None:
            await asyncio.Event().wait()

    async def main() -> UsageRecorder:
        recorder = _recorder(HungWriter(), maxsize=1, write_timeout=0.01)
        await recorder.start()
        recorder.submit(make_row(0))
        await await_until(lambda: recorder.failing is not None, "the write to time out")
        await asyncio.wait_for(recorder.wait_for_room(), 1.0)
        await recorder.stop(timeout=0.05)
        return recorder

    recorder = asyncio.run(main())
    assert recorder.write_errors >= 1
    assert recorder.waited == 0


def test_a_full_journal_makes_the_spool_full_but_keeps_the_rows_in_memory(
    tmp_path: Path,
) -> None:
    journal = UsageJournal(tmp_path, segment_bytes=1, max_bytes=1200)  # two or three rows

    async def main() -> tuple[UsageRecorder, bool, bool]:
        writer = DownWriter()
        recorder = _recorder(writer, maxsize=2, hard_limit=50, journal=journal)
        await recorder.start()
        recorder.submit(make_row(0))
        await await_until(lambda: recorder.failing is not None, "the first failed write")
        for n in range(1, 10):
            recorder.submit(make_row(n))
        full_while_down = recorder.spool_full
        writer.up = True
        await await_until(lambda: recorder.written == 10, "the spool to drain")
        full_after = recorder.spool_full
        await recorder.stop()
        return recorder, full_while_down, full_after

    recorder, full_while_down, full_after = asyncio.run(main())
    assert full_while_down  # rows past the journal are not durable: /readyz says so
    assert journal.skipped > 0
    assert (recorder.written, recorder.lost) == (10, 0)  # none lost: memory held them
    assert not full_after  # committed segments were deleted, room again

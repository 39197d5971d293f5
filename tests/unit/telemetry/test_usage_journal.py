"""UsageJournal: rows appended as they are submitted, segments deleted once committed, a
torn last line skipped, and a journal that cannot be written never failing a row."""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Sequence
from pathlib import Path

import msgspec
import pytest
from unit.telemetry.test_usage_recorder import ListWriter, make_row

from gw.ports import UsageRow
from gw.telemetry import UsageRecorder
from gw.telemetry.usage_journal import UsageJournal, read_journal

LINE = len(msgspec.json.encode(make_row(0))) + 1  # one row and its newline


def segments(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.glob("usage-*.jsonl"))


def test_segments_are_deleted_once_every_row_in_them_is_committed(tmp_path: Path) -> None:
    journal = UsageJournal(tmp_path, segment_bytes=3 * LINE)
    for n in range(7):
        journal.append(make_row(n))
    # Rows 0-2 and 3-5 filled two segments; row 6 is in the open third.
    assert len(segments(tmp_path)) == 3
    assert journal.appended == 7
    journal.committed(5)  # the second segment still holds row 5
    assert len(segments(tmp_path)) == 2
    journal.committed(6)
    assert len(segments(tmp_path)) == 1
    assert [row.request_id for row in read_journal(tmp_path).rows] == ["req-00000006"]
    journal.close(all_committed=True)
    assert segments(tmp_path) == []
    assert journal.size == 0


def test_close_with_rows_uncommitted_keeps_them_for_the_next_start(tmp_path: Path) -> None:
    journal = UsageJournal(tmp_path, segment_bytes=2 * LINE)
    for n in range(5):
        journal.append(make_row(n))
    journal.committed(2)
    journal.close(all_committed=False)
    found = read_journal(tmp_path)
    assert [row.request_id for row in found.rows] == [f"req-{n:08d}" for n in (2, 3, 4)]
    assert found.torn == 0


def test_a_torn_last_line_is_skipped_and_counted(tmp_path: Path) -> None:
    journal = UsageJournal(tmp_path)
    journal.append(make_row(1))
    journal.append(make_row(2))
    journal.close(all_committed=False)
    [segment] = tmp_path.glob("usage-*.jsonl")
    whole = segment.read_bytes()
    segment.write_bytes(whole + whole[: LINE // 2])  # a third write cut by the kill
    (tmp_path / "usage-0-000000.jsonl").write_bytes(b'{"request_id": "x"}\nnot json')
    found = read_journal(tmp_path)
    assert [row.request_id for row in found.rows] == ["req-00000001", "req-00000002"]
    assert found.torn == 3  # the cut line, a row missing its fields, and garbage
    assert len(found.segments) == 2


def test_a_failed_write_is_counted_and_the_next_row_tries_a_new_segment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [0.0]
    journal = UsageJournal(tmp_path, retry_after=1.0, monotonic=lambda: now[0])
    journal.append(make_row(1))
    real_write = os.write

    def disk_full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", disk_full)
    journal.append(make_row(2))  # never raises
    journal.append(make_row(3))  # within retry_after: not even tried
    assert (journal.appended, journal.errors, journal.skipped) == (1, 1, 2)
    monkeypatch.setattr(os, "write", real_write)
    now[0] = 1.5
    journal.append(make_row(4))
    assert (journal.appended, journal.errors) == (2, 1)
    assert len(segments(tmp_path)) == 2  # the failed segment was closed, a new one opened
    assert [r.request_id for r in read_journal(tmp_path).rows] == ["req-00000001", "req-00000004"]


def test_a_short_write_closes_the_segment_so_its_torn_line_stays_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = UsageJournal(tmp_path, retry_after=0.0)
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, data[:10]))
    journal.append(make_row(1))
    monkeypatch.setattr(os, "write", real_write)
    journal.append(make_row(2))
    assert (journal.appended, journal.errors) == (1, 1)
    found = read_journal(tmp_path)
    assert ([r.request_id for r in found.rows], found.torn) == (["req-00000002"], 1)


def test_a_journal_that_cannot_open_a_segment_counts_and_goes_on(tmp_path: Path) -> None:
    journal = UsageJournal(tmp_path / "missing", retry_after=0.0)
    for n in range(3):
        journal.append(make_row(n))
    assert (journal.appended, journal.errors, journal.skipped) == (0, 3, 3)
    (tmp_path / "missing").mkdir()
    journal.append(make_row(4))
    assert journal.appended == 1


def test_the_journal_stops_growing_at_max_bytes(tmp_path: Path) -> None:
    journal = UsageJournal(tmp_path, segment_bytes=2 * LINE, max_bytes=5 * LINE)
    for n in range(8):
        journal.append(make_row(n))
    assert (journal.appended, journal.skipped, journal.errors) == (5, 3, 0)
    journal.committed(8)  # the store caught up: room again
    journal.append(make_row(9))
    assert journal.appended == 6
    assert journal.size <= 5 * LINE


class StuckWriter(ListWriter):
    """Writes its first ``good`` batches, then fails every later one."""

    def __init__(self, good: int) -> None:
        super().__init__()
        self.good = good
        self.wrote = asyncio.Event()  # set with the last good batch

    async def write_usage(self, rows: Sequence[UsageRow]) -> None:
        if len(self.batches) >= self.good:
            raise OSError("database is locked")
        await super().write_usage(rows)
        if len(self.batches) == self.good:
            self.wrote.set()  # the recorder counts the batch before this task yields


def test_the_recorder_journals_each_row_and_keeps_what_it_could_not_write(
    tmp_path: Path,
) -> None:
    async def main() -> UsageRecorder:
        journal = UsageJournal(tmp_path, segment_bytes=4 * LINE)
        writer = StuckWriter(good=1)
        recorder = UsageRecorder(
            writer, batch_size=4, flush_interval=0.0, retry_backoff=0.001,
            journal=journal,
        )  # fmt: skip
        await recorder.start()
        for n in range(4):
            recorder.submit(make_row(n))
        await writer.wrote.wait()
        assert recorder.written == 4
        assert segments(tmp_path) == []  # its one segment was full and committed
        for n in range(4, 10):
            recorder.submit(make_row(n))
        await recorder.stop(timeout=0.05)
        return recorder

    recorder = asyncio.run(main())
    assert recorder.lost == 6
    found = read_journal(tmp_path)
    assert [r.request_id for r in found.rows] == [f"req-{n:08d}" for n in range(4, 10)]


def test_a_clean_stop_leaves_no_segment(tmp_path: Path) -> None:
    async def main() -> None:
        recorder = UsageRecorder(ListWriter(), journal=UsageJournal(tmp_path))
        await recorder.start()
        for n in range(10):
            recorder.submit(make_row(n))
        await recorder.stop()

    asyncio.run(main())
    assert segments(tmp_path) == []


def test_rows_keep_their_gateway_and_an_older_journals_rows_still_decode(tmp_path: Path) -> None:
    journal = UsageJournal(tmp_path)
    journal.append(msgspec.structs.replace(make_row(1), gateway="gw-a"))
    journal.close(all_committed=False)
    # A segment written by a gw from before rows named their gateway: no such field.
    older = msgspec.json.encode(make_row(2))
    assert b"gateway" in older  # (the current encoder writes it, as null)
    fields = msgspec.json.decode(older)
    del fields["gateway"]
    (tmp_path / "usage-0-000000.jsonl").write_bytes(msgspec.json.encode(fields) + b"\n")
    found = read_journal(tmp_path)
    assert {row.request_id: row.gateway for row in found.rows} == {
        "req-00000002": None,
        "req-00000001": "gw-a",
    }
    assert found.torn == 0

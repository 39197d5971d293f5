"""UsageJournal: each usage row handed to the kernel before its answer's last bytes, so
that a killed gw loses none.

Strategy: the ledger's rows reach SQLite in batches off the hot path (gw/telemetry/
usage.py); a process killed (kill -9, a crash, the OOM killer) between a request's end and
the next batch's commit would lose the rows of answers its clients already hold. The
journal closes that window for a few microseconds, not a commit: ``append`` encodes the
row as one JSON line and writes it with one ``os.write`` to an ``O_APPEND`` file. What the
kernel holds outlives the process. It does not outlive a power cut or a kernel crash
before the page cache reaches the disk: that would take an fsync per request.

The recorder appends each row as it is submitted, and the gateway submits a request's row
(gw/execution/gateway.py ``_record``) before the answer's last bytes go out: a whole
answer's body is encoded after it, and a stream's closing frames (``[DONE]``,
``message_stop``, ``response.completed``, Gemini's last chunk: each encoder's ``done``)
are sent only after its event source has ended and recorded it.

Segments: rows go to ``usage-<run>-<n>.jsonl`` in ``<state-dir>/usage-journal``; a segment
is closed past ``segment_bytes`` and deleted once every row in it is in the database
(``committed``: the recorder writes rows in the order they were appended). A clean stop
with nothing left queued deletes them all, so what a start finds is what the last run did
not commit (``read_journal``; gw/startup/usage_recovery.py puts it back).

Bounds and failures never touch a request: the live segments hold at most ``max_bytes``;
past it a row is not journaled (``skipped``) and reaches the database through the queue
alone, as before the journal. A failed write or open (disk full, I/O error, a directory
gone) is counted in ``errors`` and logged by error type; the segment is closed (a short
write leaves a torn last line, which ``read_journal`` skips) and a new one is tried for a
later row, at most once per ``retry_after`` seconds.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Final, NamedTuple

import msgspec

from gw.ports import UsageRow
from gw.telemetry.throttled_log import ThrottledLog

JOURNAL_DIR: Final = "usage-journal"
SEGMENT_GLOB: Final = "usage-*.jsonl"
logger = logging.getLogger("gw.telemetry")
_ENCODER: Final = msgspec.json.Encoder()
_DECODER: Final = msgspec.json.Decoder(UsageRow)
_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)


class _Segment(NamedTuple):
    path: Path
    size: int
    end: int  # rows appended (journaled or not) when it was closed: its rows are before


class UsageJournal:
    """Appends rows to segment files in ``directory``; see the module docstring.

    Counters: ``appended`` (rows journaled), ``skipped`` (not journaled: past
    ``max_bytes``, or while a failed segment waits for ``retry_after``), ``errors``
    (failed writes and opens).
    """

    def __init__(
        self,
        directory: Path,
        *,
        segment_bytes: int = 1 << 20,
        max_bytes: int = 64 << 20,
        retry_after: float = 1.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.directory = directory
        self._segment_bytes = segment_bytes
        self._max_bytes = max_bytes
        self._retry_after = retry_after
        self._monotonic = monotonic
        self._run = f"{time.time_ns():x}"
        self._next_name = 0
        self._fd = -1
        self._path: Path | None = None
        self._size = 0
        self._closed: deque[_Segment] = deque()  # older segments, not yet all committed
        self._closed_bytes = 0
        self._rows = 0  # rows offered to ``append``, journaled or not
        self._retry_at = 0.0
        self._log = ThrottledLog(logger)
        self.appended = 0
        self.skipped = 0
        self.errors = 0
        self._full = False

    @property
    def size(self) -> int:
        """Bytes in this run's live segments."""
        return self._closed_bytes + self._size

    @property
    def full(self) -> bool:
        """A row was turned away for room and no segment has been freed since: new rows
        are not journaled (the usage spool's durable bound, gw/telemetry/usage.py)."""
        return self._full

    def append(self, row: UsageRow) -> None:
        """Journal ``row`` with one ``os.write``; never raises, never blocks on a lock."""
        self._rows += 1
        line = _ENCODER.encode(row) + b"\n"
        if self.size + len(line) > self._max_bytes:
            self.skipped += 1
            self._full = True
            self._log.warning(
                "usage journal full (%d bytes): rows rely on the queue alone until the"
                " database catches up",
                self.size,
                kind="full",
            )
            return
        if self._fd < 0 and not self._open():
            self.skipped += 1
            return
        try:
            written = os.write(self._fd, line)
        except OSError as exc:
            self._failed(exc)
            return
        self._size += written
        if written < len(line):  # a short write: the disk filled up mid-line
            self._failed(OSError(errno.ENOSPC, "short write"))
            return
        self.appended += 1
        if self._size >= self._segment_bytes:
            self._seal()

    def committed(self, rows: int) -> None:
        """The first ``rows`` rows offered to ``append`` are in the database: delete the
        closed segments that hold only those."""
        while self._closed and self._closed[0].end <= rows:
            segment = self._closed.popleft()
            self._closed_bytes -= segment.size
            self._full = False
            _remove(segment.path)

    def close(self, *, all_committed: bool) -> None:
        """Close the open segment; delete every segment when ``all_committed``, else leave
        them for the next start to recover."""
        self._seal()
        if all_committed:
            self.committed(self._rows)

    def _open(self) -> bool:
        if self._monotonic() < self._retry_at:
            return False
        path = self.directory / f"usage-{self._run}-{self._next_name:06d}.jsonl"
        self._next_name += 1
        try:
            self._fd = os.open(path, _FLAGS, 0o600)
        except OSError as exc:
            self.errors += 1
            self._retry_at = self._monotonic() + self._retry_after
            self._log.log(
                logging.ERROR,
                "usage journal: cannot open a segment: %s",
                os_error(exc),
                kind="open",
            )
            return False
        self._path, self._size = path, 0
        return True

    def _failed(self, exc: OSError) -> None:
        self.errors += 1
        self.skipped += 1
        self._retry_at = self._monotonic() + self._retry_after
        self._log.log(
            logging.ERROR,
            "usage journal write failed: %s; rows reach the database through the queue alone",
            os_error(exc),
            kind="write",
        )
        self._seal()

    def _seal(self) -> None:
        """Close the open segment; it is deleted once its rows are committed."""
        if self._fd < 0 or self._path is None:
            return
        with contextlib.suppress(OSError):
            os.close(self._fd)
        self._closed.append(_Segment(self._path, self._size, self._rows))
        self._closed_bytes += self._size
        self._fd, self._path, self._size = -1, None, 0


class JournalContents(NamedTuple):
    """What a start found: the rows, the lines it could not read, and the files."""

    rows: list[UsageRow]
    torn: int  # lines cut short (a write cut by the kill) or unreadable: skipped
    segments: list[Path]


def read_journal(directory: Path) -> JournalContents:
    """Every row in ``directory``'s segments, oldest segment first. A line that does not
    decode (the torn end of a write the kill cut: its answer was never finished) is
    counted and skipped. Blocking: call it in a thread."""
    segments = sorted(directory.glob(SEGMENT_GLOB))
    rows: list[UsageRow] = []
    torn = 0
    for path in segments:
        for line in path.read_bytes().split(b"\n"):
            if not line:
                continue
            try:
                rows.append(_DECODER.decode(line))
            except msgspec.DecodeError:
                torn += 1
    return JournalContents(rows, torn, segments)


def os_error(exc: OSError) -> str:
    """``OSError (ENOSPC)``: the type and errno name, never a message or a path."""
    name = errno.errorcode.get(exc.errno or 0)
    return f"{type(exc).__name__} ({name})" if name else type(exc).__name__


def _remove(path: Path) -> None:
    # One left behind is read again at the next start, where its rows are known already.
    with contextlib.suppress(OSError):
        path.unlink()


class JournalRecovery(msgspec.Struct, frozen=True, kw_only=True):
    """What this start put back from the journal a killed run left
    (gw/startup/usage_recovery.py)."""

    rows: int = 0  # rows the ledger lacked, now in it marked recovered
    without_trace: int = 0  # ... of which no trace was written (lost with the process)
    torn_lines: int = 0  # lines skipped: cut short by the kill, or unreadable
    error: str | None = None  # why the journal could not be put back (kept for the next start)


def journal_report(journal: UsageJournal, recovery: JournalRecovery) -> dict[str, object]:
    """``usage_journal`` in ``gw status --json`` (gw/server/admin/status.py documents it)."""
    return {
        "path": str(journal.directory),
        "bytes": journal.size,
        "appended": journal.appended,
        "skipped": journal.skipped,
        "errors": journal.errors,
        "recovered_at_start": msgspec.to_builtins(recovery),
    }

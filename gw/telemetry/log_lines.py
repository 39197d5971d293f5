"""gw's own log lines (``logging.getLogger("gw...")``) in the request log's format.

``gw serve`` installs one handler (on the root logger: gw's records from INFO, any other
library's from WARNING, uvicorn's included): JSON objects (``time``, ``level``,
``event: "log"``, ``logger``, ``message``; ``exception`` with a traceback) when stderr is
not a TTY, Rich lines when it is, as ``telemetry.request_log`` resolves (``off`` turns off
request lines only: warnings are still written, in the ``auto`` format). Log messages name
things (request ids, fields, error types), never content (invariant 9).

Strategy: records are logged on the event loop, and stderr may block without end (a
terminal paused with Ctrl-S, a paused pager, a blocking log driver). So the handler only
puts each record on a bounded queue, dropping and counting when it is full; one daemon
thread of its own writes them (a note says how many were dropped). The thread never takes
a ``logging`` handler lock while it writes: ``logging.shutdown`` at exit takes those, and
would wait forever for a write stuck on a blocked stream. Stopping waits a bounded time.
"""

from __future__ import annotations

import copy
import logging
import queue
import threading
import time
from collections.abc import Callable
from logging.handlers import QueueHandler
from typing import Final, TextIO

import msgspec

from gw.config.schema import RequestLogFormat
from gw.telemetry.explain import iso_utc
from gw.telemetry.printable import printable
from gw.telemetry.request_log import resolve_format

QUEUE_MAXSIZE: Final = 10_000
STOP_TIMEOUT_S: Final = 2.0
MESSAGE_MAX_CHARS: Final = 4000
WriteRecord = Callable[[logging.LogRecord], None]


class LogLine(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    time: str
    level: str
    event: str
    logger: str
    message: str
    exception: str | None = None


class JsonLogFormatter(logging.Formatter):
    """One JSON object per record, on one line (a traceback is a field, not more lines)."""

    def __init__(self) -> None:
        super().__init__()
        self._encoder = msgspec.json.Encoder()

    def format(self, record: logging.LogRecord) -> str:
        exception = record.exc_text
        if record.exc_info:
            exception = self.formatException(record.exc_info)
        line = LogLine(
            time=iso_utc(record.created),
            level=record.levelname.lower(),
            event="log",
            logger=record.name,
            message=record.getMessage(),
            exception=exception or None,
        )
        return self._encoder.encode(line).decode()


class DroppingQueueHandler(QueueHandler):
    """Puts records on a bounded queue and never blocks: when it is full the record is
    dropped and counted in ``dropped``."""

    def __init__(self, records: queue.Queue[logging.LogRecord | None]) -> None:
        super().__init__(records)
        self.dropped = 0  # updated under the handler's lock (Handler.handle holds it)

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        # Fixed now, for the writer thread: the message with its arguments merged, and a
        # traceback as text (a live exc_info holds frames that keep changing).
        record = copy.copy(record)
        record.msg = record.getMessage()
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        record.exc_info = None
        return record

    def enqueue(self, record: logging.LogRecord) -> None:
        try:
            self.queue.put_nowait(record)
        except queue.Full:
            self.dropped += 1

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 -- logging's name
        # logging's default prints a traceback to stderr: the stream that may be blocked.
        self.dropped += 1


class LogWriter:
    """One daemon thread writing queued records with ``write``; before the next record
    after some were dropped, a warning says how many."""

    def __init__(
        self,
        records: queue.Queue[logging.LogRecord | None],
        write: WriteRecord,
        dropped: Callable[[], int],
    ) -> None:
        self._records = records
        self._write = write
        self._dropped = dropped
        self._reported = 0
        self._thread = threading.Thread(target=self._serve, name="gw-log-writer", daemon=True)
        self.errors = 0  # records the stream refused (a broken pipe): nowhere to log them

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float) -> bool:
        """Write what is queued, for at most ``timeout`` seconds; False when the thread is
        still busy then (stuck on a blocked stream: it is left behind, a daemon)."""
        deadline = time.monotonic() + timeout
        try:
            self._records.put(None, timeout=timeout)
        except queue.Full:
            return False
        self._thread.join(max(0.0, deadline - time.monotonic()))
        return not self._thread.is_alive()

    def _serve(self) -> None:
        while (record := self._records.get()) is not None:
            dropped = self._dropped()
            if dropped > self._reported:
                self._emit(_dropped_note(dropped - self._reported))
                self._reported = dropped
            self._emit(record)

    def _emit(self, record: logging.LogRecord) -> None:
        try:
            self._write(record)
        except Exception:  # noqa: BLE001 -- a stream that refuses writes has no one to tell: counted
            self.errors += 1


def _dropped_note(count: int) -> logging.LogRecord:
    return logging.makeLogRecord(
        {
            "name": "gw.telemetry",
            "levelno": logging.WARNING,
            "levelname": "WARNING",
            "msg": f"{count} log lines were dropped: stderr was not keeping up",
        }
    )


def log_writer(setting: RequestLogFormat, stream: TextIO) -> WriteRecord:
    """What writes one record for ``setting`` on ``stream``: JSON lines, or Rich on a
    terminal. What it returns runs in the writer thread only, and takes no ``logging``
    lock."""
    line_format = resolve_format("auto" if setting == "off" else setting, stream)
    if line_format == "rich":
        # rich (~30 ms to import) only when the log goes to a terminal.
        from rich.console import Console  # noqa: PLC0415
        from rich.logging import RichHandler  # noqa: PLC0415

        console = Console(file=stream, highlight=False, soft_wrap=True)
        handler = RichHandler(console=console, show_path=False, markup=False, rich_tracebacks=False)

        def write_rich(record: logging.LogRecord) -> None:
            # A message may quote client text: it must not drive the terminal.
            record.msg = printable(record.getMessage(), MESSAGE_MAX_CHARS)
            record.args = None
            handler.emit(record)  # emit, not handle: handle takes the handler's lock

        return write_rich
    formatter = JsonLogFormatter()

    def write_json(record: logging.LogRecord) -> None:
        stream.write(formatter.format(record) + "\n")
        stream.flush()

    return write_json


def install_log_handler(
    setting: RequestLogFormat,
    stream: TextIO,
    *,
    logger: str = "gw",
    maxsize: int = QUEUE_MAXSIZE,
    stop_timeout: float = STOP_TIMEOUT_S,
) -> Callable[[], None]:
    """Send ``logger``'s records (INFO and up) and every other library's warnings (uvicorn's
    "Exception in ASGI application" with its traceback, asyncio's) to ``stream`` in
    ``setting``'s format, by way of a bounded queue and a writer thread: no line on stderr
    is in another format. Returns what undoes it, for when serving ends (it waits at most
    ``stop_timeout`` seconds for the queued lines to be written)."""
    records: queue.Queue[logging.LogRecord | None] = queue.Queue(maxsize)
    handler = DroppingQueueHandler(records)
    writer = LogWriter(records, log_writer(setting, stream), lambda: handler.dropped)
    writer.start()
    # On the root logger, so that records of any logger reach it; gw's own from INFO,
    # others' from WARNING (httpx, say, logs a line per request at INFO).
    root, target = logging.getLogger(), logging.getLogger(logger)
    levels = root.level, target.level
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    target.setLevel(logging.INFO)

    def uninstall() -> None:
        root.removeHandler(handler)
        root.setLevel(levels[0])
        target.setLevel(levels[1])
        handler.close()
        writer.stop(stop_timeout)

    return uninstall

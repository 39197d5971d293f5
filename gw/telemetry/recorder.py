"""TraceRecorder: takes finished traces on the hot path, writes them in batches off it.

Strategy: ``submit`` only does ``put_nowait`` on a bounded queue, so a request never
waits for the disk; when the queue is full the trace is dropped and counted (invariant 8:
traces are lossy under pressure, every loss is counted). One background task waits on the
queue (no polling while idle); when a trace arrives it lingers up to ``flush_interval``
for more, up to ``batch_size``, then writes them in one call. A failed write is counted,
logged without any trace content, and its batch dropped: telemetry never fails a request.

At quiescence ``submitted == written + dropped``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Final, Protocol

from gw.record import TraceRecord

logger = logging.getLogger("gw.telemetry")

ERROR_LOG_INTERVAL_S: Final = 60.0
"""After the first failed write, further failures are logged at most this often."""


class TraceWriter(Protocol):
    """Where batches go; ``SqliteStore`` is one."""

    async def write_traces(self, traces: Sequence[TraceRecord]) -> None: ...


class TraceRecorder:
    """A ``TraceSink`` that queues traces and writes them in batches with a ``TraceWriter``.

    Counters (plain ints, read them for metrics): ``submitted`` (every ``submit`` call),
    ``written``, ``dropped`` (queue full, failed write, submitted after ``stop``, or left
    when the stop timeout ran out) and ``write_errors`` (failed write calls).
    """

    def __init__(
        self,
        writer: TraceWriter,
        *,
        maxsize: int = 10_000,
        batch_size: int = 2048,
        flush_interval: float = 0.05,
    ) -> None:
        if maxsize < 1 or batch_size < 1:
            raise ValueError("maxsize and batch_size must be >= 1")
        self._writer = writer
        self._queue: asyncio.Queue[TraceRecord] = asyncio.Queue(maxsize)
        self._batch_size = batch_size
        self._flush_interval = flush_interval
        self._task: asyncio.Task[None] | None = None
        self._idle = False  # the drainer waits for a first trace with nothing in hand
        self._stopping = False
        self._closed = False
        self._last_error_log: float | None = None
        self.submitted = 0
        self.written = 0
        self.dropped = 0
        self.write_errors = 0

    @property
    def queued(self) -> int:
        return self._queue.qsize()

    def submit(self, trace: TraceRecord) -> None:
        """Queue a trace; never blocks, never raises. Drops (and counts) when full."""
        self.submitted += 1
        if self._closed:
            self.dropped += 1
            return
        try:
            self._queue.put_nowait(trace)
        except asyncio.QueueFull:
            self.dropped += 1

    async def start(self) -> None:
        """Start the background writer (call from the event loop that will submit)."""
        if self._task is None and not self._closed:
            self._task = asyncio.create_task(self._run(), name="gw-trace-recorder")

    async def stop(self, timeout: float = 5.0) -> None:  # noqa: ASYNC109 -- on timeout unwritten traces are counted as dropped, which a caller's asyncio.timeout could not do
        """Write everything queued (for at most ``timeout`` seconds), then stop.

        Traces still queued when the time runs out, and those submitted afterwards, are
        counted as dropped.
        """
        if self._closed:
            return
        self._stopping = True
        if self._task is None:
            # Never started: drain with a writer task now, so stop() always flushes.
            self._task = asyncio.create_task(self._run(), name="gw-trace-recorder")
        elif self._idle and self._queue.empty():
            self._task.cancel()  # parked on an empty queue: nothing to flush
        task = self._task
        _done, pending = await asyncio.wait({task}, timeout=timeout)
        if pending:
            task.cancel()
            await asyncio.wait({task})
        self._closed = True
        self._task = None
        left = self._queue.qsize()
        if left:
            self.dropped += left
            logger.warning("trace recorder stopped with %d traces unwritten", left)
            while not self._queue.empty():
                self._queue.get_nowait()

    async def _run(self) -> None:
        while not (self._stopping and self._queue.empty()):
            batch = await self._collect()
            await self._write(batch)

    async def _collect(self) -> list[TraceRecord]:
        """Wait for one trace, then gather more until the batch is full or the linger ends."""
        self._idle = True
        try:
            batch = [await self._queue.get()]
        finally:
            self._idle = False
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._flush_interval
        while len(batch) < self._batch_size:
            while not self._queue.empty() and len(batch) < self._batch_size:
                batch.append(self._queue.get_nowait())
            remaining = deadline - loop.time()
            if len(batch) >= self._batch_size or remaining <= 0 or self._stopping:
                break
            try:
                async with asyncio.timeout(remaining):
                    batch.append(await self._queue.get())
            except TimeoutError:
                break
        return batch

    async def _write(self, batch: list[TraceRecord]) -> None:
        try:
            await self._writer.write_traces(batch)
        except asyncio.CancelledError:
            self.dropped += len(batch)
            raise
        except Exception as exc:  # noqa: BLE001 -- telemetry must never fail a request: any writer error is counted and the batch dropped
            self.write_errors += 1
            self.dropped += len(batch)
            self._log_write_error(exc, len(batch))
        else:
            self.written += len(batch)

    def _log_write_error(self, exc: Exception, count: int) -> None:
        # Only the error's type (and SQLite's error name) are logged: an exception message
        # could quote trace content, which must never reach a log (invariant 9).
        now = asyncio.get_running_loop().time()
        if self._last_error_log is not None and now - self._last_error_log < ERROR_LOG_INTERVAL_S:
            return
        self._last_error_log = now
        kind = type(exc).__name__
        sqlite_name = getattr(exc, "sqlite_errorname", None)
        if isinstance(sqlite_name, str):
            kind = f"{kind} ({sqlite_name})"
        logger.warning(
            "trace write failed: %s; dropped %d traces (write errors so far: %d, dropped: %d)",
            kind,
            count,
            self.write_errors,
            self.dropped,
        )

"""TraceRecorder: takes finished traces on the hot path, writes them to the store in batches
off it.

A ``LossyQueue`` (gw/telemetry/lossy_queue.py) whose consumer is the store's
``write_traces``: a request never waits for the disk; under pressure traces are dropped and
counted (invariant 8: traces are lossy, every loss is counted). A failed write is counted,
logged by error type only, and its batch dropped. At quiescence
``submitted == written + dropped``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from gw.record import TraceRecord
from gw.telemetry.lossy_queue import LossyQueue, QueueCounters


class TraceWriter(Protocol):
    """Where batches go; ``SqliteStore`` is one."""

    async def write_traces(self, traces: Sequence[TraceRecord]) -> None: ...


class LossCounter(Protocol):
    """Counts the traces dropped and makes the count durable after each batch written
    (gw/startup/trace_losses.py); ``write`` never raises."""

    def count(self, traces: Sequence[TraceRecord]) -> None: ...

    async def write(self) -> None: ...


class TraceRecorder(QueueCounters):
    """A ``TraceSink`` that queues traces and writes them in batches with a ``TraceWriter``.

    Counters (read them for metrics): ``submitted`` (every ``submit`` call), ``written``,
    ``dropped`` (queue full, failed write, submitted after ``stop``, or left when the stop
    timeout ran out) and ``write_errors`` (failed write calls); ``queued`` is what waits.
    ``losses``, when given, sees each trace dropped and is written after each batch.
    """

    def __init__(
        self,
        writer: TraceWriter,
        *,
        maxsize: int = 10_000,
        batch_size: int = 2048,
        flush_interval: float = 0.05,
        losses: LossCounter | None = None,
    ) -> None:
        self._writer = writer
        self._losses = losses
        self.queue: LossyQueue[TraceRecord] = LossyQueue(
            self._write,
            name="trace recorder",
            maxsize=maxsize,
            batch_size=batch_size,
            linger=flush_interval,
            on_drop=None if losses is None else losses.count,
        )

    async def _write(self, traces: Sequence[TraceRecord]) -> None:
        await self._writer.write_traces(traces)
        if self._losses is not None:
            await self._losses.write()

    @property
    def queued(self) -> int:  # the usage recorder's name for it too (hub.queues)
        return self.queue.queue_depth

    def submit(self, trace: TraceRecord) -> None:
        """Queue a trace; never blocks, never raises. Drops (and counts) when full."""
        self.queue.submit(trace)

    async def start(self) -> None:
        """Start the background writer (call from the event loop that will submit)."""
        await self.queue.start()

    async def stop(self, timeout: float = 5.0) -> None:  # noqa: ASYNC109 -- on timeout unwritten traces are counted as dropped, which a caller's asyncio.timeout could not do
        """Write everything queued (for at most ``timeout`` seconds), then stop."""
        await self.queue.stop(timeout)

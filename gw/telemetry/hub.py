"""TelemetryHub: everything that consumes finished requests, started and stopped as one.

The trace store's queue and the usage ledger always; metrics, request logs and OpenTelemetry
when configured. Each is a ``TraceSink`` fed through one ``TraceFanout``; each may add a
start hook (run at server start) and a stop hook (run at shutdown, before the trace and
usage queues are flushed and the store closes). A consumer with a queue of its own names
it with ``report_queue``, so ``/metrics`` shows its depth and drops."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import NamedTuple, Protocol

from gw.ports import TraceSink
from gw.telemetry.fanout import TraceFanout
from gw.telemetry.recorder import TraceRecorder, TraceWriter
from gw.telemetry.usage import UsageRecorder, UsageWriter

Hook = Callable[[], Awaitable[None]]


class QueueStats(NamedTuple):
    depth: int  # items waiting now
    dropped: int  # items let go since start (a durable queue: the ones it lost)


QueueReporter = Callable[[], QueueStats]
logger = logging.getLogger("gw.telemetry")


class TelemetryStore(TraceWriter, UsageWriter, Protocol):
    """Where traces and usage rows are written; ``SqliteStore`` is one."""


class TelemetryHub:
    def __init__(self, store: TelemetryStore) -> None:
        self.recorder = TraceRecorder(store)
        self.usage = UsageRecorder(store)  # the usage ledger: durable, flushed in stop()
        self.consumers: list[TraceSink] = [self.recorder]
        self.starts: list[Hook] = [self.recorder.start, self.usage.start]
        self.stops: list[Hook] = []
        # Named queues, read at scrape time (gw_telemetry_queue_depth{queue}, ...).
        self.queues: dict[str, QueueReporter] = {
            "traces": lambda: QueueStats(self.recorder.queued, self.recorder.dropped),
            "usage": lambda: QueueStats(self.usage.queued, self.usage.lost),
        }

    def add(
        self, consumer: TraceSink, *, start: Hook | None = None, stop: Hook | None = None
    ) -> None:
        """Feed ``consumer`` every finished trace from now on."""
        self.consumers.append(consumer)
        if start is not None:
            self.starts.append(start)
        if stop is not None:
            self.stops.append(stop)

    def report_queue(self, name: str, reporter: QueueReporter) -> None:
        """Expose a consumer's queue as ``name`` (a fixed word: it becomes a label value)."""
        self.queues[name] = reporter

    def sink(self) -> TraceSink:
        """One sink for the request path; it sees consumers added later too."""
        return TraceFanout(self.consumers)

    async def stop(self) -> None:
        for stop in self.stops:
            await stop()
        await self.recorder.stop()
        if self.recorder.dropped:
            logger.warning(
                "%d traces were dropped (queue full or write errors)", self.recorder.dropped
            )
        await self.usage.stop()  # every queued usage row is written before the store closes

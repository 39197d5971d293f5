"""TelemetryHub: everything that consumes finished requests, started and stopped as one.

The trace store's queue and the usage ledger always; metrics, request logs and OpenTelemetry
when configured. Each is a ``TraceSink`` fed through one ``TraceFanout``; each may add a
start hook (run at server start) and a stop hook (run at shutdown, before the store
closes). A consumer with a queue of its own names it with ``report_queue``, so
``/metrics`` shows its depth and drops.

Strategy for ``stop``: the usage ledger is the one queue that must not be lost, so nothing
may stand before it. Every stop runs at once, each with its errors caught and logged (by
type only); a stop hook gets at most ``stop_timeout`` seconds, the usage ledger its own
bounded flush. So the wait is bounded and usage is flushed whatever the other hooks do."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import NamedTuple, Protocol

from gw.ports import TraceSink
from gw.telemetry.fanout import TraceFanout
from gw.telemetry.recorder import LossCounter, TraceRecorder, TraceWriter
from gw.telemetry.throttled_log import error_kind
from gw.telemetry.usage import UsageRecorder, UsageWriter
from gw.telemetry.usage_journal import JournalRecovery, UsageJournal, journal_report

Hook = Callable[[], Awaitable[None]]


class QueueStats(NamedTuple):
    depth: int  # items waiting now
    dropped: int  # items let go since start (a durable queue: the ones it lost)


QueueReporter = Callable[[], QueueStats]
logger = logging.getLogger("gw.telemetry")


class TelemetryStore(TraceWriter, UsageWriter, Protocol):
    """Where traces and usage rows are written; ``SqliteStore`` is one."""


class RunLosses(LossCounter, Protocol):
    """The traces this run and the last one lost (gw/startup/trace_losses.py)."""

    async def start(self) -> None: ...

    async def stopped(self) -> None: ...

    def report(self) -> dict[str, object]: ...


class TelemetryHub:
    def __init__(
        self,
        store: TelemetryStore,
        *,
        stop_timeout: float = 10.0,
        journal: UsageJournal | None = None,
        recovery: JournalRecovery | None = None,
        losses: RunLosses | None = None,
    ) -> None:
        self._stop_timeout = stop_timeout
        self.losses = losses
        self.recorder = TraceRecorder(store, losses=losses)
        # The usage ledger: durable (journaled when ``journal`` is given), flushed in stop().
        self.usage = UsageRecorder(store, journal=journal)
        self.recovery = recovery or JournalRecovery()  # what this start put back
        self.consumers: list[TraceSink] = [self.recorder]
        self.starts: list[Hook] = [self.recorder.start, self.usage.start]
        if losses is not None:
            self.starts.append(losses.start)
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

    def journal_report(self) -> dict[str, object] | None:
        """The usage journal's counters and what this start recovered; None without one."""
        journal = self.usage.journal
        if journal is None:
            return None
        return journal_report(journal, self.recovery) | {"spool": self.usage.spool_report()}

    def losses_report(self) -> dict[str, object] | None:
        """The traces this run and the last one lost; None when they are not kept."""
        return None if self.losses is None else self.losses.report()

    def sink(self) -> TraceSink:
        """One sink for the request path; it sees consumers added later too."""
        return TraceFanout(self.consumers)

    async def stop(self) -> None:
        """Flush the usage ledger and the trace queue and run every stop hook, all at once
        (see the module docstring); never raises."""
        await asyncio.gather(
            _stop_quietly("the usage ledger", self.usage.stop, None),  # bounded by its own timeout
            _stop_quietly("the trace recorder", self.recorder.stop, None),
            *(_stop_quietly(_hook_name(stop), stop, self._stop_timeout) for stop in self.stops),
        )
        if self.recorder.dropped:
            logger.warning(
                "%d traces were dropped (queue full or write errors)", self.recorder.dropped
            )
        if self.losses is not None:  # after the trace queue: its last drops are counted
            await _stop_quietly("the trace loss count", self.losses.stopped, self._stop_timeout)


async def _stop_quietly(name: str, stop: Hook, timeout: float | None) -> None:  # noqa: ASYNC109 -- a hook is given up on, not cancelled by its caller: one stuck hook must not keep the others (or usage) waiting
    try:
        async with asyncio.timeout(timeout):
            await stop()
    except TimeoutError:
        logger.warning("%s did not stop within %.1f s", name, timeout or 0.0)
    except Exception as exc:  # noqa: BLE001 -- one failing stop must not skip the others; only its type is logged (invariant 9)
        logger.warning("%s failed to stop: %s", name, error_kind(exc))


def _hook_name(hook: Hook) -> str:
    return getattr(hook, "__qualname__", None) or type(hook).__name__

"""TraceFanout: one finished trace handed to every consumer (store, metrics, logs, OTel).

Each consumer's ``submit`` must be cheap and never raise: it runs on the request path. A
consumer that does slow work queues it (bounded, dropping and counting when full). One that
raises anyway is skipped for that trace; it is logged by error type only (the message could
quote trace content, invariant 9) and at most once a minute per consumer, as it would fail
on every request."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from gw.ports import TraceSink
from gw.record import TraceRecord
from gw.telemetry.throttled_log import ThrottledLog, error_kind

logger = logging.getLogger("gw.telemetry")


class TraceFanout:
    """A ``TraceSink`` that hands each trace to ``sinks`` in order; ``sinks`` is read on
    every trace, so a consumer appended to it later is fed too. ``failures`` counts the
    ``submit`` calls that raised."""

    def __init__(self, sinks: Sequence[TraceSink], *, log: ThrottledLog | None = None) -> None:
        self._sinks = sinks
        self._log = log or ThrottledLog(logger)
        self.failures = 0

    def submit(self, trace: TraceRecord) -> None:
        for sink in self._sinks:
            try:
                sink.submit(trace)
            except Exception as exc:  # noqa: BLE001 -- a broken consumer must not fail the request or the others
                self.failures += 1
                consumer = type(sink).__name__
                self._log.warning(
                    "trace consumer %s failed: %s (failures so far: %d)",
                    consumer,
                    error_kind(exc),
                    self.failures,
                    kind=consumer,
                )

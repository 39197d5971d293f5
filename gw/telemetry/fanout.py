"""TraceFanout: one finished trace handed to every consumer (store, metrics, logs, OTel).

Each consumer's ``submit`` must be cheap and never raise: it runs on the request path. A
consumer that does slow work queues it (bounded, dropping and counting when full)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from gw.ports import TraceSink
from gw.record import TraceRecord

logger = logging.getLogger("gw.telemetry")


class TraceFanout:
    """A ``TraceSink`` that hands each trace to ``sinks`` in order; ``sinks`` is read on
    every trace, so a consumer appended to it later is fed too."""

    def __init__(self, sinks: Sequence[TraceSink]) -> None:
        self._sinks = sinks

    def submit(self, trace: TraceRecord) -> None:
        for sink in self._sinks:
            try:
                sink.submit(trace)
            except Exception:  # a broken consumer must not fail the request or the others
                logger.exception("trace consumer %s failed", type(sink).__name__)

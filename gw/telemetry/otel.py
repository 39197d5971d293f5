"""OtelExporter: every finished request as OpenTelemetry spans over OTLP/HTTP, opt-in.

Strategy: ``submit`` runs on the request path, so it only queues the trace on a
``LossyQueue`` (gw/telemetry/lossy_queue.py), which drops and counts when full (invariant
8). Its task turns queued traces into spans after the fact, with the times the trace
recorded (gw/telemetry/otel_spans.py), yielding to the event loop after each small batch;
the SDK's batch processor exports them from its own thread. ``stop`` builds the spans still queued
and shuts the provider down (which exports what it holds), within a bounded time.

OpenTelemetry is imported only by ``load_otel``, which ``gw serve`` calls when
``telemetry.otlp.enabled`` is true: without the ``otel`` extra that fails with a message
saying how to install it, and a gw that does not export imports none of it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable
from typing import Final, Protocol

from gw.config.schema import OtlpConfig
from gw.record import TraceRecord
from gw.telemetry.lossy_queue import LossyQueue, QueueCounters
from gw.telemetry.otel_attributes import ServerAddress
from gw.telemetry.throttled_log import ThrottledLog, error_kind

logger = logging.getLogger("gw.telemetry")

# "gw" on PyPI is another project: the extra is installed from gw's own checkout or wheel.
INSTALL_HINT: Final = (
    "install gw with the otel extra, from its checkout: pipx install --force '.[otel]' "
    "(or pip install '.[otel]'); the gw zipapp does not bundle OpenTelemetry"
)


class OtelUnavailableError(Exception):
    """``telemetry.otlp.enabled`` is true but the OpenTelemetry packages are missing."""


class SpanEmitter(Protocol):
    """Builds the spans of one trace (``otel_spans.SpanWriter``)."""

    def emit(self, trace: TraceRecord) -> None: ...

    def shutdown(self) -> None: ...


class OtelExporter(QueueCounters):
    """A ``TraceSink`` that turns traces into spans off the request path.

    Counters (for metrics): ``submitted``, ``exported`` (traces turned into spans),
    ``dropped`` (queue full, submitted after ``stop``, or still queued when the stop timeout
    ran out) and ``errors`` (traces whose spans could not be built); ``queue_depth`` is the
    number of traces waiting. Spans the SDK fails to deliver to the collector are the
    SDK's to log.
    """

    def __init__(
        self, emitter: SpanEmitter, *, maxsize: int = 10_000, batch_size: int = 32
    ) -> None:
        # A batch is built without yielding to the loop (a few tens of µs a trace): small
        # batches keep requests from waiting behind a burst.
        self._emitter = emitter
        self.queue: LossyQueue[TraceRecord] = LossyQueue(
            self._emit_batch, name="OpenTelemetry exporter", maxsize=maxsize, batch_size=batch_size
        )
        self._errors_log = ThrottledLog(logger)
        self.exported = 0
        self.errors = 0

    def submit(self, trace: TraceRecord) -> None:
        """Queue a trace; never blocks, never raises. Drops (and counts) when full."""
        self.queue.submit(trace)

    async def start(self) -> None:
        """Start building spans (call from the event loop that will submit)."""
        await self.queue.start()

    async def stop(self, timeout: float = 5.0) -> None:  # noqa: ASYNC109 -- what is left when the time runs out is counted as dropped, which a caller's asyncio.timeout could not do
        """Build the spans of every queued trace and export them, for at most ``timeout``
        seconds; then shut the provider down. Later traces are dropped and counted."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        await self.queue.stop(timeout)
        if not await _run_in_thread(self._emitter.shutdown, max(0.0, deadline - loop.time())):
            logger.warning("OpenTelemetry export did not finish within %.1fs", timeout)

    async def _emit_batch(self, traces: list[TraceRecord]) -> None:
        # No await inside: a batch is built whole, so a cancelled stop never splits one
        # between ``exported`` and ``dropped``.
        for trace in traces:
            try:
                self._emitter.emit(trace)
            except Exception as exc:  # noqa: BLE001 -- telemetry never fails a request: the trace is counted and skipped
                self.errors += 1
                # The error's type only: its message could quote trace content (invariant 9).
                self._errors_log.warning(
                    "OpenTelemetry span building failed: %s (errors so far: %d)",
                    error_kind(exc),
                    self.errors,
                )
            else:
                self.exported += 1


def require_otel() -> None:
    """Raise ``OtelUnavailableError`` unless the ``otel`` extra can be imported."""
    try:
        # Here, not at the top: only a gw that exports needs the extra (the module docstring).
        import gw.telemetry.otel_spans  # noqa: F401, PLC0415
    except ImportError as exc:
        missing = f" (no module named {exc.name!r})" if exc.name else ""
        raise OtelUnavailableError(
            "telemetry.otlp.enabled is true, but the OpenTelemetry packages are not "
            f"installed{missing}: {INSTALL_HINT}"
        ) from None


def load_otel(
    config: OtlpConfig,
    *,
    headers: dict[str, str] | None = None,
    server_address: ServerAddress | None = None,
) -> OtelExporter:
    """The exporter ``telemetry.otlp`` asks for, sending to ``<endpoint>/v1/traces`` with
    ``headers``: ``config.headers`` with their ``env:``/``vault:`` references resolved
    (gw/startup/checks.py does it; none when omitted, never the unresolved references). Raises
    ``OtelUnavailableError`` when the ``otel`` extra is not installed."""
    require_otel()
    from gw.telemetry.otel_spans import SpanWriter, otlp_processor  # noqa: PLC0415 -- as above

    writer = SpanWriter(
        otlp_processor(config, headers or {}),
        service_name=config.service_name,
        server_address=server_address,
    )
    return OtelExporter(writer)


async def _run_in_thread(work: Callable[[], None], timeout: float) -> bool:  # noqa: ASYNC109 -- the wait is bounded but the work is not cancelled: it may finish after gw stops waiting
    """Run blocking ``work`` in a daemon thread; False when it is still running after
    ``timeout`` seconds (a daemon thread never holds the process's exit, unlike
    ``asyncio.to_thread``'s executor)."""
    future: concurrent.futures.Future[None] = concurrent.futures.Future()

    def target() -> None:
        try:
            work()
        except Exception as exc:  # noqa: BLE001 -- reported as a failed stop; only its type is logged (invariant 9)
            logger.warning("OpenTelemetry shutdown failed: %s", type(exc).__name__)
        finally:
            future.set_result(None)

    threading.Thread(target=target, name="gw-otel-shutdown", daemon=True).start()
    _done, pending = await asyncio.wait({asyncio.wrap_future(future)}, timeout=timeout)
    return not pending

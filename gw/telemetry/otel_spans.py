"""The OpenTelemetry SDK side of OTLP export: gw's own TracerProvider, and the spans of a
finished request, built after the fact from its ``TraceRecord`` with the recorded times.

Imported only when ``telemetry.otlp.enabled`` is true (gw/telemetry/otel.py loads it):
the ``otel`` extra may be missing, and a gw that does not export imports none of it.

Strategy: one SERVER span per request (``chat gpt-4o-mini``: operation and the model the
client asked for) and one CLIENT child span per upstream attempt, each started and ended
at the times the trace recorded. The provider is gw's, not the global one, so gw never
changes what other code in the process sees, and it is shut down by gw at exit (no
atexit hook of its own, which could hold the exit for the SDK's 30 s).
"""

from __future__ import annotations

from typing import Final

from opentelemetry import trace as trace_api
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from gw import __version__
from gw.config.schema import OtlpConfig
from gw.record import TraceRecord
from gw.telemetry.otel_attributes import (
    ServerAddress,
    attempt_attributes,
    operation_name,
    request_attributes,
    span_name,
)

EXPORT_TIMEOUT_S: Final = 5.0  # one export call to the collector
SPAN_QUEUE_SIZE: Final = 8192  # the batch processor's own buffer of finished spans


class SpanWriter:
    """Turns finished traces into spans on ``processor`` (a ``BatchSpanProcessor`` with
    the OTLP exporter in gw; tests pass one with an in-memory exporter)."""

    def __init__(
        self,
        processor: SpanProcessor,
        *,
        service_name: str,
        server_address: ServerAddress | None = None,
    ) -> None:
        resource = Resource.create({SERVICE_NAME: service_name, SERVICE_VERSION: __version__})
        self._provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        self._provider.add_span_processor(processor)
        self._tracer = self._provider.get_tracer("gw", __version__)
        self._address = server_address

    def emit(self, trace: TraceRecord) -> None:
        operation = operation_name(trace.endpoint)
        span = self._tracer.start_span(
            span_name(operation, trace.requested_model),
            context=Context(),  # a root span: never a child of whatever is current here
            kind=SpanKind.SERVER,
            attributes=request_attributes(trace),
            start_time=_ns(trace.time),
        )
        parent = trace_api.set_span_in_context(span)
        for attempt in trace.attempts:
            address = self._address(attempt.provider, attempt.account) if self._address else None
            child = self._tracer.start_span(
                span_name(operation, attempt.model),
                context=parent,
                kind=SpanKind.CLIENT,
                attributes=attempt_attributes(trace, attempt, address),
                start_time=_ns(attempt.started_at),
            )
            _end(child, attempt.error_code, attempt.started_at + attempt.latency_ms / 1000)
        _end(span, trace.error_code, trace.time + trace.latency_ms / 1000)

    def shutdown(self) -> None:
        """Export what is buffered, then stop (blocking: call it off the event loop)."""
        self._provider.shutdown()


def otlp_processor(config: OtlpConfig) -> SpanProcessor:
    """Batches of spans to ``<endpoint>/v1/traces`` over OTLP/HTTP (protobuf)."""
    if config.endpoint is None:  # refused at config load; kept for the type checker
        raise ValueError("telemetry.otlp.endpoint is required")
    exporter = OTLPSpanExporter(
        endpoint=f"{config.endpoint.rstrip('/')}/v1/traces",
        headers=dict(config.headers),
        timeout=EXPORT_TIMEOUT_S,
    )
    return BatchSpanProcessor(exporter, max_queue_size=SPAN_QUEUE_SIZE)


def _end(span: Span, error_code: str | None, end_s: float) -> None:
    if error_code is not None:
        # The stable code only: an error's message may quote the prompt (invariant 9).
        span.set_status(Status(StatusCode.ERROR, error_code))
    span.end(end_time=_ns(end_s))


def _ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)

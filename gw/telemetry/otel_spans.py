"""The OpenTelemetry SDK side of OTLP export: the finished spans of a request, built
directly from its ``TraceRecord`` with the recorded times, and the OTLP batch processor
that sends them.

Imported only when ``telemetry.otlp.enabled`` is true (gw/telemetry/otel.py loads it):
the ``otel`` extra may be missing, and a gw that does not export imports none of it.

Strategy: one SERVER span per request (``chat gpt-4o-mini``: operation and the model the
client asked for) and one CLIENT child span per upstream attempt. The request has
already ended, so nothing is started and ended through a tracer: each span is built as
the ``ReadableSpan`` the SDK would have produced at its end (ids, parent, times,
attributes, status, resource, scope) and handed to the processor's ``on_end``. A tracer's
span costs ~50 µs (contexts, locks, bounded attributes, span limits); this costs a few,
and it runs on the event loop. The sampler is still the SDK's (``OTEL_TRACES_SAMPLER``),
asked once per request: the attempts follow its decision, as a parent-based sampler
would. No TracerProvider is installed, so gw never changes what other code in the
process sees; the processor is shut down by gw at exit (no atexit hook, which could hold
the exit for the SDK's 30 s).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Final

from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import Decision, Sampler
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

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
SAMPLED: Final = TraceFlags(TraceFlags.SAMPLED)
UNSET: Final = Status(StatusCode.UNSET)

RandomBits = Callable[[int], int]
"""``random.getrandbits``'s shape: an int of that many random bits."""


class SpanWriter:
    """Turns finished traces into spans on ``processor`` (a ``BatchSpanProcessor`` with
    the OTLP exporter in gw; tests pass one with an in-memory exporter).

    ``sampler`` defaults to the SDK's (``OTEL_TRACES_SAMPLER``, else always on);
    ``random_bits`` makes trace and span ids (default: a ``random.Random`` of this
    writer's own, so a ``random.seed`` elsewhere cannot make two gws repeat ids)."""

    def __init__(
        self,
        processor: SpanProcessor,
        *,
        service_name: str,
        server_address: ServerAddress | None = None,
        sampler: Sampler | None = None,
        random_bits: RandomBits | None = None,
    ) -> None:
        self._processor = processor
        self._resource = Resource.create({SERVICE_NAME: service_name, SERVICE_VERSION: __version__})
        # The provider is built only to read the sampler the SDK would use (its public
        # ``sampler``); it gets no processor and is never asked for a tracer.
        self._sampler = sampler or TracerProvider(shutdown_on_exit=False).sampler
        self._scope = InstrumentationScope("gw", __version__)
        self._address = server_address
        # Ids, not secrets: the SDK makes its own with random.getrandbits too.
        self._bits = random_bits or random.Random().getrandbits
        self._root = Context()  # a root span: never a child of whatever is current here

    def emit(self, trace: TraceRecord) -> None:
        operation = operation_name(trace.endpoint)
        name = span_name(operation, trace.requested_model)
        attributes = request_attributes(trace)
        trace_id = self._bits(128) or 1  # 0 is the invalid id
        sampling = self._sampler.should_sample(
            self._root, trace_id, name, SpanKind.SERVER, attributes
        )
        if sampling.decision is not Decision.RECORD_AND_SAMPLE:  # RECORD_ONLY is not exported
            return
        request = SpanContext(trace_id, self._span_id(), False, SAMPLED, sampling.trace_state)
        for attempt in trace.attempts:
            address = self._address(attempt.provider, attempt.account) if self._address else None
            self._end(
                span_name(operation, attempt.model),
                SpanContext(trace_id, self._span_id(), False, SAMPLED, sampling.trace_state),
                parent=request,
                kind=SpanKind.CLIENT,
                attributes=attempt_attributes(trace, attempt, address),
                error_code=attempt.error_code,
                start_s=attempt.started_at,
                end_s=attempt.started_at + attempt.latency_ms / 1000,
            )
        self._end(
            name,
            request,
            parent=None,
            kind=SpanKind.SERVER,
            attributes=attributes,
            error_code=trace.error_code,
            start_s=trace.time,
            end_s=trace.time + trace.latency_ms / 1000,
        )

    def shutdown(self) -> None:
        """Export what is buffered, then stop (blocking: call it off the event loop)."""
        self._processor.shutdown()

    def _span_id(self) -> int:
        return self._bits(64) or 1  # 0 is the invalid id

    def _end(
        self,
        name: str,
        context: SpanContext,
        *,
        parent: SpanContext | None,
        kind: SpanKind,
        attributes: Mapping[str, str | bool | int | float],
        error_code: str | None,
        start_s: float,
        end_s: float,
    ) -> None:
        # The stable code only: an error's message may quote the prompt (invariant 9).
        status = UNSET if error_code is None else Status(StatusCode.ERROR, error_code)
        self._processor.on_end(
            ReadableSpan(
                name,
                context,
                parent,
                self._resource,
                attributes,
                kind=kind,
                status=status,
                start_time=_ns(start_s),
                end_time=_ns(end_s),
                instrumentation_scope=self._scope,
            )
        )


def otlp_processor(config: OtlpConfig, headers: Mapping[str, str]) -> SpanProcessor:
    """Batches of spans to ``<endpoint>/v1/traces`` over OTLP/HTTP (protobuf), sent with
    ``headers`` (their ``env:``/``vault:`` references already resolved: gw/startup/checks.py)."""
    if config.endpoint is None:  # refused at config load; kept for the type checker
        raise ValueError("telemetry.otlp.endpoint is required")
    exporter = OTLPSpanExporter(
        endpoint=f"{config.endpoint.rstrip('/')}/v1/traces",
        headers=dict(headers),
        timeout=EXPORT_TIMEOUT_S,
    )
    return BatchSpanProcessor(exporter, max_queue_size=SPAN_QUEUE_SIZE)


def _ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)

"""SpanWriter builds each request's spans as finished ``ReadableSpan``s, without a tracer:
valid sampled ids from the random source it is given, gw's resource and scope, the SDK's
sampler deciding once for the whole trace, and the processor's ``on_end`` as the way out."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON, TraceIdRatioBased
from opentelemetry.trace import SpanKind

from gw import __version__
from gw.record import AttemptRecord, TraceRecord
from gw.telemetry.otel_spans import RandomBits, SpanWriter

T0 = 1_750_000_000.5


def two_attempts() -> TraceRecord:
    attempts = tuple(
        AttemptRecord(
            number=number,
            provider="p",
            model=f"m-{number}",
            account="default",
            started_at=T0 + number / 100,
            latency_ms=5.0,
            ttft_ms=None,
            outcome="retried" if number == 1 else "answered",
        )
        for number in (1, 2)
    )
    return TraceRecord(
        request_id="req_spans",
        time=T0,
        endpoint="chat.completions",
        requested_model="chat",
        stream=False,
        status=200,
        revision=1,
        latency_ms=40.0,
        route="chat",
        model="m-2",
        attempts=attempts,
    )


def counting_bits(*values: int) -> RandomBits:
    """Hands out ``values`` in order (then keeps repeating the last one)."""
    given: Iterator[int] = iter(values)
    last = values[-1]

    def bits(count: int) -> int:
        nonlocal last
        last = next(given, last)
        assert last < 2**count
        return last

    return bits


def emit(writer_memory: InMemorySpanExporter, **options: object) -> list[ReadableSpan]:
    writer = SpanWriter(
        SimpleSpanProcessor(writer_memory),
        service_name="gw-spans",
        **options,  # type: ignore[arg-type]
    )
    writer.emit(two_attempts())
    return list(writer_memory.get_finished_spans())


def test_spans_are_finished_readable_spans_built_without_a_tracer() -> None:
    spans = emit(InMemorySpanExporter())
    assert len(spans) == 3
    for span in spans:
        # A plain ReadableSpan, not the SDK's recording Span a tracer would have made.
        assert type(span) is ReadableSpan
        assert span.context is not None
        assert span.context.is_valid
        assert not span.context.is_remote
        assert span.context.trace_flags.sampled
        assert span.instrumentation_scope is not None
        assert span.instrumentation_scope.name == "gw"
        assert span.instrumentation_scope.version == __version__
        assert span.resource.attributes["service.name"] == "gw-spans"
        assert span.resource.attributes["service.version"] == __version__
        assert span.end_time is not None
        assert span.start_time is not None
        assert span.end_time > span.start_time
    # Attempts first, as they ended first; the request span last.
    assert [span.kind for span in spans] == [SpanKind.CLIENT, SpanKind.CLIENT, SpanKind.SERVER]
    assert len({span.context.span_id for span in spans if span.context}) == 3


def test_ids_come_from_the_random_source_given() -> None:
    trace_id, request_id, first_id, second_id = 0xABC << 64, 0x11, 0x22, 0x33
    spans = emit(
        InMemorySpanExporter(), random_bits=counting_bits(trace_id, request_id, first_id, second_id)
    )
    first, second, request = spans
    assert request.context is not None
    assert request.context.trace_id == trace_id
    assert request.context.span_id == request_id
    assert request.parent is None
    for attempt, span_id in ((first, first_id), (second, second_id)):
        assert attempt.context is not None
        assert attempt.context.trace_id == trace_id
        assert attempt.context.span_id == span_id
        assert attempt.parent == request.context


def test_a_zero_from_the_random_source_still_makes_valid_ids() -> None:
    spans = emit(InMemorySpanExporter(), random_bits=counting_bits(0))
    assert spans  # SimpleSpanProcessor exports only sampled spans with a context
    assert all(span.context is not None and span.context.is_valid for span in spans)


@pytest.mark.parametrize(
    ("sampler", "exported"),
    [(ALWAYS_ON, 3), (ALWAYS_OFF, 0)],
)
def test_the_sampler_decides_for_the_whole_trace(sampler: object, exported: int) -> None:
    assert len(emit(InMemorySpanExporter(), sampler=sampler)) == exported


def test_a_ratio_sampler_keeps_or_drops_every_span_of_a_trace() -> None:
    half = TraceIdRatioBased(0.5)  # samples the trace ids whose low 64 bits are small
    kept = emit(InMemorySpanExporter(), sampler=half, random_bits=counting_bits(1, 2, 3, 4))
    dropped = emit(InMemorySpanExporter(), sampler=half, random_bits=counting_bits(2**64 - 1, 5))
    assert len(kept) == 3
    assert dropped == []


def test_the_sdk_s_sampler_variable_still_applies(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "always_off")
    assert emit(InMemorySpanExporter()) == []


def test_a_batch_processor_exports_them_and_shutdown_flushes() -> None:
    memory = InMemorySpanExporter()
    writer = SpanWriter(BatchSpanProcessor(memory), service_name="gw")
    writer.emit(two_attempts())
    writer.emit(two_attempts())
    writer.shutdown()  # the processor's: what it holds is exported first
    spans = memory.get_finished_spans()
    assert len(spans) == 6
    assert len({span.context.trace_id for span in spans if span.context}) == 2

"""OtelExporter and its spans, with the SDK's in-memory exporter: one request span and a child
per attempt at the recorded times, GenAI attributes, ERROR status on failure, no content
ever, a bounded queue that drops and counts, a bounded stop, and a clear error without
the ``otel`` extra."""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from gw.adapters.anthropic import ANTHROPIC_BASE_URL
from gw.adapters.gemini import GEMINI_BASE_URL
from gw.config import compile_snapshot, load_config
from gw.config.snapshot import OPENAI_BASE_URL
from gw.ir.usage import Usage
from gw.ports import TraceSink
from gw.record import AttemptRecord, TraceRecord
from gw.routing.decision import RouteDecision, TargetRef
from gw.startup.checks import check_otel
from gw.startup.plan import ServeError, ServePlan
from gw.telemetry.otel import OtelExporter, OtelUnavailableError, load_otel, require_otel
from gw.telemetry.otel_attributes import (
    DEFAULT_BASE_URLS,
    operation_name,
    snapshot_addresses,
    url_address,
)
from gw.telemetry.otel_spans import SpanWriter

from e2e.waiting import await_until

PROMPT = "tell me the secret plan for Project Nightingale"
UPSTREAM_MESSAGE = f"upstream refused: '{PROMPT}' is not allowed"
GW_MESSAGE = f"all targets failed for {PROMPT!r}"
T0 = 1_750_000_000.25  # the request's wall-clock start
NS = 1_000_000_000


def decision() -> RouteDecision:
    return RouteDecision(
        route="chat",
        direct=False,
        policy="default",
        strategy="priority",
        chain=(
            TargetRef(provider="primary", model="gpt-a"),
            TargetRef(provider="backup", model="gpt-b"),
        ),
        candidates=(),
        estimated_input_tokens=12,
        max_output_tokens=256,
    )


def fallback_stream() -> TraceRecord:
    """A stream whose first attempt failed (500) and fell back to the second target."""
    failed = AttemptRecord(
        number=1,
        provider="primary",
        model="gpt-a",
        account="default",
        started_at=T0 + 0.002,
        latency_ms=40.0,
        ttft_ms=None,
        outcome="fell_back",
        upstream_status=500,
        error_code="upstream_error",
        error_message=UPSTREAM_MESSAGE,
        blame="upstream",
        provider_kind="openai_compatible",
    )
    answered = AttemptRecord(
        number=2,
        provider="backup",
        model="gpt-b",
        account="default",
        started_at=T0 + 0.050,
        latency_ms=120.0,
        ttft_ms=30.0,
        outcome="answered",
        provider_kind="openai",
    )
    return TraceRecord(
        request_id="req_0001",
        time=T0,
        endpoint="chat.completions",
        requested_model="chat",
        stream=True,
        status=200,
        revision=7,
        latency_ms=180.0,
        route="chat",
        policy="default",
        provider="backup",
        model="gpt-b",
        tenant="team-a",
        key_id="key_1",
        ttft_ms=85.0,
        decision=decision(),
        attempts=(failed, answered),
        usage=Usage(input_tokens=12, output_tokens=34),
        usage_source="provider",
        cost_usd=0.0042,
        committed=True,
    )


def failed_request() -> TraceRecord:
    attempt = AttemptRecord(
        number=1,
        provider="primary",
        model="gpt-a",
        account="default",
        started_at=T0 + 0.001,
        latency_ms=1500.0,
        ttft_ms=None,
        outcome="failed",
        error_code="upstream_timeout",
        error_message=f"no answer to {PROMPT!r} within 1.5s",
        blame="upstream",
        provider_kind="openai_compatible",
    )
    return TraceRecord(
        request_id="req_0002",
        time=T0,
        endpoint="chat.completions",
        requested_model="chat",
        stream=False,
        status=504,
        revision=7,
        latency_ms=1502.0,
        route="chat",
        policy="default",
        provider="primary",
        model="gpt-a",
        error_code="upstream_timeout",
        error_message=GW_MESSAGE,
        decision=decision(),
        attempts=(attempt,),
    )


def address(provider: str, account: str | None) -> tuple[str, int] | None:
    return ("primary.example", 8443) if provider == "primary" else None


@pytest.fixture
def memory() -> InMemorySpanExporter:
    return InMemorySpanExporter()


def export(memory: InMemorySpanExporter, *traces: TraceRecord) -> list[ReadableSpan]:
    """Submit ``traces`` to a started exporter, stop it, and return the finished spans."""
    writer = SpanWriter(SimpleSpanProcessor(memory), service_name="gw-test", server_address=address)
    exporter = OtelExporter(writer)

    async def main() -> None:
        await exporter.start()
        for trace in traces:
            exporter.submit(trace)
        # The background task builds them off the request path.
        await await_until(lambda: exporter.exported == len(traces), "every trace exported")
        await exporter.stop()

    asyncio.run(main())
    assert exporter.dropped == 0
    return list(memory.get_finished_spans())


def test_exporter_is_a_trace_sink() -> None:
    sink: TraceSink = OtelExporter(
        SpanWriter(SimpleSpanProcessor(InMemorySpanExporter()), service_name="gw")
    )
    assert callable(sink.submit)


def test_a_fallback_stream_is_a_request_span_with_a_child_per_attempt(
    memory: InMemorySpanExporter,
) -> None:
    trace = fallback_stream()
    spans = export(memory, trace)
    assert len(spans) == 3
    (request,) = [s for s in spans if s.kind is SpanKind.SERVER]
    attempts = sorted(
        (s for s in spans if s.kind is SpanKind.CLIENT), key=lambda s: s.start_time or 0
    )
    assert request.name == "chat chat"
    assert [a.name for a in attempts] == ["chat gpt-a", "chat gpt-b"]
    assert request.parent is None
    assert request.context is not None
    for attempt in attempts:
        assert attempt.parent is not None
        assert attempt.parent.span_id == request.context.span_id
        assert attempt.context is not None
        assert attempt.context.trace_id == request.context.trace_id
    assert request.resource.attributes["service.name"] == "gw-test"

    # The recorded times, not the time the spans were built.
    assert request.start_time == int(T0 * NS)
    assert request.end_time == int((T0 + 0.180) * NS)
    assert attempts[0].start_time == int((T0 + 0.002) * NS)
    assert attempts[0].end_time == int((T0 + 0.002 + 0.040) * NS)
    assert attempts[1].start_time == int((T0 + 0.050) * NS)
    assert attempts[1].end_time == int((T0 + 0.050 + 0.120) * NS)

    assert dict(request.attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "chat",
        "gen_ai.request.stream": True,
        "gen_ai.provider.name": "openai",
        "gen_ai.response.model": "gpt-b",
        "gen_ai.request.max_tokens": 256,
        "gen_ai.response.time_to_first_chunk": 0.085,
        "gen_ai.usage.input_tokens": 12,
        "gen_ai.usage.output_tokens": 34,
        "http.response.status_code": 200,
        "gw.request_id": "req_0001",
        "gw.endpoint": "chat.completions",
        "gw.revision": 7,
        "gw.attempts": 2,
        "gw.route": "chat",
        "gw.policy": "default",
        "gw.provider": "backup",
        "gw.tenant": "team-a",
        "gw.key_id": "key_1",
        "gw.cost_usd": 0.0042,
        "gw.usage_source": "provider",
        "gw.committed": True,
    }
    assert request.status.status_code is StatusCode.UNSET

    first = dict(attempts[0].attributes or {})
    assert first["gen_ai.provider.name"] == "primary"  # an OpenAI-compatible host: its name
    assert first["gen_ai.request.model"] == "gpt-a"
    assert first["gw.attempt.outcome"] == "fell_back"
    assert first["gw.attempt.number"] == 1
    assert first["error.type"] == "upstream_error"
    assert first["http.response.status_code"] == 500
    assert first["server.address"] == "primary.example"
    assert first["server.port"] == 8443
    assert "gen_ai.response.model" not in first
    assert "gen_ai.usage.input_tokens" not in first
    assert attempts[0].status.status_code is StatusCode.ERROR
    assert attempts[0].status.description == "upstream_error"

    second = dict(attempts[1].attributes or {})
    assert second["gen_ai.provider.name"] == "openai"
    assert second["gen_ai.response.model"] == "gpt-b"
    assert second["gw.attempt.outcome"] == "answered"
    assert second["gen_ai.usage.output_tokens"] == 34
    assert second["gen_ai.response.time_to_first_chunk"] == 0.03
    assert "error.type" not in second
    assert "server.address" not in second
    assert attempts[1].status.status_code is StatusCode.UNSET


def test_a_failed_request_is_an_error_with_its_code(memory: InMemorySpanExporter) -> None:
    spans = export(memory, failed_request())
    (request,) = [s for s in spans if s.kind is SpanKind.SERVER]
    (attempt,) = [s for s in spans if s.kind is SpanKind.CLIENT]
    assert request.status.status_code is StatusCode.ERROR
    assert request.status.description == "upstream_timeout"
    assert (request.attributes or {})["error.type"] == "upstream_timeout"
    assert (request.attributes or {})["http.response.status_code"] == 504
    assert "gen_ai.response.model" not in (request.attributes or {})
    assert attempt.status.status_code is StatusCode.ERROR
    assert (attempt.attributes or {})["error.type"] == "upstream_timeout"
    assert (attempt.attributes or {})["gw.attempt.outcome"] == "failed"


def test_no_span_carries_the_prompt_or_an_error_message(memory: InMemorySpanExporter) -> None:
    spans = export(memory, fallback_stream(), failed_request())
    assert len(spans) == 5
    texts: list[str] = []
    for span in spans:
        texts += [span.name, span.status.description or ""]
        texts += [str(value) for value in (span.attributes or {}).values()]
        texts += [
            str(value) for event in span.events for value in (event.attributes or {}).values()
        ]
    for text in texts:
        for secret in (PROMPT, "Nightingale", UPSTREAM_MESSAGE, GW_MESSAGE):
            assert secret not in text
    wire = encode_spans(spans).SerializeToString()  # what OTLP would send
    assert b"Nightingale" not in wire
    assert b"req_0001" in wire  # the check above looks at real payload


def test_a_full_queue_drops_and_counts_without_blocking(memory: InMemorySpanExporter) -> None:
    exporter = OtelExporter(SpanWriter(SimpleSpanProcessor(memory), service_name="gw"), maxsize=3)
    for _ in range(10):  # not started: nothing drains, and submit must not wait
        exporter.submit(fallback_stream())
    assert exporter.submitted == 10
    assert exporter.queue_depth == 3
    assert exporter.dropped == 7
    asyncio.run(exporter.stop())  # builds what was queued
    assert exporter.exported == 3
    assert exporter.queue_depth == 0
    assert len(memory.get_finished_spans()) == 9
    exporter.submit(fallback_stream())  # after stop: counted, never raised
    assert exporter.dropped == 8
    assert exporter.submitted == exporter.exported + exporter.dropped


class BrokenEmitter:
    def __init__(self) -> None:
        self.release = threading.Event()

    def emit(self, trace: TraceRecord) -> None:
        raise RuntimeError(f"cannot build {trace.error_message}")

    def shutdown(self) -> None:
        self.release.wait(30)  # a collector that never answers


def test_span_errors_are_counted_and_stop_is_bounded(caplog: pytest.LogCaptureFixture) -> None:
    emitter = BrokenEmitter()
    exporter = OtelExporter(emitter)

    async def main() -> None:
        await exporter.start()
        exporter.submit(failed_request())
        await await_until(lambda: exporter.errors, "the failed export counted")
        await exporter.stop(timeout=0.2)

    with caplog.at_level(logging.WARNING, logger="gw.telemetry"):
        asyncio.run(main())
    emitter.release.set()
    assert exporter.errors == 1
    assert exporter.exported == 0
    assert "RuntimeError" in caplog.text
    assert "did not finish" in caplog.text
    assert PROMPT not in caplog.text


@pytest.fixture
def no_otel(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if the ``otel`` extra were not installed (restored afterwards)."""
    for name in [n for n in sys.modules if n == "opentelemetry" or n.startswith("opentelemetry.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    monkeypatch.delitem(sys.modules, "gw.telemetry.otel_spans", raising=False)


@pytest.mark.usefixtures("no_otel")
def test_without_the_extra_the_error_says_how_to_install_it() -> None:
    with pytest.raises(OtelUnavailableError) as caught:
        require_otel()
    message = str(caught.value)
    assert "telemetry.otlp.enabled" in message
    assert "pipx install --force '.[otel]'" in message
    assert "zipapp" in message
    with pytest.raises(OtelUnavailableError):
        load_otel(load_config("", "gw.yaml").telemetry.otlp)


@pytest.mark.usefixtures("no_otel")
def test_gw_serve_refuses_to_start_without_the_extra(tmp_path: Path) -> None:
    text = "telemetry:\n  otlp: {enabled: true, endpoint: 'http://127.0.0.1:4318'}\n"
    plan = ServePlan(
        home=tmp_path, config=load_config(text, "gw.yaml"), source="gw.yaml", environ={}
    )
    with pytest.raises(ServeError, match=r"pipx install --force '\.\[otel\]'"):
        check_otel(plan)
    disabled = ServePlan(
        home=tmp_path, config=load_config("", "gw.yaml"), source="gw.yaml", environ={}
    )
    check_otel(disabled)  # off: nothing is imported, nothing is refused


def test_importing_gw_imports_no_opentelemetry() -> None:
    import subprocess  # noqa: PLC0415 -- only this test starts a fresh interpreter

    code = (
        "import sys, gw.wiring, gw.startup.checks, gw.cli.main; "
        "print([m for m in sys.modules if m.startswith('opentelemetry')])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_upstream_addresses_come_from_the_snapshot() -> None:
    config = load_config(
        """
providers:
  - {name: local, kind: openai_compatible, base_url: "http://127.0.0.1:11434/v1"}
  - {name: oa, kind: openai}
  - {name: multi, kind: openai_compatible, base_url: "https://a.example/v1",
     accounts: [{name: one}, {name: two, base_url: "https://b.example:8443/v1"}]}
  - {name: mock, kind: mock}
""",
        "gw.yaml",
    )
    snapshot = compile_snapshot(config, revision=1, source="gw.yaml")
    address_of = snapshot_addresses(lambda: snapshot)
    assert address_of("local", "default") == ("127.0.0.1", 11434)
    assert address_of("oa", "default") == ("api.openai.com", 443)
    assert address_of("multi", "one") == ("a.example", 443)
    assert address_of("multi", "two") == ("b.example", 8443)
    assert address_of("mock", "default") is None
    assert address_of("gone", None) is None
    assert url_address("http://[::1]:bad/") is None


def test_default_hosts_match_the_adapters() -> None:
    assert DEFAULT_BASE_URLS == {
        "openai": OPENAI_BASE_URL,
        "openai_responses": OPENAI_BASE_URL,
        "anthropic": ANTHROPIC_BASE_URL,
        "gemini": GEMINI_BASE_URL,
    }


@pytest.mark.parametrize(
    ("endpoint", "operation"),
    [
        ("chat.completions", "chat"),
        ("messages", "chat"),
        ("responses", "chat"),
        ("gemini.streamGenerateContent", "chat"),
        ("embeddings", "embeddings"),
        ("gemini.batchEmbedContents", "embeddings"),
        ("models.list", "models.list"),
    ],
)
def test_every_client_format_names_its_operation(endpoint: str, operation: str) -> None:
    assert operation_name(endpoint) == operation

"""Client-derived values in spans (the model a client sends, a direct ``provider/<anything>``
route, its X-Request-Id): at most 256 characters, no control characters, in attributes
and span names alike; ordinary names pass unchanged."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from gw.record import AttemptRecord, TraceRecord
from gw.telemetry.otel_attributes import (
    MAX_CLIENT_CHARS,
    attempt_attributes,
    client_text,
    request_attributes,
    span_name,
)
from gw.telemetry.otel_spans import SpanWriter

ESCAPES = "\x1b]52;c;ZWNobw==\x07\x1b[2J\r\n\t\x00\x7f\x9b\u202e\u2028"
HOSTILE_MODEL = "m" + ESCAPES + "x" * 1000  # what follows "mock/" in a direct call
HOSTILE = f"mock/{HOSTILE_MODEL}"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("gpt-4o-mini", "gpt-4o-mini"),
        ("openai/gpt-4o mini", "openai/gpt-4o mini"),  # an ASCII space is kept
        ("modèle-日本", "modèle-日本"),
        (f"a{ESCAPES}b", "a]52;c;ZWNobw==[2Jb"),
        ("x" * 300, "x" * MAX_CLIENT_CHARS),
        ("\n" * 300 + "tail", "tail"),  # controls go first, then the cut
    ],
)
def test_client_text_strips_controls_and_cuts(value: str, shown: str) -> None:
    assert client_text(value) == shown


def test_an_ordinary_name_is_not_copied() -> None:
    name = "anthropic/claude-sonnet-4"
    assert client_text(name) is name


def direct_call() -> TraceRecord:
    attempt = AttemptRecord(
        number=1,
        provider="mock",
        model=HOSTILE_MODEL,
        account="default",
        started_at=1.0,
        latency_ms=1.0,
        ttft_ms=None,
        outcome="answered",
    )
    return TraceRecord(
        request_id="req_direct",
        time=1.0,
        endpoint="chat.completions",
        requested_model=HOSTILE,
        stream=False,
        status=200,
        revision=1,
        latency_ms=2.0,
        route=HOSTILE,  # a direct call's route is the provider/model the client sent
        provider="mock",
        model=HOSTILE_MODEL,
        client_request_id="abc\r\ndef\x1b[1m",
        attempts=(attempt,),
    )


def is_clean(value: object) -> bool:
    return not isinstance(value, str) or (len(value) <= MAX_CLIENT_CHARS and value.isprintable())


def test_a_direct_call_s_attributes_are_bounded_and_printable() -> None:
    trace = direct_call()
    request = request_attributes(trace)
    attempt = attempt_attributes(trace, trace.attempts[0])
    for name in ("gen_ai.request.model", "gen_ai.response.model", "gw.route"):
        assert len(str(request[name])) == MAX_CLIENT_CHARS
        assert is_clean(request[name]), name
    assert request["gw.route"].startswith("mock/m]52;c;ZWNobw==[2Jxxx")  # type: ignore[union-attr]
    assert request["gw.client_request_id"] == "abcdef[1m"
    for name in ("gen_ai.request.model", "gen_ai.response.model"):
        assert is_clean(attempt[name]), name
        assert str(attempt[name]).startswith("m]52;c;")
    assert is_clean(span_name("chat", HOSTILE))
    assert len(span_name("chat", HOSTILE)) == MAX_CLIENT_CHARS


def test_no_span_carries_an_unbounded_or_control_character_value() -> None:
    memory = InMemorySpanExporter()
    SpanWriter(SimpleSpanProcessor(memory), service_name="gw").emit(direct_call())
    spans = memory.get_finished_spans()
    assert len(spans) == 2
    for span in spans:
        assert is_clean(span.name), span.name
        assert span.name.startswith("chat ")
        for key, value in (span.attributes or {}).items():
            assert is_clean(value), key

"""gw traces / gw explain rendering: the facts appear, and the JSON shapes are exact."""

from __future__ import annotations

import io
import json
from datetime import UTC

import msgspec
from rich.console import Console, RenderableType

from gw.cli.explain_view import candidate_status, explain_renderables, translation_line
from gw.cli.traces_view import iso_utc, traces_json, traces_table
from gw.ir.usage import Usage
from gw.record import AttemptRecord, TraceRecord
from gw.routing.decision import Candidate, RouteDecision, TargetRef
from gw.telemetry.explain import explain_json

T0 = 1_773_583_323.12  # 2026-03-15T14:02:03.120Z

DECISION = RouteDecision(
    route="chat",
    direct=False,
    policy="default",
    strategy="priority",
    chain=(
        TargetRef(provider="openai-prod", model="gpt-4o-mini"),
        TargetRef(provider="local", model="llama3.2"),
    ),
    candidates=(
        Candidate(provider="openai-prod", model="gpt-4o-mini", priority=1, weight=1.0, rank=1),
        Candidate(
            provider="claude",
            model="claude-opus",
            priority=2,
            weight=1.0,
            estimated_cost_usd=0.9,
            rejected="cost_ceiling",
            detail="$0.90 > $0.25",
        ),
        Candidate(provider="local", model="llama3.2", priority=3, weight=1.0, rank=2),
    ),
    estimated_input_tokens=12,
    max_output_tokens=1024,
    degraded=True,
    degraded_reasons=("health relaxed",),
    notes=("max_tokens clamped to 1024 [policy default]",),
)

ATTEMPTS = (
    AttemptRecord(
        number=1,
        provider="openai-prod",
        model="gpt-4o-mini",
        account="a",
        started_at=T0 + 0.002,
        latency_ms=30.0,
        ttft_ms=None,
        outcome="retried",
        upstream_status=503,
        error_code="upstream_error",
        error_message="upstream answered 503",
        blame="upstream",
    ),
    AttemptRecord(
        number=2,
        provider="openai-prod",
        model="gpt-4o-mini",
        account="a",
        started_at=T0 + 0.190,
        latency_ms=25.0,
        ttft_ms=None,
        outcome="fell_back",
        upstream_status=429,
        error_code="rate_limited",
        retry_after_s=2.0,
        backoff_ms=150.0,
    ),
    AttemptRecord(
        number=3,
        provider="local",
        model="llama3.2",
        account=None,
        started_at=T0 + 0.220,
        latency_ms=80.0,
        ttft_ms=12.0,
        outcome="answered",
        upstream_status=200,
    ),
)

ANSWERED = TraceRecord(
    request_id="req-0123456789",
    time=T0,
    endpoint="/v1/chat/completions",
    requested_model="chat",
    stream=True,
    status=200,
    revision=3,
    latency_ms=310.0,
    route="chat",
    policy="default",
    provider="local",
    model="llama3.2",
    client_request_id="client-7",
    ttft_ms=240.0,
    decision=DECISION,
    attempts=ATTEMPTS,
    usage=Usage(input_tokens=12, output_tokens=34, cached_input_tokens=2),
    usage_source="provider",
    cost_usd=0.000123,
)

NOT_FOUND = TraceRecord(
    request_id="req-9999999999",
    time=T0 + 1,
    endpoint="/v1/messages",
    requested_model="nope",
    stream=False,
    status=404,
    revision=3,
    latency_ms=0.4,
    error_code="model_not_found",
    error_message="no route or provider/model named 'nope' [sic]",
)

TRACES_KEYS = {
    "request_id",
    "time",
    "route",
    "status",
    "error_code",
    "provider",
    "model",
    "latency_ms",
    "stream",
    "client_request_id",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "revision",
    "attempts",
    "gateway",
}
EXPLAIN_KEYS = {
    "request_id",
    "time",
    "client_request_id",
    "tenant",
    "key_id",
    "endpoint",
    "requested_model",
    "stream",
    "background",
    "replay_of",
    "cache",
    "cache_of",
    "status",
    "error",
    "revision",
    "latency_ms",
    "ttft_ms",
    "answered_by",
    "decision",
    "attempts",
    "usage",
    "cost_usd",
    "gateway",
}
DECISION_KEYS = {
    "route",
    "direct",
    "policy",
    "strategy",
    "degraded",
    "degraded_reasons",
    "notes",
    "warnings",
    "estimated_input_tokens",
    "max_output_tokens",
    "chain",
    "inputs",
    "candidates",
}
CANDIDATE_KEYS = {
    "provider",
    "model",
    "priority",
    "weight",
    "rank",
    "score",
    "estimated_cost_usd",
    "rejected",
    "detail",
    "relaxed",
}
ATTEMPT_KEYS = {
    "hedge",
    "upstream_response_id",
    "number",
    "provider",
    "model",
    "account",
    "started_at",
    "latency_ms",
    "ttft_ms",
    "outcome",
    "upstream_status",
    "error_code",
    "error_message",
    "blame",
    "retry_after_s",
    "backoff_ms",
    "provider_kind",
    "translation_notes",
    "limit_notes",
}
USAGE_KEYS = {"input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens", "source"}


def render(*renderables: RenderableType) -> str:
    console = Console(file=io.StringIO(), width=160, color_system=None)
    for renderable in renderables:
        console.print(renderable)
    output = console.file.getvalue()  # type: ignore[attr-defined]  # the StringIO given above
    assert isinstance(output, str)
    return output


def test_iso_utc_ends_with_z() -> None:
    assert iso_utc(T0) == "2026-03-15T14:02:03.120Z"


def test_traces_table_shows_one_row_per_trace() -> None:
    out = render(traces_table([NOT_FOUND, ANSWERED], tz=UTC))
    assert "2026-03-15 14:02:03" in out
    assert "req-0123456789" in out
    assert "local/llama3.2" in out
    assert "model_not_found" in out
    assert "12/34" in out
    assert "$0.000123" in out
    assert out.index("req-9999999999") < out.index("req-0123456789")


def test_traces_json_shape() -> None:
    items = traces_json([ANSWERED, NOT_FOUND])
    assert [set(item) for item in items] == [TRACES_KEYS, TRACES_KEYS]
    assert items[0] == {
        "request_id": "req-0123456789",
        "time": "2026-03-15T14:02:03.120Z",
        "route": "chat",
        "status": 200,
        "error_code": None,
        "provider": "local",
        "model": "llama3.2",
        "latency_ms": 310.0,
        "stream": True,
        "client_request_id": "client-7",
        "input_tokens": 12,
        "output_tokens": 34,
        "cost_usd": 0.000123,
        "revision": 3,
        "attempts": 3,
        "gateway": None,
    }
    assert items[1]["provider"] is None
    assert items[1]["input_tokens"] is None
    assert items[1]["error_code"] == "model_not_found"
    json.dumps(items)


def test_explain_shows_the_decision_and_every_attempt() -> None:
    out = render(*explain_renderables(ANSWERED, tz=UTC))
    assert "request req-0123456789" in out
    assert "default" in out  # policy
    assert "priority" in out  # strategy
    assert "openai-prod/gpt-4o-mini" in out
    assert "chosen" in out
    assert "fallback #1" in out
    assert "rejected: cost_ceiling — $0.90 > $0.25" in out
    assert "Degraded" in out
    assert "health relaxed" in out
    assert "max_tokens clamped to 1024 [policy default]" in out  # brackets are not markup
    for outcome in ("retried", "fell_back", "answered"):
        assert outcome in out
    assert "+190 ms" in out  # attempt start, relative to the request
    assert "150 ms" in out  # backoff before attempt 2
    assert "upstream_error (upstream)" in out
    assert "retry-after 2s" in out
    assert "12 in (2 cached), 34 out" in out
    assert "$0.000123" in out


def test_explain_of_a_request_that_never_routed() -> None:
    out = render(*explain_renderables(NOT_FOUND, tz=UTC))
    assert "model_not_found" in out
    assert "'nope' [sic]" in out
    assert "No upstream attempt." in out
    assert "Candidates" not in out


def test_candidate_status_labels() -> None:
    relaxed = Candidate(
        provider="local",
        model="llama3.2",
        priority=3,
        weight=1.0,
        rejected="cost_ceiling",
        detail="$0.30 > $0.25",
        relaxed=True,
    )
    spare = Candidate(provider="x", model="y", priority=9, weight=1.0, rank=3)
    labels = [candidate_status(DECISION, c) for c in (*DECISION.candidates, relaxed, spare)]
    assert labels == [
        "chosen",
        "rejected: cost_ceiling — $0.90 > $0.25",
        "fallback #1",
        "fallback #1 (relaxed: cost_ceiling — $0.30 > $0.25)",
        "not in chain",
    ]


def test_explain_json_shape() -> None:
    data = explain_json(ANSWERED)
    assert set(data) == EXPLAIN_KEYS
    assert data["time"] == "2026-03-15T14:02:03.120Z"
    assert data["error"] is None
    assert data["answered_by"] == {"provider": "local", "model": "llama3.2"}
    decision = data["decision"]
    assert isinstance(decision, dict)
    assert set(decision) == DECISION_KEYS
    assert decision["chain"] == ["openai-prod/gpt-4o-mini", "local/llama3.2"]
    assert [set(c) for c in decision["candidates"]] == [CANDIDATE_KEYS] * 3
    attempts = data["attempts"]
    assert isinstance(attempts, list)
    assert [set(a) for a in attempts] == [ATTEMPT_KEYS] * 3
    assert [a["outcome"] for a in attempts] == ["retried", "fell_back", "answered"]
    assert attempts[1]["started_at"] == "2026-03-15T14:02:03.310Z"
    assert data["usage"] == {
        "input_tokens": 12,
        "output_tokens": 34,
        "cached_input_tokens": 2,
        "reasoning_tokens": 0,
        "source": "provider",
    }
    json.dumps(data)

    failed = explain_json(NOT_FOUND)
    assert set(failed) == EXPLAIN_KEYS
    assert failed["error"] == {
        "code": "model_not_found",
        "message": "no route or provider/model named 'nope' [sic]",
    }
    assert failed["decision"] is None
    assert failed["answered_by"] is None
    assert failed["usage"] is None
    assert failed["attempts"] == []


def test_explain_shows_the_translation_of_each_attempt() -> None:
    attempt = AttemptRecord(
        number=1, provider="claude", model="c-1", account=None, started_at=0.0,
        latency_ms=5.0, ttft_ms=None, outcome="answered", provider_kind="anthropic",
        translation_notes=("response_format dropped",),
    )  # fmt: skip
    trace = msgspec.structs.replace(ANSWERED, endpoint="chat.completions", attempts=[attempt])
    assert translation_line(trace, attempt) == (
        "OpenAI chat -> IR -> Anthropic messages; lossy: response_format dropped"
    )
    assert "#1 OpenAI chat -> IR -> Anthropic messages" in render(*explain_renderables(trace))


def test_the_gateway_that_served_a_trace_is_shown_in_explain_and_its_json() -> None:
    served = msgspec.structs.replace(ANSWERED, gateway="gw-b")
    assert explain_json(served)["gateway"] == "gw-b"
    assert explain_json(ANSWERED)["gateway"] is None  # a trace from before gw recorded it
    assert "gw-b" in render(*explain_renderables(served, tz=UTC))
    assert "gateway" not in render(*explain_renderables(ANSWERED, tz=UTC))


def test_traces_show_a_gateway_column_only_when_several_gateways_served_them() -> None:
    on_a = msgspec.structs.replace(ANSWERED, gateway="gw-a")
    on_b = msgspec.structs.replace(NOT_FOUND, gateway="gw-b")
    both = render(traces_table([on_b, on_a], tz=UTC))
    assert "gateway" in both
    assert "gw-a" in both
    assert "gw-b" in both
    one = render(traces_table([on_a, msgspec.structs.replace(NOT_FOUND, gateway="gw-a")], tz=UTC))
    assert "gw-a" not in one  # one gateway (or none recorded): nothing to tell apart
    assert [item["gateway"] for item in traces_json([on_b, on_a, ANSWERED])] == [
        "gw-b",
        "gw-a",
        None,
    ]


def test_a_replay_names_the_request_that_answered_first() -> None:
    replay = msgspec.structs.replace(NOT_FOUND, status=200, error_code=None, replay_of="req_first")
    assert "Idempotency-Key replay of req_first: no upstream call" in render(
        *explain_renderables(replay, tz=UTC)
    )
    assert explain_json(replay)["replay_of"] == "req_first"

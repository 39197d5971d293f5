"""Embeddings through the engine and the gateway: the chat loop's retry, fallback and
timeouts, one vector per input, and the trace's usage and cost."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import msgspec
import pytest

from gw.config import compile_snapshot, load_config
from gw.config.schema import ProviderConfig
from gw.errors import GatewayError, InvalidRequestError, RateLimitedError, UpstreamError
from gw.execution.attempt_log import AttemptLog
from gw.execution.engine import Engine
from gw.execution.execution_plan import ExecutionFailedError, ExecutionPlan
from gw.execution.gateway import Gateway
from gw.execution.request_context import RequestContext, RequestFailedError
from gw.ir import ChatResponse, EmbeddingRequest, EmbeddingResponse, StreamEvent, Usage
from gw.ports import EmbeddingCall, UpstreamCall
from gw.record import TraceRecord
from gw.routing.router import decide

CONFIG = """
providers: [{name: a, kind: mock}, {name: b, kind: mock}, {name: chat, kind: mock}]
models:
  - {provider: a, model: m1, input_per_mtok: 0.5, output_per_mtok: 9.0, capabilities: [embeddings]}
  - {provider: b, model: m2, input_per_mtok: 2.0, capabilities: [embeddings]}
routes:
  - name: r
    targets: [{provider: a, model: m1, priority: 1}, {provider: b, model: m2, priority: 2}]
  - name: via-chat
    targets: [{provider: chat, model: c1, priority: 1}, {provider: b, model: m2, priority: 2}]
policies:
  - name: p
    match: {routes: ["*"]}
    retry: {max_attempts: 2, initial_backoff: 100ms}
    timeout: {per_attempt: 200ms}
"""
REQUEST = EmbeddingRequest(model="r", inputs=("one", (1, 2, 3)), dimensions=2)
Step = GatewayError | EmbeddingResponse | Callable[[], Any]


def vectors(count: int = 2, usage: Usage | None = None) -> EmbeddingResponse:
    return EmbeddingResponse(
        model="emb", vectors=tuple((float(i), 0.5) for i in range(count)), usage=usage
    )


class ScriptedEmbedder:
    """Answers each embeddings call with the next step: an error, vectors, or a hang."""

    def __init__(self, steps: list[Step]) -> None:
        self.steps = steps
        self.calls: list[EmbeddingCall] = []

    async def complete(self, call: UpstreamCall) -> ChatResponse:
        raise AssertionError("an embeddings request never completes a chat")

    async def stream(self, call: UpstreamCall) -> AsyncIterator[StreamEvent]:
        raise AssertionError("an embeddings request never streams")
        yield  # pragma: no cover

    async def embed(self, call: EmbeddingCall) -> EmbeddingResponse:
        self.calls.append(call)
        step = self.steps.pop(0)
        if isinstance(step, GatewayError):
            raise step
        if callable(step):
            await step()
        assert isinstance(step, EmbeddingResponse)
        return step


class ChatOnly:
    """An adapter that has not learnt ``embed`` yet (still an ``Upstream``)."""

    async def complete(self, call: UpstreamCall) -> ChatResponse:
        raise AssertionError("not called")

    async def stream(self, call: UpstreamCall) -> AsyncIterator[StreamEvent]:
        raise AssertionError("not called")
        yield  # pragma: no cover


class Directory:
    def __init__(self, upstreams: dict[str, Any]) -> None:
        self.upstreams = upstreams

    def upstream_for(self, provider: ProviderConfig) -> Any:
        return self.upstreams[provider.name]


class FakeClock:
    def time(self) -> float:
        return 1000.0

    def monotonic(self) -> float:
        return 1000.0


class Traces:
    def __init__(self) -> None:
        self.submitted: list[TraceRecord] = []

    def submit(self, trace: TraceRecord) -> None:
        self.submitted.append(trace)


SNAPSHOT = compile_snapshot(load_config(CONFIG, "t.yaml"), revision=4, source="t")


def plan(request: EmbeddingRequest = REQUEST) -> ExecutionPlan[EmbeddingRequest]:
    decision, policy = decide(request, SNAPSHOT, request_id="req_test")
    return ExecutionPlan(
        request_id="req_test", request=request, decision=decision, policy=policy,
        providers=SNAPSHOT.providers,
    )  # fmt: skip


def engine(upstreams: dict[str, Any]) -> tuple[Engine, list[float]]:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    return Engine(Directory(upstreams), FakeClock(), sleep), slept


def run(a: list[Step], b: list[Step], request: EmbeddingRequest = REQUEST) -> Any:
    upstreams = {"a": ScriptedEmbedder(a), "b": ScriptedEmbedder(b), "chat": ChatOnly()}
    runner, slept = engine(upstreams)
    answer = asyncio.run(runner.embed(plan(request), AttemptLog(FakeClock())))
    return answer, upstreams, slept


def test_retry_then_answer_on_the_same_target() -> None:
    answer, upstreams, slept = run([UpstreamError("boom"), vectors()], [])
    assert answer.target.key == "a/m1"
    assert answer.response.vectors == ((0.0, 0.5), (1.0, 0.5))
    assert [a.outcome for a in answer.attempts] == ["retried", "answered"]
    assert len(slept) == 1
    call = upstreams["a"].calls[0]
    assert (call.request.model, call.request.inputs, call.request.dimensions) == (
        "m1", ("one", (1, 2, 3)), 2,
    )  # fmt: skip


def test_fallback_after_retries_are_used_up() -> None:
    answer, upstreams, _ = run([UpstreamError("x"), RateLimitedError("y")], [vectors()])
    assert answer.target.key == "b/m2"
    assert [(a.provider, a.outcome, a.error_code) for a in answer.attempts] == [
        ("a", "retried", "upstream_error"),
        ("a", "fell_back", "rate_limited"),
        ("b", "answered", None),
    ]
    assert upstreams["b"].calls[0].request.model == "m2"


def test_client_caused_errors_never_fall_back() -> None:
    with pytest.raises(ExecutionFailedError) as failed:
        run([InvalidRequestError("bad", param="dimensions")], [vectors()])
    assert failed.value.error.code == "invalid_request"
    assert [a.outcome for a in failed.value.attempts] == ["failed"]


def test_a_wrong_number_of_vectors_is_an_upstream_error() -> None:
    answer, _, _ = run([vectors(count=1), vectors(count=3)], [vectors()])
    assert [(a.outcome, a.error_code) for a in answer.attempts] == [
        ("retried", "upstream_error"), ("fell_back", "upstream_error"), ("answered", None),
    ]  # fmt: skip
    assert answer.attempts[0].error_message == "upstream sent 1 embeddings for 2 inputs"


def test_per_attempt_timeout_is_an_upstream_timeout() -> None:
    async def hang() -> None:
        await asyncio.Event().wait()

    answer, _, _ = run([hang, hang], [vectors()])
    assert [(a.outcome, a.error_code) for a in answer.attempts] == [
        ("retried", "upstream_timeout"), ("fell_back", "upstream_timeout"), ("answered", None),
    ]  # fmt: skip


def test_an_adapter_without_embed_falls_back() -> None:
    request = msgspec.structs.replace(REQUEST, model="via-chat")
    answer, _, _ = run([], [vectors()], request)
    assert answer.target.key == "b/m2"
    assert answer.attempts[0].provider == "chat"
    assert answer.attempts[0].error_code == "upstream_error"
    assert "does not serve embeddings" in (answer.attempts[0].error_message or "")


# --- the gateway ---------------------------------------------------------------------------


def gateway_embed(steps: list[Step], request: EmbeddingRequest = REQUEST) -> Any:
    traces = Traces()
    runner, _ = engine({"a": ScriptedEmbedder(steps), "b": ScriptedEmbedder([])})
    ctx = RequestContext(
        request_id="req_gw", snapshot=SNAPSHOT, endpoint="embeddings",
        started_at=1000.0, started_mono=1000.0,
    )  # fmt: skip
    gateway = Gateway(runner, traces, FakeClock())
    try:
        done = asyncio.run(gateway.embed(ctx, request))
    except RequestFailedError as failed:
        return failed, traces.submitted
    return done, traces.submitted


def test_the_trace_has_the_provider_s_usage_and_the_input_price_cost() -> None:
    done, [trace] = gateway_embed([vectors(usage=Usage(input_tokens=1000))])
    assert done.trace is trace
    assert (trace.endpoint, trace.stream, trace.status) == ("embeddings", False, 200)
    assert (trace.provider, trace.model, trace.route) == ("a", "m1", "r")
    assert trace.usage == Usage(input_tokens=1000)
    assert trace.usage_source == "provider"
    assert trace.cost_usd == pytest.approx(1000 * 0.5 / 1e6)  # the output price never counts
    assert trace.decision is not None
    assert trace.decision.max_output_tokens == 0


def test_without_upstream_usage_the_trace_estimates_it() -> None:
    done, [trace] = gateway_embed([vectors()])
    assert done.response.usage is None
    assert trace.usage == Usage(input_tokens=4)  # "one" is 1 token, the token array 3
    assert trace.usage_source == "estimate"
    assert trace.cost_usd == pytest.approx(4 * 0.5 / 1e6)


def test_failures_are_traced_with_the_endpoint() -> None:
    failed, [trace] = gateway_embed([InvalidRequestError("no")])
    assert isinstance(failed, RequestFailedError)
    assert (trace.endpoint, trace.status, trace.error_code) == (
        "embeddings",
        400,
        "invalid_request",
    )
    assert trace.stream is False


def test_an_unknown_model_is_rejected_before_routing() -> None:
    failed, [trace] = gateway_embed([], msgspec.structs.replace(REQUEST, model="nope"))
    assert isinstance(failed, RequestFailedError)
    assert failed.error.code == "model_not_found"
    assert trace.requested_model == "nope"

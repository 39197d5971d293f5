"""The engine against scripted in-process upstreams: retry, fallback, commit point, budgets."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import msgspec
import pytest

from gw.config import compile_snapshot, load_config
from gw.config.schema import FallbackConfig, ProviderConfig, RetryConfig
from gw.errors import (
    GatewayError,
    InvalidRequestError,
    RateLimitedError,
    UpstreamAuthFailedError,
    UpstreamError,
    UpstreamTimeoutError,
)
from gw.execution.attempt_log import AttemptLog
from gw.execution.engine import Engine
from gw.execution.execution_plan import ExecutionFailedError, ExecutionPlan
from gw.execution.gateway import Gateway
from gw.execution.health import HealthBook
from gw.execution.latency import LatencyBook
from gw.execution.open_stream import OpenStream
from gw.execution.request_context import RequestContext
from gw.ir import (
    ChatRequest,
    ChatResponse,
    Finish,
    StreamEvent,
    StreamStart,
    TextDelta,
    TextPart,
    UserMessage,
)
from gw.ports import UpstreamCall
from gw.record import TraceRecord
from gw.routing.router import decide

CONFIG = """
providers: [{name: a, kind: mock}, {name: b, kind: mock}]
routes:
  - name: r
    targets: [{provider: a, model: m1, priority: 1}, {provider: b, model: m2, priority: 2}]
policies:
  - name: p
    match: {routes: [r]}
    retry: {max_attempts: 2, initial_backoff: 100ms, multiplier: 2}
    timeout: {per_attempt: 200ms, first_token: 200ms, stream_idle: 200ms}
"""

# A stream step is a list of events, errors to raise, and pauses (seconds, really slept).
StreamItem = StreamEvent | GatewayError | float
Step = GatewayError | ChatResponse | list[StreamItem] | Callable[[], Any]


class ScriptedUpstream:
    """Answers each call with the next scripted step: an error, an answer, or a stream."""

    def __init__(self, steps: list[Step]) -> None:
        self.steps = steps
        self.calls: list[UpstreamCall] = []

    def _next(self, call: UpstreamCall) -> Step:
        self.calls.append(call)
        return self.steps.pop(0)

    async def complete(self, call: UpstreamCall) -> ChatResponse:
        step = self._next(call)
        if isinstance(step, GatewayError):
            raise step
        if callable(step):
            await step()
        assert isinstance(step, ChatResponse)
        return step

    async def stream(self, call: UpstreamCall) -> AsyncIterator[StreamEvent]:
        step = self._next(call)
        if isinstance(step, GatewayError):
            raise step
        assert isinstance(step, list)
        for item in step:
            if isinstance(item, GatewayError):
                raise item
            if isinstance(item, float):
                await asyncio.sleep(item)
                continue
            yield item


class Directory:
    def __init__(self, upstreams: dict[str, ScriptedUpstream]) -> None:
        self.upstreams = upstreams

    def upstream_for(self, provider: ProviderConfig) -> ScriptedUpstream:
        return self.upstreams[provider.name]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now


def plan(**policy_changes: Any) -> ExecutionPlan:
    snapshot = compile_snapshot(load_config(CONFIG, "t.yaml"), revision=1, source="t")
    request = ChatRequest(model="r", messages=(UserMessage(content=(TextPart(text="hi"),)),))
    decision, policy = decide(request, snapshot, request_id="req_test")
    policy = msgspec.structs.replace(policy, **policy_changes)
    return ExecutionPlan(
        request_id="req_test", request=request, decision=decision, policy=policy,
        providers=snapshot.providers,
    )  # fmt: skip


def answer(text: str = "ok") -> ChatResponse:
    return ChatResponse(id="x", model="m", text=text)


def run_engine(a: list[Step], b: list[Step], call: str = "complete", **changes: Any) -> Any:
    upstreams = {"a": ScriptedUpstream(a), "b": ScriptedUpstream(b)}
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    clock = FakeClock()
    engine = Engine(Directory(upstreams), clock, sleep)

    async def go() -> Any:
        if call == "complete":
            return await engine.complete(plan(**changes), AttemptLog(clock))
        opened = await engine.open_stream(plan(**changes), AttemptLog(clock))
        events = [event async for event in opened.events()]
        return opened, events

    return asyncio.run(go()), upstreams, slept


def test_retry_then_answer_on_the_same_target() -> None:
    result, upstreams, slept = run_engine([UpstreamError("boom"), answer()], [])
    assert result.target.key == "a/m1"
    assert [a.outcome for a in result.attempts] == ["retried", "answered"]
    assert len(slept) == 1
    assert 0.05 <= slept[0] <= 0.1  # 100 ms backoff with jitter in [0.5, 1)
    assert result.attempts[1].backoff_ms == pytest.approx(slept[0] * 1000, abs=0.001)
    assert upstreams["a"].calls[0].request.model == "m1"


def test_retry_after_is_a_floor_for_the_backoff() -> None:
    _, _, slept = run_engine([RateLimitedError("slow down", retry_after=3.0), answer()], [])
    assert slept == [3.0]


def test_fallback_after_retries_are_used_up() -> None:
    result, upstreams, _ = run_engine([UpstreamError("x"), UpstreamError("y")], [answer("b")])
    assert result.target.key == "b/m2"
    assert [(a.provider, a.outcome) for a in result.attempts] == [
        ("a", "retried"), ("a", "fell_back"), ("b", "answered"),
    ]  # fmt: skip
    assert upstreams["b"].calls[0].request.model == "m2"


def test_auth_failure_is_not_retried_but_falls_back() -> None:
    result, _, slept = run_engine([UpstreamAuthFailedError("bad key")], [answer()])
    assert [a.outcome for a in result.attempts] == ["fell_back", "answered"]
    assert slept == []


def test_client_caused_errors_never_fall_back() -> None:
    with pytest.raises(ExecutionFailedError) as failed:
        run_engine([InvalidRequestError("bad")], [answer()])
    assert failed.value.error.code == "invalid_request"
    assert [a.outcome for a in failed.value.attempts] == ["failed"]


def test_on_error_codes_is_exhaustive() -> None:
    changes = {
        "fallback": FallbackConfig(on_error_codes=("rate_limited",)),
        "retry": RetryConfig(max_attempts=1),
    }
    with pytest.raises(ExecutionFailedError) as failed:
        run_engine([UpstreamError("x")], [answer()], **changes)
    assert failed.value.error.code == "upstream_error"
    result, _, _ = run_engine([RateLimitedError("x")], [answer()], **changes)
    assert result.target.key == "b/m2"


def test_per_attempt_timeout_is_an_upstream_timeout() -> None:
    async def hang() -> None:
        await asyncio.Event().wait()

    result, _, _ = run_engine([hang, hang], [answer()])
    assert [(a.outcome, a.error_code) for a in result.attempts] == [
        ("retried", "upstream_timeout"), ("fell_back", "upstream_timeout"), ("answered", None),
    ]  # fmt: skip


def test_stream_failure_before_the_first_token_falls_back() -> None:
    start = StreamStart(id="s", model="m")
    a_stream: list[StreamItem] = [start, UpstreamError("dropped")]
    b_stream: list[StreamItem] = [
        start,
        TextDelta(text="hi"),
        Finish(reason="stop"),
    ]
    (opened, events), _, _ = run_engine([a_stream, a_stream], [b_stream], call="stream")
    assert opened.target.key == "b/m2"
    assert [type(e).__name__ for e in events] == ["StreamStart", "TextDelta", "Finish"]
    assert [a.outcome for a in opened.attempts] == ["retried", "fell_back", "answered"]
    assert opened.attempts[-1].ttft_ms is not None


def test_stream_failure_after_the_first_token_is_raised_not_retried() -> None:
    start = StreamStart(id="s", model="m")
    broken: list[StreamItem] = [
        start,
        TextDelta(text="partial"),
        UpstreamError("cut"),
    ]
    upstreams = {"a": ScriptedUpstream([broken]), "b": ScriptedUpstream([])}

    async def go() -> tuple[list[StreamEvent], Any]:
        clock = FakeClock()
        engine = Engine(Directory(upstreams), clock, asyncio.sleep)
        opened = await engine.open_stream(plan(), AttemptLog(clock))
        seen: list[StreamEvent] = []

        async def consume() -> None:
            async for event in opened.events():
                seen.append(event)

        with pytest.raises(UpstreamError):
            await consume()
        return seen, opened

    seen, opened = asyncio.run(go())
    assert [type(e).__name__ for e in seen] == ["StreamStart", "TextDelta"]
    assert [a.outcome for a in opened.attempts] == ["failed"]
    assert upstreams["b"].calls == []


READINGS = ["events", "relay", "relay, client pausing"]


async def read_all(opened: OpenStream, reading: str, seen: list[Any]) -> None:
    """Every event's type name into ``seen``, read one by one (``events``) or pushed
    (``relay``; the client pausing takes no more after every batch, until a flush)."""
    if reading == "events":
        async for event in opened.events():
            seen.append(type(event).__name__)
        return
    flushed: list[int] = []

    def deliver(events: list[StreamEvent]) -> bool:
        seen.extend(type(event).__name__ for event in events)
        return reading == "relay"

    async def flush() -> None:
        flushed.append(len(seen))

    await opened.relay(deliver, flush)
    if reading != "relay":
        assert flushed, "a client that takes no more is flushed before more is pushed"


def consume_stream(stream: list[StreamItem], reading: str) -> tuple[list[Any], Any]:
    """Open a stream on target a (stream_idle 200 ms), read it all; events, attempts, error."""
    upstreams = {"a": ScriptedUpstream([stream]), "b": ScriptedUpstream([])}

    async def go() -> tuple[list[Any], Any]:
        clock = FakeClock()
        engine = Engine(Directory(upstreams), clock, asyncio.sleep)
        opened = await engine.open_stream(plan(), AttemptLog(clock))
        seen: list[Any] = []
        try:
            await read_all(opened, reading, seen)
        except GatewayError as error:
            seen.append(error)
        return seen, opened.attempts

    return asyncio.run(go())


@pytest.mark.parametrize("reading", READINGS)
def test_a_stream_silent_for_longer_than_stream_idle_after_the_commit_times_out(
    reading: str,
) -> None:
    start = StreamStart(id="s", model="m")
    seen, attempts = consume_stream([start, TextDelta(text="a"), 0.5, TextDelta(text="b")], reading)
    assert isinstance(seen[-1], UpstreamTimeoutError)
    assert "stream_idle" in seen[-1].message
    assert [(a.outcome, a.error_code) for a in attempts] == [("failed", "upstream_timeout")]


@pytest.mark.parametrize("reading", READINGS)
def test_stream_idle_bounds_each_gap_not_the_sum_of_gaps(reading: str) -> None:
    # Six gaps of 50 ms: each well under stream_idle (200 ms), together over it.
    start = StreamStart(id="s", model="m")
    stream: list[StreamItem] = [start, TextDelta(text="a")]
    for _ in range(6):
        stream += [0.05, TextDelta(text="b")]
    seen, attempts = consume_stream([*stream, Finish(reason="stop")], reading)
    assert seen == ["StreamStart", *["TextDelta"] * 7, "Finish"]
    assert [a.outcome for a in attempts] == ["answered"]


@pytest.mark.parametrize("reading", READINGS)
def test_a_failure_after_the_commit_fails_the_attempt_however_it_is_read(reading: str) -> None:
    start = StreamStart(id="s", model="m")
    seen, attempts = consume_stream(
        [start, TextDelta(text="a"), TextDelta(text="b"), UpstreamError("cut")], reading
    )
    assert seen[:3] == ["StreamStart", "TextDelta", "TextDelta"]
    assert isinstance(seen[3], UpstreamError)
    assert [(a.outcome, a.error_code) for a in attempts] == [("failed", "upstream_error")]


def test_a_client_slow_to_take_the_frames_is_not_an_upstream_silence() -> None:
    start, finish = StreamStart(id="s", model="m"), Finish(reason="stop")
    upstreams = {"a": ScriptedUpstream([[start, TextDelta(text="a"), finish]])}

    async def go() -> Any:
        clock = FakeClock()
        engine = Engine(Directory(upstreams), clock, asyncio.sleep)
        opened = await engine.open_stream(plan(), AttemptLog(clock))

        async def flush() -> None:
            await asyncio.sleep(0.3)  # the client drains slower than stream_idle (200 ms)

        await opened.relay(lambda events: False, flush)
        return opened.attempts

    assert [a.outcome for a in asyncio.run(go())] == ["answered"]


def test_an_adapter_bug_is_an_internal_error_attempt_not_a_crash() -> None:
    async def explode() -> None:
        raise KeyError("secret prompt text")

    with pytest.raises(ExecutionFailedError) as failed:
        run_engine([explode], [answer()])
    assert failed.value.error.code == "internal_error"
    assert failed.value.error.blame == "gateway"
    assert "secret prompt text" not in failed.value.error.message
    assert [a.outcome for a in failed.value.attempts] == ["failed"]


def test_a_stream_session_never_read_is_traced_as_aborted_and_closed() -> None:
    closed: list[bool] = []

    class ClosingUpstream(ScriptedUpstream):
        async def stream(self, call: UpstreamCall) -> AsyncIterator[StreamEvent]:
            try:
                async for event in super().stream(call):
                    yield event
            finally:
                closed.append(True)

    start = StreamStart(id="s", model="m")
    upstream = ClosingUpstream([[start, TextDelta(text="a"), TextDelta(text="b")]])
    submitted: list[TraceRecord] = []

    class Traces:
        def submit(self, trace: TraceRecord) -> None:
            submitted.append(trace)

    async def go() -> None:
        clock = FakeClock()
        engine = Engine(Directory({"a": upstream, "b": ScriptedUpstream([])}), clock, asyncio.sleep)
        gateway = Gateway(engine, Traces(), clock)
        snapshot = compile_snapshot(load_config(CONFIG, "t.yaml"), revision=1, source="t")
        ctx = RequestContext(
            request_id="req_s", snapshot=snapshot, endpoint="chat.completions",
            started_at=1000.0, started_mono=1000.0,
        )  # fmt: skip
        request = ChatRequest(
            model="r", messages=(UserMessage(content=(TextPart(text="hi"),)),), stream=True
        )
        session = await gateway.open_stream(ctx, request)
        await session.close()
        await session.close()  # idempotent

    asyncio.run(go())
    assert closed == [True]
    (trace,) = submitted
    assert (trace.status, trace.error_code) == (499, "client_aborted")
    assert [a.outcome for a in trace.attempts] == ["aborted"]


def test_health_is_fed_by_attempts_and_a_half_open_trial_is_claimed_once() -> None:
    config = load_config(
        CONFIG + "health: {degraded_after: 2, unhealthy_after: 2, cooldown: 1s}", "t.yaml"
    )
    snapshot = compile_snapshot(config, revision=1, source="t")
    clock = FakeClock()
    book = HealthBook(config.health)
    upstreams = {
        "a": ScriptedUpstream([UpstreamError("x"), UpstreamError("y"), answer("from a")]),
        "b": ScriptedUpstream([answer("from b")] * 4),
    }

    async def sleep(seconds: float) -> None:
        del seconds

    engine = Engine(Directory(upstreams), clock, sleep, health=book)
    gateway = Gateway(engine, _NoTraces(), clock, health=book)

    def ctx(request_id: str) -> RequestContext:
        return RequestContext(
            request_id=request_id, snapshot=snapshot, endpoint="chat.completions",
            started_at=1000.0, started_mono=1000.0,
        )  # fmt: skip

    request = ChatRequest(model="r", messages=(UserMessage(content=(TextPart(text="hi"),)),))

    async def go() -> list[str | None]:
        first = await gateway.complete(ctx("req_1"), request)  # a fails twice: breaker opens
        skipped = await gateway.complete(ctx("req_2"), request)  # a is not called
        clock.now += 2  # the cooldown lapses: two requests plan at once
        plan_one = (await gateway._plan(ctx("req_3"), request))[1]
        plan_two = (await gateway._plan(ctx("req_4"), request))[1]
        assert [t.key for t in plan_one.decision.chain] == ["a/m1", "b/m2"]
        assert plan_one.trials == {"a/m1"}
        assert [t.key for t in plan_two.decision.chain] == ["b/m2"]  # the trial is taken
        trial = await engine.complete(plan_one, AttemptLog(clock))
        return [first.response.text, skipped.response.text, trial.response.text]

    assert asyncio.run(go()) == ["from b", "from b", "from a"]
    assert book.state("a/m1", now=clock.now).status == "healthy"  # the trial closed it
    assert len(upstreams["a"].calls) == 3


class _NoTraces:
    def submit(self, trace: TraceRecord) -> None:
        del trace


def test_lowest_latency_routes_by_what_the_engine_observed() -> None:
    config = load_config(
        CONFIG.replace("  - name: r\n", "  - name: r\n    strategy: lowest_latency\n"), "t.yaml"
    )
    snapshot = compile_snapshot(config, revision=1, source="t")
    clock = FakeClock()
    latency = LatencyBook()
    upstreams = {"a": ScriptedUpstream([answer("from a")]), "b": ScriptedUpstream([])}
    engine = Engine(Directory(upstreams), clock, asyncio.sleep, latency=latency)
    gateway = Gateway(engine, _NoTraces(), clock, latency=latency)
    ctx = RequestContext(
        request_id="req_l", snapshot=snapshot, endpoint="chat.completions",
        started_at=1000.0, started_mono=1000.0,
    )  # fmt: skip
    request = ChatRequest(model="r", messages=(UserMessage(content=(TextPart(text="hi"),)),))

    async def go() -> None:
        await gateway.complete(ctx, request)  # nothing observed yet: priority order, a answers

    asyncio.run(go())
    assert set(latency.view(streaming=False)) == {"a/m1"}  # the answer was timed
    latency.record("a/m1", 500.0, streaming=False)
    latency.record("b/m2", 5.0, streaming=False)
    plan = asyncio.run(gateway._plan(ctx, request))[1]
    assert [t.key for t in plan.decision.chain] == ["b/m2", "a/m1"]
    streaming = asyncio.run(gateway._plan(ctx, msgspec.structs.replace(request, stream=True)))[1]
    assert [t.key for t in streaming.decision.chain] == ["a/m1", "b/m2"]  # no first-token data

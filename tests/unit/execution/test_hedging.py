"""Hedging through the engine: the rest of the chain races a slow first target.

No timing is asserted: a slow upstream waits on an event that only the test (or the other
lane's outcome) sets, so which lane answers first is decided by the script, not the clock.
"""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest
from unit.execution.test_engine import Directory, FakeClock, answer, plan

from gw.config.schema import HedgeConfig, RetryConfig, TimeoutConfig
from gw.config.units import Duration
from gw.errors import GatewayError, InvalidRequestError, UpstreamError
from gw.execution.attempt_log import AttemptLog
from gw.execution.engine import Engine
from gw.execution.execution_plan import ExecutionFailedError
from gw.ir import ChatResponse, StreamEvent, TextDelta
from gw.ports import UpstreamCall


class Gated:
    """Answers (or fails) once ``gate`` is set; records being cancelled while waiting."""

    def __init__(self, outcome: ChatResponse | GatewayError, gate: asyncio.Event | None) -> None:
        self.outcome = outcome
        self.gate = gate
        self.calls: list[UpstreamCall] = []
        self.called = asyncio.Event()
        self.cancelled = False

    async def complete(self, call: UpstreamCall) -> ChatResponse:
        self.calls.append(call)
        self.called.set()
        if self.gate is not None:
            try:
                await self.gate.wait()
            except asyncio.CancelledError:
                self.cancelled = True
                raise
        if isinstance(self.outcome, GatewayError):
            raise self.outcome
        return self.outcome

    async def stream(self, call: UpstreamCall) -> Any:
        self.calls.append(call)
        yield TextDelta(text="streamed")


def hedged_plan(after: float = 0.01) -> Any:
    # One call per target and the default (minutes-long) timeouts: only the script decides.
    policy_plan = plan(retry=RetryConfig(max_attempts=1), timeout=TimeoutConfig())
    policy = msgspec.structs.replace(policy_plan.policy, hedge=HedgeConfig(after=Duration(after)))
    return msgspec.structs.replace(policy_plan, policy=policy)


def run(a: Gated, b: Gated, after: float = 0.01, release: Any = None) -> Any:
    async def go() -> Any:
        clock = FakeClock()
        engine = Engine(Directory({"a": a, "b": b}), clock, asyncio.sleep)  # type: ignore[dict-item]
        work = asyncio.ensure_future(engine.complete(hedged_plan(after), AttemptLog(clock)))
        if release is not None:
            await release()
        return await work

    return asyncio.run(go())


def outcomes(attempts: Any) -> list[tuple[str, str, bool]]:
    return sorted((a.provider, a.outcome, a.hedge) for a in attempts)


def test_the_hedge_answers_while_the_first_target_hangs() -> None:
    a, b = Gated(answer("a"), asyncio.Event()), Gated(answer("b"), None)
    result = run(a, b)
    assert result.response.text == "b"
    assert outcomes(result.attempts) == [("a", "hedge_lost", False), ("b", "answered", True)]
    assert a.cancelled  # the loser's upstream call was cancelled, not left running


def test_an_answer_before_the_delay_starts_no_hedge() -> None:
    a, b = Gated(answer("a"), None), Gated(answer("b"), None)
    result = run(a, b, after=60.0)
    assert result.response.text == "a"
    assert b.calls == []


def test_an_early_failure_falls_back_without_hedging() -> None:
    a = Gated(UpstreamError("boom"), None)
    b = Gated(answer("b"), None)
    result = run(a, b, after=60.0)
    assert result.response.text == "b"
    assert ("b", "answered", False) in outcomes(result.attempts)


def test_the_first_target_still_wins_when_the_hedge_fails() -> None:
    gate = asyncio.Event()
    a = Gated(answer("a"), gate)
    b = Gated(UpstreamError("hedge boom"), None)

    async def release() -> None:
        await b.called.wait()
        gate.set()

    result = run(a, b, release=release)
    assert result.response.text == "a"
    assert ("a", "answered", False) in outcomes(result.attempts)
    hedge = next(x for x in result.attempts if x.provider == "b")
    assert hedge.hedge
    assert hedge.outcome in {"failed", "hedge_lost"}  # failed, unless a answered first


def test_a_request_error_on_the_first_target_ends_the_request_and_cancels_the_hedge() -> None:
    gate = asyncio.Event()
    a = Gated(InvalidRequestError("bad"), gate)
    b = Gated(answer("b"), asyncio.Event())  # the hedge hangs

    async def release() -> None:
        await b.called.wait()
        gate.set()

    with pytest.raises(ExecutionFailedError) as failed:
        run(a, b, release=release)
    assert failed.value.error.code == "invalid_request"
    assert outcomes(failed.value.attempts) == [("a", "failed", False), ("b", "hedge_lost", True)]
    assert b.cancelled


def test_both_failing_report_the_rest_of_the_chain() -> None:
    a = Gated(UpstreamError("a boom"), asyncio.Event())
    b = Gated(UpstreamError("b boom"), None)

    async def release() -> None:
        await b.called.wait()
        assert a.gate is not None
        a.gate.set()

    with pytest.raises(ExecutionFailedError) as failed:
        run(a, b, release=release)
    assert failed.value.error.message.startswith("b boom")


def test_streams_are_never_hedged() -> None:
    a, b = Gated(answer("a"), None), Gated(answer("b"), None)

    async def go() -> list[StreamEvent]:
        clock = FakeClock()
        engine = Engine(Directory({"a": a, "b": b}), clock, asyncio.sleep)  # type: ignore[dict-item]
        opened = await engine.open_stream(hedged_plan(0.0001), AttemptLog(clock))
        return [event async for event in opened.events()]

    events = asyncio.run(go())
    assert events == [TextDelta(text="streamed")]
    assert b.calls == []

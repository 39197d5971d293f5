"""A request pinned to one provider's account (previous_response_id): the gateway keeps the
chain on that provider, the engine on that account; the upstream's answer id is recorded."""

from __future__ import annotations

import asyncio
from typing import Any

from unit.execution.test_accounts import snapshot
from unit.execution.test_engine import Directory, FakeClock, ScriptedUpstream, answer

from gw.config.schema import HealthConfig
from gw.errors import RateLimitedError
from gw.execution.accounts import AccountBook, AccountPin
from gw.execution.engine import Engine
from gw.execution.gateway import Gateway
from gw.execution.request_context import Completed, RequestContext, RequestFailedError
from gw.ir import ChatRequest, ChatResponse, StreamStart, TextDelta, TextPart, UserMessage
from gw.record import TraceRecord


class Traces:
    def __init__(self) -> None:
        self.traces: list[TraceRecord] = []

    def submit(self, trace: TraceRecord) -> None:
        self.traces.append(trace)


def run(pin: AccountPin | None, a: list[Any], b: list[Any]) -> tuple[Any, dict[str, Any], Traces]:
    snap = snapshot()
    upstreams = {"a": ScriptedUpstream(a), "b": ScriptedUpstream(b)}
    clock, traces = FakeClock(), Traces()

    async def sleep(seconds: float) -> None:
        del seconds

    book = AccountBook(HealthConfig())
    engine = Engine(Directory(upstreams), clock, sleep, accounts=book)
    gateway = Gateway(engine, traces, clock, accounts=book)
    ctx = RequestContext(
        request_id="req_pin", snapshot=snap, endpoint="responses",
        started_at=1000.0, started_mono=1000.0, pin=pin,
    )  # fmt: skip
    request = ChatRequest(model="r", messages=(UserMessage(content=(TextPart(text="hi"),)),))

    async def go() -> Completed:
        return await gateway.complete(ctx, request)

    try:
        return asyncio.run(go()), upstreams, traces
    except RequestFailedError as failed:
        return failed, upstreams, traces


def test_the_pinned_account_alone_serves_and_the_upstream_id_is_recorded() -> None:
    reply = ChatResponse(id="resp_upstream_1", model="m1", text="ok")
    done, upstreams, traces = run(AccountPin(provider="a", account="three"), [reply], [])
    assert [call.account for call in upstreams["a"].calls] == ["three"]
    attempt = done.trace.attempts[0]
    assert (attempt.account, attempt.upstream_response_id) == ("three", "resp_upstream_1")
    assert any("previous_response_id" in note for note in done.trace.decision.notes)
    assert traces.traces == [done.trace]


def test_a_pinned_account_that_is_rate_limited_is_not_swapped_for_another() -> None:
    """Another account of the provider cannot see the stored response: no rotation, and the
    chain holds only the pinned provider's targets, so no fallback to b either."""
    limited = [RateLimitedError("429"), RateLimitedError("429")]
    failed, upstreams, _ = run(AccountPin(provider="a", account="two"), limited, [answer("b")])
    assert isinstance(failed, RequestFailedError)
    assert failed.error.code == "rate_limited"
    assert [call.account for call in upstreams["a"].calls] == ["two", "two"]
    assert upstreams["b"].calls == []


def test_without_a_pin_the_chain_and_accounts_are_as_routed() -> None:
    done, upstreams, _ = run(None, [RateLimitedError("429"), answer()], [])
    assert [call.account for call in upstreams["a"].calls] == ["one", "two"]
    assert done.trace.attempts[-1].upstream_response_id == "x"


def test_a_pin_on_a_provider_the_route_lacks_is_the_clients_error_naming_the_way_out() -> None:
    failed, upstreams, traces = run(AccountPin(provider="elsewhere", account="default"), [], [])
    assert isinstance(failed, RequestFailedError)
    assert failed.error.code == "invalid_request"
    assert failed.error.param == "previous_response_id"
    assert "send the whole conversation as input" in failed.error.message
    assert upstreams["a"].calls == upstreams["b"].calls == []
    assert traces.traces[0].error_code == "invalid_request"


def test_a_streams_upstream_id_comes_from_its_start_event() -> None:
    snap = snapshot()
    events = [StreamStart(id="resp_streamed", model="m1"), TextDelta(text="hi")]
    upstreams = {"a": ScriptedUpstream([events]), "b": ScriptedUpstream([])}
    clock, traces = FakeClock(), Traces()
    gateway = Gateway(Engine(Directory(upstreams), clock, asyncio.sleep), traces, clock)
    ctx = RequestContext(
        request_id="req_s", snapshot=snap, endpoint="responses",
        started_at=1000.0, started_mono=1000.0,
    )  # fmt: skip
    request = ChatRequest(
        model="r", messages=(UserMessage(content=(TextPart(text="hi"),)),), stream=True
    )

    async def go() -> None:
        session = await gateway.open_stream(ctx, request)
        async for _ in session.events():
            pass
        await session.close()

    asyncio.run(go())
    assert traces.traces[-1].attempts[-1].upstream_response_id == "resp_streamed"

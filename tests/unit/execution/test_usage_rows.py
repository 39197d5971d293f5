"""The gateway's usage rows: one per routed request, from the same data as its trace."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gw.config import compile_snapshot, load_config
from gw.config.schema import ProviderConfig
from gw.errors import InvalidRequestError, UpstreamError
from gw.execution.engine import Engine
from gw.execution.gateway import Gateway
from gw.execution.request_context import RequestContext, RequestFailedError
from gw.execution.usage_row import usage_row
from gw.ir import (
    ChatRequest,
    ChatResponse,
    Finish,
    StreamEvent,
    StreamStart,
    TextDelta,
    TextPart,
    Usage,
    UsageEvent,
    UserMessage,
)
from gw.ports import UpstreamCall, UsageRow
from gw.record import TraceRecord

CONFIG = """
providers: [{name: a, kind: mock}]
models:
  - {provider: a, model: m1, input_per_mtok: 1.0, output_per_mtok: 4.0, cached_input_per_mtok: 0.5}
routes:
  - {name: r, targets: [{provider: a, model: m1}]}
policies:
  - {name: p, match: {routes: [r]}, retry: {max_attempts: 1}}
tenants:
  - {name: team-a}
"""
SNAPSHOT = compile_snapshot(load_config(CONFIG, "t.yaml"), revision=3, source="t")
NOW = 1_773_583_323.0  # 2026-03-15T14:02:03Z
HI = (UserMessage(content=(TextPart(text="hello there"),)),)


class Upstream:
    def __init__(self, *steps: ChatResponse | list[StreamEvent | Exception] | Exception) -> None:
        self.steps = list(steps)

    async def complete(self, call: UpstreamCall) -> ChatResponse:
        step = self.steps.pop(0)
        if isinstance(step, Exception):
            raise step
        assert isinstance(step, ChatResponse)
        return step

    async def stream(self, call: UpstreamCall) -> AsyncIterator[StreamEvent]:
        step = self.steps.pop(0)
        assert isinstance(step, list)
        for item in step:
            if isinstance(item, Exception):
                raise item
            yield item


class Directory:
    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream

    def upstream_for(self, provider: ProviderConfig) -> Upstream:
        return self.upstream


class Clock:
    def time(self) -> float:
        return NOW

    def monotonic(self) -> float:
        return 50.0


class Sinks:
    """A trace sink and a usage sink that keep what they get."""

    def __init__(self) -> None:
        self.traces: list[TraceRecord] = []
        self.rows: list[UsageRow] = []
        self.room_waits = 0

    def submit(self, item: Any) -> None:
        (self.rows if isinstance(item, UsageRow) else self.traces).append(item)

    async def wait_for_room(self) -> None:
        self.room_waits += 1


def gateway(upstream: Upstream, sinks: Sinks) -> Gateway:
    clock = Clock()
    engine = Engine(Directory(upstream), clock, asyncio.sleep)
    return Gateway(engine, sinks, clock, usage=sinks)


def context(request_id: str = "req_u1") -> RequestContext:
    return RequestContext(
        request_id=request_id,
        snapshot=SNAPSHOT,
        endpoint="chat.completions",
        started_at=NOW,
        started_mono=50.0,
        tenant="team-a",
        key_id="key_abc",
    )


def test_an_answer_gets_one_row_with_the_traces_tokens_and_cost() -> None:
    usage = Usage(input_tokens=1000, output_tokens=200, cached_input_tokens=400)
    sinks = Sinks()
    answer = ChatResponse(id="x", model="m1", text="hi", usage=usage)
    completed = asyncio.run(
        gateway(Upstream(answer), sinks).complete(context(), ChatRequest(model="r", messages=HI))
    )
    (row,) = sinks.rows
    assert sinks.room_waits == 1
    assert row == UsageRow(
        request_id="req_u1",
        time=NOW,
        day="d:2026-03-15",
        month="m:2026-03",
        tenant="team-a",
        key_id="key_abc",
        route="r",
        provider="a",
        model="m1",
        status=200,
        error_code=None,
        input_tokens=1000,
        output_tokens=200,
        cached_input_tokens=400,
        cost_usd=(600 * 1.0 + 400 * 0.5 + 200 * 4.0) / 1e6,
        usage_source="provider",
        policy="p",  # the policy that decided it, for its budget
    )
    assert row.cost_usd == completed.trace.cost_usd


def test_a_failed_request_after_routing_gets_a_row_with_its_error() -> None:
    sinks = Sinks()
    with pytest.raises(RequestFailedError):
        asyncio.run(
            gateway(Upstream(UpstreamError("boom")), sinks).complete(
                context(), ChatRequest(model="r", messages=HI)
            )
        )
    (row,) = sinks.rows
    assert (row.status, row.error_code, row.input_tokens, row.cost_usd) == (
        502,
        "upstream_error",
        0,
        None,
    )


def test_requests_refused_before_routing_get_no_row() -> None:
    sinks = Sinks()
    gw = gateway(Upstream(), sinks)
    gw.reject(context("req_bad"), InvalidRequestError("bad body"), stream=False)
    with pytest.raises(RequestFailedError):
        asyncio.run(gw.complete(context("req_404"), ChatRequest(model="nope", messages=HI)))
    assert [t.request_id for t in sinks.traces] == ["req_bad", "req_404"]
    assert sinks.rows == []
    assert all(usage_row(trace) is None for trace in sinks.traces)


def stream_through(events: list[StreamEvent | Exception]) -> UsageRow:
    sinks = Sinks()
    gw = gateway(Upstream(events), sinks)

    async def go() -> None:
        request = ChatRequest(model="r", messages=HI, stream=True)
        session = await gw.open_stream(context(), request)
        with contextlib.suppress(UpstreamError):
            async for _event in session.events():
                pass

    asyncio.run(go())
    (row,) = sinks.rows
    return row


def test_a_whole_stream_keeps_the_providers_counts() -> None:
    row = stream_through(
        [
            StreamStart(id="s", model="m1"),
            TextDelta(text="Hello there, friend"),
            Finish(reason="stop"),
            UsageEvent(usage=Usage(input_tokens=12, output_tokens=5)),
        ]
    )
    assert (row.usage_source, row.input_tokens, row.output_tokens) == ("provider", 12, 5)
    assert row.cost_usd == (12 * 1.0 + 5 * 4.0) / 1e6


def test_a_stream_cut_short_says_its_counts_are_an_estimate() -> None:
    # Anthropic-like: the input count arrives first, the output count never does.
    row = stream_through(
        [
            StreamStart(id="s", model="m1"),
            UsageEvent(usage=Usage(input_tokens=40, output_tokens=1)),
            TextDelta(text="x" * 400),
            UpstreamError("connection dropped"),
        ]
    )
    assert (row.status, row.error_code) == (502, "upstream_error")
    assert row.usage_source == "estimate"
    assert row.input_tokens == 40  # what the provider reported stays
    assert row.output_tokens == 100  # raised to gw's estimate of 400 characters
    assert row.cost_usd == (40 * 1.0 + 100 * 4.0) / 1e6


def test_a_stream_cut_before_any_usage_is_estimated_whole() -> None:
    row = stream_through(
        [StreamStart(id="s", model="m1"), TextDelta(text="abcdefgh"), UpstreamError("cut")]
    )
    assert row.usage_source == "estimate"
    assert row.input_tokens > 0
    assert row.output_tokens == 2


def test_the_trace_and_the_row_name_the_gateway_that_served_them() -> None:
    sinks = Sinks()
    clock = Clock()
    answer = ChatResponse(id="x", model="m1", text="hi", usage=Usage(input_tokens=1))
    served = Gateway(
        Engine(Directory(Upstream(answer)), clock, asyncio.sleep),
        sinks,
        clock,
        usage=sinks,
        gateway="gw-a",
    )
    completed = asyncio.run(served.complete(context(), ChatRequest(model="r", messages=HI)))
    assert completed.trace.gateway == "gw-a"
    (row,) = sinks.rows
    assert row.gateway == "gw-a"

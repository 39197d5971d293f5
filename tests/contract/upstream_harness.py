"""Drive any adapter the way the engine does: through ``AdapterDirectory``, one call per loop.

HTTP clients are bound to the event loop that first used them, so every call here builds a
fresh transport inside its own ``asyncio.run``; the tests themselves stay synchronous. The
transport kind (builtin or httpx) is chosen per test by the ``transport`` fixture.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from gw.adapters.directory import AdapterDirectory
from gw.config.schema import ProviderConfig
from gw.errors import GatewayError
from gw.ir import (
    ChatRequest,
    ChatResponse,
    EmbeddingRequest,
    EmbeddingResponse,
    Finish,
    StreamEvent,
    StreamStart,
    TextDelta,
    TextPart,
    ToolCallDelta,
    ToolDefinition,
    UsageEvent,
    UserMessage,
)
from gw.ports import AttemptTimeouts, EmbeddingCall, EmbeddingUpstream, UpstreamCall
from gw.upstream_http.h1_transport import BuiltinTransport
from gw.upstream_http.http_transport import HttpTransport
from gw.upstream_http.httpx_transport import HttpxTransport

TRANSPORT_KINDS = ("builtin", "httpx")
KEY_VARIABLE = "GW_CONTRACT_KEY"
_transport_kind = ["builtin"]


def use_transport(kind: str) -> None:
    """Which transport the following calls build (set by the ``transport`` fixture)."""
    _transport_kind[0] = kind


def new_transport() -> HttpTransport:
    if _transport_kind[0] == "httpx":
        return HttpxTransport()
    return BuiltinTransport()


ENVIRON: Mapping[str, str] = {KEY_VARIABLE: "sk-contract-0123456789abcdef"}
TIMEOUTS = AttemptTimeouts(connect=2.0, read=5.0)
WEATHER_TOOL = ToolDefinition(
    name="get_weather",
    description="Current weather for a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


class StreamOutcome(NamedTuple):
    """What a stream yielded, and the gw error that ended it early (None when it finished)."""

    events: list[StreamEvent]
    error: GatewayError | None


def chat_request(
    text: str = "What is a gateway?",
    *,
    model: str = "gpt-4o-mini",
    tools: Sequence[ToolDefinition] = (),
    max_tokens: int | None = None,
) -> ChatRequest:
    return ChatRequest(
        model=model,
        messages=(UserMessage(content=(TextPart(text=text),)),),
        tools=tuple(tools),
        max_tokens=max_tokens,
    )


def upstream_call(
    provider: ProviderConfig, request: ChatRequest, *, timeouts: AttemptTimeouts = TIMEOUTS
) -> UpstreamCall:
    return UpstreamCall(
        request_id="req-contract",
        provider=provider,
        request=request,
        account=None,
        timeouts=timeouts,
    )


def run_complete(
    provider: ProviderConfig,
    request: ChatRequest,
    *,
    environ: Mapping[str, str] = ENVIRON,
    timeouts: AttemptTimeouts = TIMEOUTS,
) -> ChatResponse:
    """``complete()`` on the adapter the directory picks for ``provider``; errors propagate."""

    async def inner() -> ChatResponse:
        transport = new_transport()
        try:
            upstream = AdapterDirectory(transport, environ).upstream_for(provider)
            return await upstream.complete(upstream_call(provider, request, timeouts=timeouts))
        finally:
            await transport.close()

    return asyncio.run(inner())


def run_stream(
    provider: ProviderConfig,
    request: ChatRequest,
    *,
    environ: Mapping[str, str] = ENVIRON,
    timeouts: AttemptTimeouts = TIMEOUTS,
) -> StreamOutcome:
    """Drain ``stream()``; a ``GatewayError`` from the iterator is returned with the events
    yielded before it. Any other exception propagates: adapters may raise only gw errors.
    """

    async def inner() -> StreamOutcome:
        events: list[StreamEvent] = []
        transport = new_transport()
        try:
            upstream = AdapterDirectory(transport, environ).upstream_for(provider)
            async for event in upstream.stream(upstream_call(provider, request, timeouts=timeouts)):
                events.append(event)
        except GatewayError as error:
            return StreamOutcome(events, error)
        finally:
            await transport.close()
        return StreamOutcome(events, None)

    return asyncio.run(inner())


def streamed_text(events: Sequence[StreamEvent]) -> str:
    return "".join(event.text for event in events if isinstance(event, TextDelta))


def streamed_arguments(events: Sequence[StreamEvent], index: int = 0) -> str:
    return "".join(
        event.arguments
        for event in events
        if isinstance(event, ToolCallDelta) and event.index == index
    )


def assert_well_formed(events: Sequence[StreamEvent]) -> None:
    """The shape ``gw.ir.events`` promises for a stream that finished: one start first,
    deltas, one finish after every delta, and usage somewhere after the start.
    """
    assert events, "the stream yielded nothing"
    assert isinstance(events[0], StreamStart), f"first event is {events[0]!r}"
    assert sum(isinstance(event, StreamStart) for event in events) == 1
    finishes = [i for i, event in enumerate(events) if isinstance(event, Finish)]
    assert len(finishes) == 1, f"expected one Finish, got {len(finishes)}"
    deltas = [i for i, event in enumerate(events) if isinstance(event, TextDelta | ToolCallDelta)]
    assert all(i < finishes[0] for i in deltas), "a delta came after Finish"
    assert any(isinstance(event, UsageEvent) for event in events), "no UsageEvent"


def run_embed(
    provider: ProviderConfig,
    request: EmbeddingRequest,
    *,
    environ: Mapping[str, str] = ENVIRON,
    timeouts: AttemptTimeouts = TIMEOUTS,
) -> EmbeddingResponse:
    """``embed()`` on the adapter the directory picks for ``provider``; errors propagate."""

    async def inner() -> EmbeddingResponse:
        transport = new_transport()
        try:
            upstream = AdapterDirectory(transport, environ).upstream_for(provider)
            assert isinstance(upstream, EmbeddingUpstream), f"{provider.kind} does not embed"
            call = EmbeddingCall(
                request_id="req-contract",
                provider=provider,
                request=request,
                account=None,
                timeouts=timeouts,
            )
            return await upstream.embed(call)
        finally:
            await transport.close()

    return asyncio.run(inner())

"""The mock provider: deterministic answers, honest usage, failures on purpose and on seed."""

from __future__ import annotations

import asyncio
import json

import pytest

from gw.adapters.mock import MockUpstream
from gw.config.schema import MockOptions, ProviderConfig
from gw.errors import (
    ERRORS_BY_CODE,
    GatewayError,
    InternalError,
    InvalidRequestError,
    OverloadedError,
    RateLimitedError,
    UpstreamAuthFailedError,
    UpstreamError,
    error_for_code,
)
from gw.ir import (
    AssistantMessage,
    ChatRequest,
    ChatResponse,
    Finish,
    Message,
    StreamEvent,
    StreamStart,
    SystemMessage,
    TextDelta,
    TextPart,
    ToolCall,
    ToolCallDelta,
    ToolChoice,
    ToolDefinition,
    ToolMessage,
    UsageEvent,
    UserMessage,
)
from gw.ports import AttemptTimeouts, UpstreamCall

PROVIDER = ProviderConfig(name="mock", kind="mock")
WEATHER = ToolDefinition(name="get_weather", parameters={"type": "object"})
TIME = ToolDefinition(name="get_time", parameters={"type": "object"})


def user(text: str) -> UserMessage:
    return UserMessage(content=(TextPart(text=text),))


def request_of(
    *messages: Message,
    tools: tuple[ToolDefinition, ...] = (),
    tool_choice: ToolChoice | None = None,
) -> ChatRequest:
    return ChatRequest(model="mock-1", messages=messages, tools=tools, tool_choice=tool_choice)


def call_of(request: ChatRequest) -> UpstreamCall:
    return UpstreamCall(
        request_id="req-1",
        provider=PROVIDER,
        request=request,
        account=None,
        timeouts=AttemptTimeouts(connect=1.0, read=1.0),
    )


def complete(mock: MockUpstream, request: ChatRequest) -> ChatResponse:
    return asyncio.run(mock.complete(call_of(request)))


def stream(mock: MockUpstream, request: ChatRequest) -> list[StreamEvent]:
    async def drain() -> list[StreamEvent]:
        return [event async for event in mock.stream(call_of(request))]

    return asyncio.run(drain())


def outcome(mock: MockUpstream) -> str:
    """``ok`` or the error code of one call, for comparing failure sequences."""
    try:
        complete(mock, request_of(user("hi")))
    except GatewayError as error:
        return error.code
    return "ok"


# --- answers -------------------------------------------------------------------------------


def test_same_request_gets_the_same_text() -> None:
    request = request_of(user("What is a gateway?"))

    first = complete(MockUpstream(None), request)
    again = complete(MockUpstream(None), request)

    assert first.text
    assert first.text == again.text
    assert first.text == complete(MockUpstream(None), request).text


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ((user("What is a gateway?"),), (user("What is a router?"),)),
        ((user("hi"),), (SystemMessage(content=(TextPart(text="Be brief."),)), user("hi"))),
    ],
    ids=["user-text", "added-system-message"],
)
def test_different_messages_get_different_text(
    one: tuple[Message, ...], other: tuple[Message, ...]
) -> None:
    mock = MockUpstream(None)

    assert complete(mock, request_of(*one)).text != complete(mock, request_of(*other)).text


def test_words_option_sets_the_answer_length() -> None:
    response = complete(MockUpstream(MockOptions(words=3)), request_of(user("hi")))

    assert response.text is not None
    assert response.text.startswith("Mock answer: ")
    assert len(response.text.removeprefix("Mock answer: ").split(" ")) == 3


def test_text_answer_has_positive_usage() -> None:
    response = complete(MockUpstream(None), request_of(user("How long is this?")))

    assert response.finish_reason == "stop"
    assert response.usage is not None
    assert response.usage.input_tokens > 0
    assert response.usage.output_tokens > 0


def test_stream_spells_out_the_complete_answer() -> None:
    request = request_of(user("Stream this"))
    response = complete(MockUpstream(None), request)

    events = stream(MockUpstream(None), request)

    assert isinstance(events[0], StreamStart)
    assert events[0].model == "mock-1"
    texts = [event.text for event in events if isinstance(event, TextDelta)]
    assert len(texts) > 1
    assert "".join(texts) == response.text
    assert events[-2:] == [Finish(reason="stop"), UsageEvent(usage=response.usage)]


# --- tool calls ----------------------------------------------------------------------------


def test_offered_tools_get_a_call_with_json_arguments() -> None:
    response = complete(MockUpstream(None), request_of(user("Weather?"), tools=(WEATHER, TIME)))

    assert response.finish_reason == "tool_calls"
    assert response.text is None
    [call] = response.tool_calls
    assert call.name == "get_weather"
    assert isinstance(json.loads(call.arguments), dict)
    assert response.usage is not None
    assert response.usage.input_tokens > 0
    assert response.usage.output_tokens > 0


def test_streamed_tool_call_matches_the_complete_one() -> None:
    request = request_of(user("Weather?"), tools=(WEATHER,))
    [call] = complete(MockUpstream(None), request).tool_calls

    events = stream(MockUpstream(None), request)

    deltas = [event for event in events if isinstance(event, ToolCallDelta)]
    assert (deltas[0].id, deltas[0].name) == (call.id, call.name)
    assert "".join(delta.arguments for delta in deltas) == call.arguments
    assert Finish(reason="tool_calls") in events


def test_named_tool_choice_picks_that_tool() -> None:
    request = request_of(
        user("Time?"), tools=(WEATHER, TIME), tool_choice=ToolChoice(mode="tool", name="get_time")
    )

    [call] = complete(MockUpstream(None), request).tool_calls

    assert call.name == "get_time"


@pytest.mark.parametrize(
    "request_",
    [
        request_of(user("Weather?"), tools=(WEATHER,), tool_choice=ToolChoice(mode="none")),
        request_of(
            user("Weather?"),
            AssistantMessage(tool_calls=(ToolCall(id="c1", name="get_weather", arguments="{}"),)),
            ToolMessage(tool_call_id="c1", content=(TextPart(text="sunny"),)),
            tools=(WEATHER,),
        ),
    ],
    ids=["tool-choice-none", "after-tool-result"],
)
def test_text_instead_of_a_tool_call(request_: ChatRequest) -> None:
    response = complete(MockUpstream(None), request_)

    assert response.tool_calls == ()
    assert response.text


# --- failures ------------------------------------------------------------------------------


def test_seeded_failure_rate_repeats_across_fresh_instances() -> None:
    options = MockOptions(failure_rate=0.5, seed=7)

    one, two = MockUpstream(options), MockUpstream(options)
    first = [outcome(one) for _ in range(24)]
    second = [outcome(two) for _ in range(24)]

    assert first == second
    assert set(first) == {"ok", "upstream_error"}, "a rate of 0.5 should both pass and fail"


def test_a_different_seed_gives_a_different_sequence() -> None:
    one = MockUpstream(MockOptions(failure_rate=0.5, seed=1))
    two = MockUpstream(MockOptions(failure_rate=0.5, seed=2))

    assert [outcome(one) for _ in range(24)] != [outcome(two) for _ in range(24)]


def test_streams_draw_from_the_same_seeded_sequence() -> None:
    options = MockOptions(failure_rate=0.5, seed=7)
    streaming, completing = MockUpstream(options), MockUpstream(options)

    def stream_outcome() -> str:
        try:
            stream(streaming, request_of(user("hi")))
        except GatewayError as error:
            return error.code
        return "ok"

    by_complete = [outcome(completing) for _ in range(12)]
    assert [stream_outcome() for _ in range(12)] == by_complete


@pytest.mark.parametrize("code", [*sorted(ERRORS_BY_CODE), "no_such_code"])
def test_fail_code_maps_through_error_for_code(code: str) -> None:
    expected = type(error_for_code(code, "expected"))
    mock = MockUpstream(MockOptions(fail_code=code))

    with pytest.raises(GatewayError) as caught:
        complete(mock, request_of(user("hi")))

    assert type(caught.value) is expected
    assert caught.value.blame == "upstream"
    if code == "no_such_code":
        assert expected is InternalError


def test_fail_code_fails_streams_before_the_first_event() -> None:
    mock = MockUpstream(MockOptions(fail_code="rate_limited"))
    seen: list[StreamEvent] = []

    async def drain() -> None:
        async for event in mock.stream(call_of(request_of(user("hi")))):
            seen.append(event)

    with pytest.raises(RateLimitedError):
        asyncio.run(drain())
    assert seen == []


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (400, InvalidRequestError),
        (401, UpstreamAuthFailedError),
        (429, RateLimitedError),
        (500, UpstreamError),
        (503, UpstreamError),
        (529, OverloadedError),
    ],
)
def test_fail_status_maps_like_an_upstream_status(
    status: int, expected: type[GatewayError]
) -> None:
    with pytest.raises(GatewayError) as caught:
        complete(MockUpstream(MockOptions(fail_status=status)), request_of(user("hi")))

    assert type(caught.value) is expected
    assert caught.value.blame == "upstream"
    assert caught.value.upstream_status == status

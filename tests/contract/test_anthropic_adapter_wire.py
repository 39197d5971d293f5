"""What only the Anthropic adapter does: the bytes it sends, its errors, its stream faults.

Every call goes through a real transport (both kinds, see conftest) to a ``FakeAnthropic``
on loopback.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any, Literal

import msgspec
import pytest

from gw.config.schema import ProviderConfig
from gw.errors import (
    ContextLengthExceededError,
    GatewayError,
    InvalidRequestError,
    NativeFeatureUnsupportedError,
    OverloadedError,
    PersistentUpstreamError,
    RateLimitedError,
    RequestTooLargeError,
    UpstreamAuthFailedError,
    UpstreamError,
    UpstreamTimeoutError,
)
from gw.ir import (
    AssistantMessage,
    ChatRequest,
    Finish,
    FinishReason,
    ImagePart,
    Reasoning,
    Sampling,
    StreamStart,
    SystemMessage,
    TextDelta,
    TextPart,
    ThinkingDelta,
    ThinkingPart,
    ToolCall,
    ToolCallDelta,
    ToolChoice,
    ToolMessage,
    Usage,
    UsageEvent,
    UserMessage,
)

from contract.upstream_harness import (
    ENVIRON,
    KEY_VARIABLE,
    WEATHER_TOOL,
    chat_request,
    run_complete,
    run_stream,
    streamed_text,
)
from fakes.anthropic_upstream import PROMPT_TOO_LONG, Behavior, FakeAnthropic, signature_for

Mode = Literal["complete", "stream"]
MODES = ["complete", "stream"]
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


@pytest.fixture(scope="module")
def fake_anthropic() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def fake(fake_anthropic: FakeAnthropic) -> FakeAnthropic:
    """The module's fake with no recorded requests, no script and the default behavior."""
    fake_anthropic.clear()
    fake_anthropic.default = Behavior()
    return fake_anthropic


def provider_for(
    base_url: str, *, api_key: str | None = f"env:{KEY_VARIABLE}", **fields: Any
) -> ProviderConfig:
    return ProviderConfig(
        name="anthropic-wire", kind="anthropic", base_url=base_url, api_key=api_key, **fields
    )


@pytest.fixture
def provider(fake: FakeAnthropic) -> ProviderConfig:
    return provider_for(fake.base_url)


def call_failing(
    mode: Mode,
    provider: ProviderConfig,
    request: ChatRequest,
    *,
    environ: Mapping[str, str] = ENVIRON,
) -> GatewayError:
    """Run one call that must fail before the first event; return its gw error."""
    if mode == "complete":
        with pytest.raises(GatewayError) as caught:
            run_complete(provider, request, environ=environ)
        return caught.value
    outcome = run_stream(provider, request, environ=environ)
    assert outcome.events == [], "a failure before the first byte must not start the stream"
    assert outcome.error is not None
    return outcome.error


def sent_body(fake: FakeAnthropic) -> dict[str, Any]:
    body: dict[str, Any] = fake.requests[-1].json
    return body


# --- the request on the wire ---------------------------------------------------------------


def test_complete_request_body_and_headers(fake: FakeAnthropic, provider: ProviderConfig) -> None:
    run_complete(provider, chat_request("Hi there", model="claude-target-7"))

    [received] = fake.requests
    assert (received.method, received.path) == ("POST", "/v1/messages")
    assert received.headers["content-type"] == "application/json"
    assert received.headers["x-api-key"] == ENVIRON[KEY_VARIABLE]
    assert received.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in received.headers
    # No limit from the client: Anthropic requires one, so gw sends its documented default.
    assert received.json == {
        "model": "claude-target-7",
        "messages": [{"role": "user", "content": "Hi there"}],
        "max_tokens": 4096,
        "stream": False,
    }


def test_stream_request_body(fake: FakeAnthropic, provider: ProviderConfig) -> None:
    run_stream(provider, chat_request(model="claude-target-7", max_tokens=64))

    received = fake.requests[-1]
    assert received.headers["x-api-key"] == ENVIRON[KEY_VARIABLE]
    assert received.json == {
        "model": "claude-target-7",
        "messages": [{"role": "user", "content": "What is a gateway?"}],
        "max_tokens": 64,
        "stream": True,
    }


def test_configured_version_headers_and_base_url(fake: FakeAnthropic) -> None:
    provider = provider_for(
        fake.base_url + "/",
        api_version="2026-10-21",
        headers={"anthropic-beta": "context-1m-2025-08-07"},
    )

    run_complete(provider, chat_request())

    received = fake.requests[-1]
    assert received.path == "/v1/messages"
    assert received.headers["anthropic-version"] == "2026-10-21"
    assert received.headers["anthropic-beta"] == "context-1m-2025-08-07"


def test_no_api_key_sends_no_x_api_key(fake: FakeAnthropic) -> None:
    run_complete(provider_for(fake.base_url, api_key=None), chat_request())

    assert "x-api-key" not in fake.requests[-1].headers


def test_full_conversation_on_the_wire(fake: FakeAnthropic, provider: ProviderConfig) -> None:
    signature = signature_for("check the weather")
    request = ChatRequest(
        model="claude-target-7",
        messages=(
            SystemMessage(content=(TextPart(text="Be brief."),)),
            UserMessage(
                content=(
                    TextPart(text="Weather here?"),
                    ImagePart(data=PNG, media_type="image/png"),
                    ImagePart(url="https://img.test/sky.jpg", detail="high"),
                )
            ),
            AssistantMessage(
                content=(
                    ThinkingPart(text="check the weather", signature=signature),
                    TextPart(text="Checking."),
                ),
                tool_calls=(
                    ToolCall(id="toolu_1", name="get_weather", arguments='{"city": "Paris"}'),
                ),
            ),
            ToolMessage(tool_call_id="toolu_1", content=(TextPart(text="18C"),)),
            ToolMessage(
                tool_call_id="toolu_2",
                content=(TextPart(text="no such city"),),
                is_error=True,
            ),
            UserMessage(content=(TextPart(text="And tomorrow?"),)),
        ),
        tools=(WEATHER_TOOL,),
        tool_choice=ToolChoice(mode="required"),
        parallel_tool_calls=False,
        sampling=Sampling(temperature=0.2, top_k=5),
        stop=("END",),
        max_tokens=2048,
        reasoning=Reasoning(budget_tokens=1024),
        user="user-7",
        extensions={"anthropic": {"service_tier": "auto", "max_tokens": 1}, "openai": {"x": 1}},
    )

    run_complete(provider, request)

    assert sent_body(fake) == {
        "model": "claude-target-7",
        "system": "Be brief.",
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Weather here?"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                    },
                    {"type": "image", "source": {"type": "url", "url": "https://img.test/sky.jpg"}},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "check the weather", "signature": signature},
                    {"type": "text", "text": "Checking."},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "get_weather",
                        "input": {"city": "Paris"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "content": "no such city",
                        "is_error": True,
                    },
                    {"type": "text", "text": "And tomorrow?"},
                ],
            },
        ],
        "max_tokens": 2048,
        "stream": False,
        "temperature": 0.2,
        "top_k": 5,
        "stop_sequences": ["END"],
        "tools": [
            {
                "name": "get_weather",
                "description": "Current weather for a city",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
            }
        ],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "metadata": {"user_id": "user-7"},
        "service_tier": "auto",
    }


@pytest.mark.parametrize(
    ("sampling", "field"),
    [
        (Sampling(seed=7), "seed"),
        (Sampling(frequency_penalty=0.5), "frequency_penalty"),
        (Sampling(presence_penalty=0.5), "presence_penalty"),
    ],
)
@pytest.mark.parametrize("mode", MODES)
def test_fields_anthropic_lacks_fail_before_sending(
    fake: FakeAnthropic, provider: ProviderConfig, mode: Mode, sampling: Sampling, field: str
) -> None:
    request = msgspec.structs.replace(chat_request(), sampling=sampling)

    error = call_failing(mode, provider, request)

    assert type(error) is NativeFeatureUnsupportedError
    assert error.param == field
    assert fake.count == 0


def test_missing_env_key_fails_before_sending(fake: FakeAnthropic) -> None:
    provider = provider_for(fake.base_url, api_key="env:GW_MISSING_KEY")

    error = call_failing("complete", provider, chat_request(), environ={})

    assert type(error) is UpstreamAuthFailedError
    assert "GW_MISSING_KEY" in error.message
    assert fake.count == 0


# --- answers -------------------------------------------------------------------------------


def test_complete_maps_thinking_tool_use_and_cache_usage(
    fake: FakeAnthropic, provider: ProviderConfig
) -> None:
    fake.enqueue(
        Behavior(
            thinking="Paris, then.",
            text="Let me look.",
            tool_call=("get_weather", '{"city": "Paris"}'),
            usage=(10, 7),
            cache=(100, 20),
        )
    )

    response = run_complete(provider, chat_request(tools=[WEATHER_TOOL]))

    assert response.id.startswith("msg_fake_")
    assert response.text == "Let me look."
    assert response.thinking == (
        ThinkingPart(text="Paris, then.", signature=signature_for("Paris, then.")),
    )
    [call] = response.tool_calls
    assert (call.name, call.arguments) == ("get_weather", '{"city":"Paris"}')
    assert call.id.startswith("toolu_fake_")
    assert response.finish_reason == "tool_calls"
    assert response.usage == Usage(
        input_tokens=130, output_tokens=7, cached_input_tokens=100, cache_write_tokens=20
    )


def test_stream_maps_thinking_text_and_tool_use(
    fake: FakeAnthropic, provider: ProviderConfig
) -> None:
    fake.enqueue(
        Behavior(
            redacted_thinking="EmwKAhgBEgy3va",
            thinking="Paris then",
            text="Looking",
            tool_call=("get_weather", '{"city": "Paris"}'),
            chunks=1,
            usage=(10, 7),
            cache=(100, 20),
        )
    )

    outcome = run_stream(provider, chat_request(tools=[WEATHER_TOOL]))

    assert outcome.error is None
    start, *middle = outcome.events
    assert isinstance(start, StreamStart)
    assert start.id.startswith("msg_fake_")
    first_usage = Usage(
        input_tokens=130, output_tokens=1, cached_input_tokens=100, cache_write_tokens=20
    )
    tool_id = next(e.id for e in middle if isinstance(e, ToolCallDelta) and e.id)
    assert middle == [
        UsageEvent(usage=first_usage),
        ThinkingDelta(redacted="EmwKAhgBEgy3va"),
        ThinkingDelta(text="Paris"),
        ThinkingDelta(text=" then"),
        ThinkingDelta(signature=signature_for("Paris then")),
        TextDelta(text="Looking"),
        ToolCallDelta(index=0, id=tool_id, name="get_weather"),
        ToolCallDelta(index=0, arguments='{"city":"Paris"}'),
        Finish(reason="tool_calls"),
        UsageEvent(usage=msgspec.structs.replace(first_usage, output_tokens=7)),
    ]


@pytest.mark.parametrize("mode", MODES)
def test_stop_sequence_is_reported(
    fake: FakeAnthropic, provider: ProviderConfig, mode: Mode
) -> None:
    fake.enqueue(Behavior(stop_sequence="END"))

    if mode == "complete":
        response = run_complete(provider, chat_request())
        assert (response.finish_reason, response.stop_sequence) == ("stop", "END")
    else:
        events = run_stream(provider, chat_request()).events
        assert Finish(reason="stop", stop_sequence="END") in events


@pytest.mark.parametrize(
    ("stop_reason", "expected"),
    [("max_tokens", "length"), ("refusal", "content_filter"), ("pause_turn", "pause")],
)
def test_stop_reasons_map_to_finish_reasons(
    fake: FakeAnthropic, provider: ProviderConfig, stop_reason: str, expected: FinishReason
) -> None:
    fake.enqueue(Behavior(stop_reason=stop_reason), Behavior(stop_reason=stop_reason))

    response = run_complete(provider, chat_request())
    events = run_stream(provider, chat_request()).events

    assert response.finish_reason == expected
    assert Finish(reason=expected) in events


# --- errors --------------------------------------------------------------------------------

# (behavior, expected class, expected retry_after)
ERROR_CASES: list[tuple[str, Behavior, type[GatewayError], float | None]] = [
    ("400", Behavior(status=400), InvalidRequestError, None),
    (
        "400 prompt too long",
        Behavior(status=400, error_message=PROMPT_TOO_LONG),
        ContextLengthExceededError,
        None,
    ),
    ("401", Behavior(status=401), UpstreamAuthFailedError, None),
    ("402", Behavior(status=402), RateLimitedError, None),
    ("403", Behavior(status=403), UpstreamAuthFailedError, None),
    ("404", Behavior(status=404), PersistentUpstreamError, None),
    ("413", Behavior(status=413), RequestTooLargeError, None),
    ("429", Behavior(status=429, headers={"retry-after": "7"}), RateLimitedError, 7.0),
    ("500", Behavior(status=500), UpstreamError, None),
    ("504", Behavior(status=504), UpstreamTimeoutError, None),
    ("529", Behavior(status=529), OverloadedError, None),
    ("529 retry-after", Behavior(status=529, headers={"retry-after": "1.5"}), OverloadedError, 1.5),
    ("503 html", Behavior(status=503, error_body={"html": "<h1>down</h1>"}), UpstreamError, None),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("error_case", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_error_answers_map_by_table(
    fake: FakeAnthropic,
    provider: ProviderConfig,
    mode: Mode,
    error_case: tuple[str, Behavior, type[GatewayError], float | None],
) -> None:
    _, behavior, expected, retry_after = error_case
    fake.enqueue(behavior)

    error = call_failing(mode, provider, chat_request())

    assert type(error) is expected
    assert error.blame == "upstream"
    assert error.upstream_status == behavior.status
    assert error.retry_after == retry_after
    if expected is UpstreamAuthFailedError:
        assert error.upstream_message is None  # an auth error's text is never copied
    elif behavior.error_body is None:
        assert error.upstream_message


def test_rate_limit_reset_header_gives_retry_after(
    fake: FakeAnthropic, provider: ProviderConfig
) -> None:
    # The wall clock only builds the header; the bounds below leave ten minutes of slack.
    iso = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
    fake.enqueue(
        Behavior(
            status=429,
            headers={
                "anthropic-ratelimit-tokens-remaining": "0",
                "anthropic-ratelimit-tokens-reset": iso,
                "anthropic-ratelimit-requests-remaining": "12",
                "anthropic-ratelimit-requests-reset": "2000-01-01T00:00:00Z",
            },
        )
    )

    error = call_failing("complete", provider, chat_request())

    assert type(error) is RateLimitedError
    assert error.retry_after is not None
    assert 3000 < error.retry_after <= 3600


# --- stream faults -------------------------------------------------------------------------


def test_overloaded_mid_stream_raises_after_the_first_deltas(
    fake: FakeAnthropic, provider: ProviderConfig
) -> None:
    fake.enqueue(Behavior(text="one two three four", error_after_chunks=2))

    outcome = run_stream(provider, chat_request())

    assert isinstance(outcome.events[0], StreamStart)
    assert streamed_text(outcome.events) == "one two"
    assert not any(isinstance(event, Finish) for event in outcome.events)
    assert type(outcome.error) is OverloadedError
    assert outcome.error.blame == "upstream"
    assert outcome.error.upstream_message == "Overloaded"


def test_drop_mid_stream_raises_upstream_error(
    fake: FakeAnthropic, provider: ProviderConfig
) -> None:
    fake.enqueue(Behavior(text="one two three four", drop_after_chunks=2))

    outcome = run_stream(provider, chat_request())

    assert streamed_text(outcome.events) == "one two"
    assert type(outcome.error) is UpstreamError


def test_stream_without_message_stop_raises_upstream_error(
    fake: FakeAnthropic, provider: ProviderConfig
) -> None:
    fake.enqueue(Behavior(omit_message_stop=True))

    outcome = run_stream(provider, chat_request())

    assert any(isinstance(event, Finish) for event in outcome.events)
    assert type(outcome.error) is UpstreamError
    assert "message_stop" in outcome.error.message


@pytest.mark.parametrize("mode", MODES)
def test_malformed_answers_raise_upstream_error(
    fake: FakeAnthropic, provider: ProviderConfig, mode: Mode
) -> None:
    fake.enqueue(Behavior(malformed=True))

    if mode == "complete":
        error = call_failing(mode, provider, chat_request())
    else:
        outcome = run_stream(provider, chat_request())
        assert not any(isinstance(event, TextDelta | Finish) for event in outcome.events)
        assert outcome.error is not None
        error = outcome.error

    assert type(error) is PersistentUpstreamError  # the same answer would come again
    assert error.blame == "upstream"


@pytest.mark.parametrize("mode", MODES)
def test_drop_before_headers_raises_upstream_error(
    fake: FakeAnthropic, provider: ProviderConfig, mode: Mode
) -> None:
    fake.enqueue(Behavior(drop_before_headers=True))

    error = call_failing(mode, provider, chat_request())

    assert type(error) is UpstreamError

"""What only the Gemini adapter does: the bytes it sends, its errors, safety blocks, thinking.

Every call goes through a real pooled transport (both kinds) to a ``FakeGemini`` on loopback.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, Literal

import msgspec
import pytest

from gw.config.schema import ProviderConfig
from gw.errors import (
    GatewayError,
    PersistentUpstreamError,
    UpstreamAuthFailedError,
    UpstreamError,
)
from gw.ir import (
    AssistantMessage,
    ChatRequest,
    Finish,
    ImagePart,
    Reasoning,
    ResponseFormat,
    StreamStart,
    SystemMessage,
    TextPart,
    ThinkingDelta,
    ThinkingPart,
    ToolCall,
    ToolCallDelta,
    ToolChoice,
    ToolDefinition,
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
from fakes.gemini_upstream import Behavior, FakeGemini, google_error

Mode = Literal["complete", "stream"]
MODES = ["complete", "stream"]
KEY = ENVIRON[KEY_VARIABLE]
HI = (UserMessage(content=(TextPart(text="Hi"),)),)
PNG = "iVBORw0KGgoAAAANSUhEUg=="


@pytest.fixture(scope="module")
def gemini_server() -> Iterator[FakeGemini]:
    with FakeGemini(api_key=KEY) as server:  # any other key is refused with 400
        yield server


@pytest.fixture
def fake(gemini_server: FakeGemini) -> FakeGemini:
    gemini_server.clear()
    gemini_server.default = Behavior()
    return gemini_server


def provider_for(base_url: str, *, api_key: str | None = f"env:{KEY_VARIABLE}") -> ProviderConfig:
    return ProviderConfig(name="gemini-wire", kind="gemini", base_url=base_url, api_key=api_key)


@pytest.fixture
def provider(fake: FakeGemini) -> ProviderConfig:
    return provider_for(fake.base_url)


def sent(fake: FakeGemini, request: ChatRequest, provider: ProviderConfig) -> dict[str, Any]:
    """The JSON body gw sent for ``request`` (a whole-answer call)."""
    run_complete(provider, request)
    body: dict[str, Any] = fake.requests[-1].json
    return body


def call_failing(
    mode: Mode,
    provider: ProviderConfig,
    request: ChatRequest,
    *,
    environ: Mapping[str, str] = ENVIRON,
) -> GatewayError:
    if mode == "complete":
        with pytest.raises(GatewayError) as caught:
            run_complete(provider, request, environ=environ)
        return caught.value
    outcome = run_stream(provider, request, environ=environ)
    assert outcome.events == [], "a failure before the first byte must not start the stream"
    assert outcome.error is not None
    return outcome.error


# --- the request on the wire ---------------------------------------------------------------


def test_complete_request_path_headers_and_minimal_body(
    fake: FakeGemini, provider: ProviderConfig
) -> None:
    run_complete(provider, chat_request("Hi there", model="gemini-2.5-flash"))

    [received] = fake.requests
    assert (received.method, received.path) == (
        "POST",
        "/v1beta/models/gemini-2.5-flash:generateContent",
    )
    assert received.query == {}, "the key never travels in the URL"
    assert received.headers["x-goog-api-key"] == KEY
    assert received.headers["content-type"] == "application/json"
    assert "authorization" not in received.headers
    assert received.json == {
        "contents": [{"role": "user", "parts": [{"text": "Hi there"}]}],
        "generationConfig": {"candidateCount": 1},
    }


def test_stream_request_path(fake: FakeGemini, provider: ProviderConfig) -> None:
    run_stream(provider, chat_request(model="models/gemini-2.5-pro"))

    received = fake.requests[-1]
    assert received.path == "/v1beta/models/gemini-2.5-pro:streamGenerateContent"
    assert received.query == {"alt": "sse"}
    assert received.headers["x-goog-api-key"] == KEY


def test_base_url_with_api_version_is_tolerated(fake: FakeGemini) -> None:
    run_complete(provider_for(f"{fake.base_url}/v1beta/"), chat_request(model="m"))

    assert fake.requests[-1].path == "/v1beta/models/m:generateContent"


def test_configured_headers_are_sent(fake: FakeGemini) -> None:
    provider = msgspec.structs.replace(provider_for(fake.base_url), headers={"x-org-tag": "team-7"})

    run_complete(provider, chat_request())

    assert fake.requests[-1].headers["x-org-tag"] == "team-7"


def test_system_images_stop_and_limits(fake: FakeGemini, provider: ProviderConfig) -> None:
    request = ChatRequest(
        model="m",
        messages=(
            SystemMessage(content=(TextPart(text="Be brief."),)),
            UserMessage(
                content=(
                    TextPart(text="What is this?"),
                    ImagePart(data=PNG),
                    ImagePart(url="data:image/jpeg;base64,/9j/4AAQ"),
                    ImagePart(url="gs://bucket/cat.webp", media_type="image/webp"),
                )
            ),
        ),
        stop=("END",),
        max_tokens=64,
    )

    body = sent(fake, request, provider)

    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert body["contents"] == [
        {
            "role": "user",
            "parts": [
                {"text": "What is this?"},
                {"inlineData": {"mimeType": "image/png", "data": PNG}},
                {"inlineData": {"mimeType": "image/jpeg", "data": "/9j/4AAQ"}},
                {"fileData": {"fileUri": "gs://bucket/cat.webp", "mimeType": "image/webp"}},
            ],
        }
    ]
    assert body["generationConfig"] == {
        "candidateCount": 1,
        "maxOutputTokens": 64,
        "stopSequences": ["END"],
    }


def test_tools_schema_keywords_gemini_refuses_are_removed(
    fake: FakeGemini, provider: ProviderConfig
) -> None:
    tool = ToolDefinition(
        name="lookup",
        description="Find a record",
        parameters={
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {"id": {"type": ["string", "null"], "minLength": 1}},
            "required": ["id"],
            "additionalProperties": False,
        },
    )
    request = msgspec.structs.replace(
        chat_request(), tools=(tool,), tool_choice=ToolChoice(mode="tool", name="lookup")
    )

    body = sent(fake, request, provider)

    assert body["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "lookup",
                    "description": "Find a record",
                    "parameters": {
                        "type": "object",
                        "properties": {"id": {"type": "string", "nullable": True, "minLength": 1}},
                        "required": ["id"],
                    },
                }
            ]
        }
    ]
    assert body["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["lookup"]}
    }


def test_tool_history_and_results(fake: FakeGemini, provider: ProviderConfig) -> None:
    request = ChatRequest(
        model="m",
        messages=(
            *HI,
            AssistantMessage(
                content=(ThinkingPart(signature="c2ln"),),
                tool_calls=(
                    ToolCall(id="c1", name="get_weather", arguments='{"city": "Paris"}'),
                    ToolCall(id="c2", name="get_weather", arguments='{"city": "Oslo"}'),
                ),
            ),
            ToolMessage(tool_call_id="c1", content=(TextPart(text='{"temp": 21}'),)),
            ToolMessage(
                tool_call_id="c2", content=(TextPart(text="station offline"),), is_error=True
            ),
        ),
        tools=(WEATHER_TOOL,),
    )

    body = sent(fake, request, provider)

    assert body["contents"][1:] == [
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
                    "thoughtSignature": "c2ln",
                },
                {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"temp": 21}}},
                {
                    "functionResponse": {
                        "name": "get_weather",
                        "response": {"error": "station offline"},
                    }
                },
            ],
        },
    ]


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        (ResponseFormat(type="json_object"), {"responseMimeType": "application/json"}),
        (
            ResponseFormat(
                type="json_schema",
                name="out",
                json_schema={"type": "object", "properties": {"a": {"type": "integer"}}},
            ),
            {
                "responseMimeType": "application/json",
                "responseSchema": {"type": "object", "properties": {"a": {"type": "integer"}}},
            },
        ),
    ],
)
def test_json_modes(
    fake: FakeGemini, provider: ProviderConfig, fmt: ResponseFormat, expected: dict[str, Any]
) -> None:
    body = sent(fake, msgspec.structs.replace(chat_request(), response_format=fmt), provider)

    assert body["generationConfig"] == {"candidateCount": 1, **expected}


@pytest.mark.parametrize(
    ("reasoning", "expected"),
    [
        (Reasoning(budget_tokens=1024), {"thinkingBudget": 1024, "includeThoughts": True}),
        (Reasoning(effort="low"), {"thinkingBudget": 1024, "includeThoughts": True}),
    ],
)
def test_reasoning(
    fake: FakeGemini, provider: ProviderConfig, reasoning: Reasoning, expected: dict[str, Any]
) -> None:
    body = sent(fake, msgspec.structs.replace(chat_request(), reasoning=reasoning), provider)

    assert body["generationConfig"]["thinkingConfig"] == expected


# --- answers ---------------------------------------------------------------------------------


def test_usage_counts_thoughts_as_output_and_cache_as_input(
    fake: FakeGemini, provider: ProviderConfig
) -> None:
    fake.enqueue(*[Behavior(usage=(100, 20), thoughts_tokens=30, cached_tokens=64)] * 2)

    response = run_complete(provider, chat_request())
    outcome = run_stream(provider, chat_request())

    expected = Usage(
        input_tokens=100, output_tokens=50, cached_input_tokens=64, reasoning_tokens=30
    )
    assert response.usage == expected
    assert [e.usage for e in outcome.events if isinstance(e, UsageEvent)] == [expected]


def test_thinking_and_signature_reach_the_stream(
    fake: FakeGemini, provider: ProviderConfig
) -> None:
    calls = (("get_weather", '{"city": "Paris"}'),)
    fake.enqueue(
        *[
            Behavior(
                thought="Checking the weather",
                tool_calls=calls,
                thought_signature="c2ln",
                call_ids=True,
            )
        ]
        * 2
    )

    response = run_complete(provider, chat_request(tools=[WEATHER_TOOL]))
    outcome = run_stream(provider, chat_request(tools=[WEATHER_TOOL]))

    assert response.thinking == (
        ThinkingPart(text="Checking the weather"),
        ThinkingPart(signature="c2ln"),
    )
    assert response.tool_calls == (
        ToolCall(id="fc-0-get_weather", name="get_weather", arguments='{"city":"Paris"}'),
    )
    kinds = [type(e).__name__ for e in outcome.events]
    assert kinds == [
        "StreamStart",
        "ThinkingDelta",
        "ThinkingDelta",
        "ToolCallDelta",
        "UsageEvent",
        "Finish",
    ]
    assert [e for e in outcome.events if isinstance(e, ThinkingDelta)] == [
        ThinkingDelta(text="Checking the weather"),
        ThinkingDelta(signature="c2ln"),
    ]
    [delta] = [e for e in outcome.events if isinstance(e, ToolCallDelta)]
    assert (delta.id, delta.name, delta.arguments) == (
        "fc-0-get_weather",
        "get_weather",
        '{"city":"Paris"}',
    )


@pytest.mark.parametrize("mode", MODES)
def test_prompt_block_is_content_blocked(
    fake: FakeGemini, provider: ProviderConfig, mode: Mode
) -> None:
    fake.enqueue(Behavior(block_reason="PROHIBITED_CONTENT"))

    error = call_failing(mode, provider, chat_request())

    assert error.code == "content_blocked"
    assert error.blame == "upstream"
    assert "PROHIBITED_CONTENT" in error.message


@pytest.mark.parametrize("mode", MODES)
def test_safety_stop_before_any_content_is_content_blocked(
    fake: FakeGemini, provider: ProviderConfig, mode: Mode
) -> None:
    fake.enqueue(Behavior(safety_after_chunks=0))

    error = call_failing(mode, provider, chat_request())

    assert error.code == "content_blocked"


def test_safety_stop_mid_stream_finishes_with_content_filter(
    fake: FakeGemini, provider: ProviderConfig
) -> None:
    fake.enqueue(*[Behavior(text="one two three four", safety_after_chunks=2)] * 2)

    response = run_complete(provider, chat_request())
    outcome = run_stream(provider, chat_request())

    assert (response.text, response.finish_reason) == ("one two", "content_filter")
    assert outcome.error is None
    assert streamed_text(outcome.events) == "one two"
    assert outcome.events[-1] == Finish(reason="content_filter")


def test_error_object_mid_stream_is_mapped(fake: FakeGemini, provider: ProviderConfig) -> None:
    overloaded = google_error(
        503, "UNAVAILABLE", "The model is overloaded. Please try again later."
    )
    fake.enqueue(Behavior(text="one two three", error_in_stream=(1, overloaded)))

    outcome = run_stream(provider, chat_request())

    assert isinstance(outcome.events[0], StreamStart)
    assert streamed_text(outcome.events) == "one"
    assert outcome.error is not None
    assert outcome.error.code == "overloaded"
    assert outcome.error.upstream_status == 200


def test_drop_mid_stream_raises_upstream_error(fake: FakeGemini, provider: ProviderConfig) -> None:
    fake.enqueue(Behavior(text="one two three four", drop_after_chunks=2))

    outcome = run_stream(provider, chat_request())

    assert streamed_text(outcome.events) == "one two"
    assert not any(isinstance(e, Finish) for e in outcome.events)
    assert type(outcome.error) is UpstreamError


@pytest.mark.parametrize("mode", MODES)
def test_malformed_answer_raises_upstream_error(
    fake: FakeGemini, provider: ProviderConfig, mode: Mode
) -> None:
    fake.enqueue(Behavior(malformed=True))

    if mode == "complete":
        error = call_failing(mode, provider, chat_request())
    else:
        outcome = run_stream(provider, chat_request())
        assert not any(isinstance(e, Finish) for e in outcome.events)
        assert outcome.error is not None
        error = outcome.error

    assert type(error) is PersistentUpstreamError  # the same answer would come again
    assert error.blame == "upstream"


# --- errors and credentials ------------------------------------------------------------------

CONTEXT = google_error(
    400,
    "INVALID_ARGUMENT",
    "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).",
)
PRECONDITION = google_error(
    400, "FAILED_PRECONDITION", "User location is not supported for the API use."
)


# (the answer, the gw code it maps to, the retry_after it carries)
ERROR_ANSWERS: list[tuple[Behavior, str, float | None]] = [
    (Behavior(status=400), "invalid_request", None),
    (Behavior(status=400, error_body=CONTEXT), "context_length_exceeded", None),
    (Behavior(status=400, error_body=PRECONDITION), "upstream_auth_failed", None),
    (Behavior(status=401), "upstream_auth_failed", None),
    (Behavior(status=403), "upstream_auth_failed", None),
    (Behavior(status=404), "upstream_error", None),
    (Behavior(status=429), "rate_limited", 2.0),  # RetryInfo.retryDelay in the body
    (Behavior(status=429, headers={"retry-after": "7"}), "rate_limited", 7.0),
    (Behavior(status=500), "upstream_error", None),
    (Behavior(status=503), "overloaded", None),
    (Behavior(status=504), "upstream_timeout", None),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("answer", ERROR_ANSWERS)
def test_error_answers_map_by_table(
    fake: FakeGemini,
    provider: ProviderConfig,
    mode: Mode,
    answer: tuple[Behavior, str, float | None],
) -> None:
    behavior, code, retry_after = answer
    fake.enqueue(behavior)

    error = call_failing(mode, provider, chat_request())

    assert error.code == code
    assert error.blame == "upstream"
    assert error.upstream_status == behavior.status
    assert error.retry_after == retry_after


@pytest.mark.parametrize("mode", MODES)
def test_invalid_key_is_upstream_auth_failed_and_not_quoted(fake: FakeGemini, mode: Mode) -> None:
    environ = {KEY_VARIABLE: "AIza-wrong-key-0123456789"}

    error = call_failing(mode, provider_for(fake.base_url), chat_request(), environ=environ)

    assert type(error) is UpstreamAuthFailedError
    assert error.upstream_status == 400
    assert "AIza" not in error.client_message


def test_missing_key_reference_fails_before_sending(fake: FakeGemini) -> None:
    provider = provider_for(fake.base_url, api_key="env:GW_MISSING_GEMINI_KEY")

    error = call_failing("stream", provider, chat_request(), environ={})

    assert type(error) is UpstreamAuthFailedError
    assert "GW_MISSING_GEMINI_KEY" in error.message
    assert fake.count == 0


def test_no_api_key_sends_no_key_header(fake: FakeGemini) -> None:
    error = call_failing("complete", provider_for(fake.base_url, api_key=None), chat_request())

    assert "x-goog-api-key" not in fake.requests[-1].headers
    assert error.code == "upstream_auth_failed"  # Google's 403 for unregistered callers


def test_image_url_is_refused_before_sending(fake: FakeGemini, provider: ProviderConfig) -> None:
    request = ChatRequest(
        model="m", messages=(UserMessage(content=(ImagePart(url="https://example.com/cat.png"),)),)
    )

    error = call_failing("complete", provider, request)

    assert error.code == "native_feature_unsupported"
    assert error.param == "messages[0].content[0]"
    assert fake.requests == []


def test_tool_call_arguments_are_compact_json_objects(
    fake: FakeGemini, provider: ProviderConfig
) -> None:
    fake.enqueue(Behavior(tool_calls=(("get_weather", '{"city": "Paris", "days": [1, 2]}'),)))

    response = run_complete(provider, chat_request(tools=[WEATHER_TOOL]))

    [call] = response.tool_calls
    assert json.loads(call.arguments) == {"city": "Paris", "days": [1, 2]}
    # Gemini gave no id: gw's is made from the response id and the call's position.
    assert call.id.startswith("call_fakeGeminiResp")
    assert call.id.endswith("_0")
    assert response.finish_reason == "tool_calls"

"""decode_chat_request: what the OpenAI SDK sends becomes the IR, and every error names its param."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai
import pytest

from gw.codecs.openai_chat import decode_chat_request
from gw.errors import InvalidRequestError, NativeFeatureUnsupportedError
from gw.ir import (
    AssistantMessage,
    CacheMark,
    ImagePart,
    ResponseFormat,
    Sampling,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolChoice,
    ToolDefinition,
    ToolMessage,
    UserMessage,
)

WEATHER_TOOL: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        "strict": True,
    },
}


def body(**fields: Any) -> bytes:
    payload = {"model": "chat", "messages": [{"role": "user", "content": "hi"}], **fields}
    return json.dumps(payload).encode()


def sdk_body(**kwargs: Any) -> bytes:
    """The exact bytes the official SDK sends for ``chat.completions.create(**kwargs)``."""
    sent: list[bytes] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(request.content)
        return httpx2.Response(400, json={"error": {"message": "stop", "type": "x"}})

    client = openai.OpenAI(
        api_key="test",
        base_url="http://gw.test/v1",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(**kwargs)
    return sent[0]


def test_full_request_from_the_sdk() -> None:
    raw = sdk_body(
        model="chat",
        messages=[
            {"role": "developer", "content": "be brief"},
            {"role": "system", "content": [{"type": "text", "text": "a"}], "name": "sys"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "what is this?"},
                    {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}},
                    {
                        "type": "image_url",
                        "image_url": {"url": "data:image/jpeg;base64,/9j/AAA=", "detail": "low"},
                    },
                ],
                "name": "bob",
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        ],
        tools=[WEATHER_TOOL],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        parallel_tool_calls=False,
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": {"type": "object"}, "strict": True},
        },
        temperature=0.2,
        top_p=1,
        frequency_penalty=-1.5,
        presence_penalty=0,
        seed=42,
        stop=["END"],
        max_completion_tokens=100,
        stream=True,
        stream_options={"include_usage": True},
        user="u-1",
        logprobs=False,
        metadata={"app": "t"},
        extra_body={"top_k": 40},
    )
    request = decode_chat_request(raw)
    assert request.model == "chat"
    assert request.messages == (
        SystemMessage(content=(TextPart(text="be brief"),)),
        SystemMessage(content=(TextPart(text="a"),), name="sys"),
        UserMessage(
            content=(
                TextPart(text="what is this?"),
                ImagePart(url="https://x.test/a.png"),
                ImagePart(data="/9j/AAA=", media_type="image/jpeg", detail="low"),
            ),
            name="bob",
        ),
        AssistantMessage(
            tool_calls=(ToolCall(id="call_1", name="get_weather", arguments='{"city":"Oslo"}'),)
        ),
        ToolMessage(tool_call_id="call_1", content=(TextPart(text="sunny"),)),
    )
    assert request.tools == (
        ToolDefinition(
            name="get_weather",
            description="Weather for a city",
            parameters=WEATHER_TOOL["function"]["parameters"],
            strict=True,
        ),
    )
    assert request.tool_choice == ToolChoice(mode="tool", name="get_weather")
    assert request.parallel_tool_calls is False
    assert request.response_format == ResponseFormat(
        type="json_schema", name="answer", json_schema={"type": "object"}, strict=True
    )
    assert request.sampling == Sampling(
        temperature=0.2, top_p=1.0, frequency_penalty=-1.5, presence_penalty=0.0, seed=42
    )
    assert request.stop == ("END",)
    assert request.max_tokens == 100
    assert request.stream is True
    assert request.include_usage is True
    assert request.user == "u-1"
    assert request.extensions == {
        "openai": {"logprobs": False, "metadata": {"app": "t"}, "top_k": 40}
    }


@pytest.mark.parametrize(
    ("extra", "param"), [({"logprobs": True}, "logprobs"), ({"top_logprobs": 3}, "top_logprobs")]
)
def test_log_probabilities_are_refused_not_answered_with_null(
    extra: dict[str, object], param: str
) -> None:
    with pytest.raises(NativeFeatureUnsupportedError) as refused:
        decode_chat_request(body(**extra))
    assert refused.value.param == param


def test_minimal_request_defaults() -> None:
    request = decode_chat_request(body())
    assert request.messages == (UserMessage(content=(TextPart(text="hi"),)),)
    assert request.stream is False
    assert request.include_usage is False
    assert request.max_tokens is None
    assert request.extensions == {}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"max_tokens": 10}, 10),
        ({"max_completion_tokens": 20}, 20),
        ({"max_tokens": 10, "max_completion_tokens": 20}, 20),
        ({"max_tokens": 30, "max_completion_tokens": 20}, 20),
        ({"max_tokens": None}, None),
    ],
)
def test_max_completion_tokens_wins(fields: dict[str, Any], expected: int | None) -> None:
    assert decode_chat_request(body(**fields)).max_tokens == expected


def test_stop_as_string_tool_choice_as_string_and_plain_formats() -> None:
    tools = [{"type": "function", "function": {"name": "f"}}]
    request = decode_chat_request(
        body(
            stop="x",
            tools=tools,
            tool_choice="required",
            response_format={"type": "json_object"},
            n=1,
        )
    )
    assert request.stop == ("x",)
    assert request.tool_choice == ToolChoice(mode="required")
    assert request.response_format == ResponseFormat(type="json_object")


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"tool_choice": "required"}, "tool_choice"),
        (
            {
                "tools": [{"type": "function", "function": {"name": "f"}}],
                "tool_choice": {"type": "function", "function": {"name": "g"}},
            },
            "tool_choice.function.name",
        ),
    ],
)
def test_a_forced_tool_must_be_offered(fields: dict[str, Any], param: str) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        decode_chat_request(body(**fields))
    assert caught.value.param == param


def test_empty_string_content_is_no_part() -> None:
    raw = body(messages=[{"role": "user", "content": ""}, {"role": "assistant", "content": ""}])
    assert decode_chat_request(raw).messages == (UserMessage(content=()), AssistantMessage())


def test_cache_control_on_content_parts_becomes_their_cache_mark() -> None:
    """What clients of OpenAI-compatible gateways send to cache a prompt sent to Claude."""
    mark = {"type": "ephemeral"}
    png = "data:image/png;base64,iVBORw0"
    raw = sdk_body(
        model="chat",
        messages=[
            {
                "role": "system",
                "content": [{"type": "text", "text": "rules", "cache_control": mark}],
            },
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": png}, "cache_control": mark},
                    {"type": "text", "text": "hi", "cache_control": {**mark, "ttl": "1h"}},
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "t",
                "content": [{"type": "text", "text": "42", "cache_control": mark}],
            },
        ],
    )
    assert decode_chat_request(raw).messages == (
        SystemMessage(content=(TextPart(text="rules", cache=CacheMark()),)),
        UserMessage(
            content=(
                ImagePart(data="iVBORw0", media_type="image/png", cache=CacheMark()),
                TextPart(text="hi", cache=CacheMark(ttl="1h")),
            )
        ),
        ToolMessage(tool_call_id="t", content=(TextPart(text="42", cache=CacheMark()),)),
    )


def test_a_malformed_cache_control_is_refused_naming_it() -> None:
    part = {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral", "ttl": "1d"}}
    with pytest.raises(InvalidRequestError) as caught:
        decode_chat_request(body(messages=[{"role": "user", "content": [part]}]))
    assert caught.value.param == "messages[0].content[0].cache_control.ttl"


def test_other_stream_options_are_kept_for_openai_upstreams() -> None:
    raw = body(stream=True, stream_options={"include_usage": False, "include_obfuscation": False})
    request = decode_chat_request(raw)
    assert request.include_usage is False
    assert request.extensions == {"openai": {"stream_options": {"include_obfuscation": False}}}


USER = {"role": "user", "content": "hi"}

INVALID: list[tuple[str, bytes, str]] = [
    ("not json", b"{", ""),
    ("not an object", b"[]", ""),
    ("model missing", json.dumps({"messages": [USER]}).encode(), "model"),
    ("model null", body(model=None), "model"),
    ("model not a string", body(model=5), "model"),
    ("model empty", body(model=""), "model"),
    ("messages missing", json.dumps({"model": "m"}).encode(), "messages"),
    ("messages not a list", body(messages={}), "messages"),
    ("messages empty", body(messages=[]), "messages"),
    ("message not an object", body(messages=[USER, "hi"]), "messages[1]"),
    ("role missing", body(messages=[{"content": "x"}]), "messages[0].role"),
    ("role unknown", body(messages=[USER, USER, {"role": "bot", "content": "x"}]), "messages[2].role"),
    ("legacy function role", body(messages=[{"role": "function", "name": "f", "content": "x"}]), "messages[0].role"),
    ("content missing", body(messages=[{"role": "user"}]), "messages[0].content"),
    ("content a number", body(messages=[{"role": "user", "content": 3}]), "messages[0].content"),
    ("part not an object", body(messages=[{"role": "user", "content": ["x"]}]), "messages[0].content[0]"),
    ("part type unknown", body(messages=[{"role": "user", "content": [{"type": "video"}]}]), "messages[0].content[0].type"),
    ("text part without text", body(messages=[{"role": "user", "content": [{"type": "text"}]}]), "messages[0].content[0].text"),
    ("image in system", body(messages=[{"role": "system", "content": [{"type": "image_url", "image_url": {"url": "https://a"}}]}]), "messages[0].content[0].type"),
    ("image_url not an object", body(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": "https://a"}]}]), "messages[0].content[0].image_url"),
    ("image url scheme", body(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "ftp://a"}}]}]), "messages[0].content[0].image_url.url"),
    ("data url not base64", body(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png,abc"}}]}]), "messages[0].content[0].image_url.url"),
    ("assistant empty", body(messages=[{"role": "assistant"}]), "messages[0].content"),
    ("assistant function_call", body(messages=[{"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}}]), "messages[0].function_call"),
    ("tool_calls not a list", body(messages=[{"role": "assistant", "tool_calls": {}}]), "messages[0].tool_calls"),
    ("tool call without id", body(messages=[{"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]}]), "messages[0].tool_calls[0].id"),
    ("tool call arguments object", body(messages=[{"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": {}}}]}]), "messages[0].tool_calls[0].function.arguments"),
    ("tool message without id", body(messages=[{"role": "tool", "content": "x"}]), "messages[0].tool_call_id"),
    ("name not a string", body(messages=[{"role": "user", "content": "x", "name": 1}]), "messages[0].name"),
    ("max_tokens as string", body(max_tokens="9"), "max_tokens"),
    ("max_tokens as bool", body(max_tokens=True), "max_tokens"),
    ("max_tokens as float", body(max_tokens=9.0), "max_tokens"),
    ("max_tokens zero", body(max_tokens=0), "max_tokens"),
    ("max_completion_tokens negative", body(max_completion_tokens=-1), "max_completion_tokens"),
    ("temperature as string", body(temperature="0.5"), "temperature"),
    ("temperature as bool", body(temperature=False), "temperature"),
    ("temperature out of range", body(temperature=2.5), "temperature"),
    ("top_p out of range", body(top_p=1.5), "top_p"),
    ("presence_penalty out of range", body(presence_penalty=-3), "presence_penalty"),
    ("seed float", body(seed=1.5), "seed"),
    ("stop number", body(stop=5), "stop"),
    ("stop list of numbers", body(stop=["a", 5]), "stop[1]"),
    ("stream as string", body(stream="true"), "stream"),
    ("stream_options not object", body(stream_options=True), "stream_options"),
    ("include_usage not bool", body(stream_options={"include_usage": 1}), "stream_options.include_usage"),
    ("user not string", body(user=1), "user"),
    ("parallel_tool_calls not bool", body(parallel_tool_calls="yes"), "parallel_tool_calls"),
    ("tools not a list", body(tools={}), "tools"),
    ("tool type", body(tools=[{"type": "web", "function": {"name": "f"}}]), "tools[0].type"),
    ("tool without function", body(tools=[{"type": "function"}]), "tools[0].function"),
    ("tool without name", body(tools=[{"type": "function", "function": {}}]), "tools[0].function.name"),
    ("tool parameters not object", body(tools=[{"type": "function", "function": {"name": "f", "parameters": []}}]), "tools[0].function.parameters"),
    ("tool strict not bool", body(tools=[{"type": "function", "function": {"name": "f", "strict": "y"}}]), "tools[0].function.strict"),
    ("tool_choice word", body(tool_choice="always"), "tool_choice"),
    ("tool_choice type", body(tool_choice={"type": "tool"}), "tool_choice.type"),
    ("tool_choice without name", body(tool_choice={"type": "function", "function": {}}), "tool_choice.function.name"),
    ("response_format type", body(response_format={"type": "xml"}), "response_format.type"),
    ("response_format not object", body(response_format="json"), "response_format"),
    ("json_schema missing", body(response_format={"type": "json_schema"}), "response_format.json_schema"),
    ("json_schema without name", body(response_format={"type": "json_schema", "json_schema": {"schema": {}}}), "response_format.json_schema.name"),
    ("json_schema schema not object", body(response_format={"type": "json_schema", "json_schema": {"name": "a", "schema": 1}}), "response_format.json_schema.schema"),
    ("legacy functions", body(functions=[{"name": "f"}]), "functions"),
    ("legacy function_call", body(function_call="auto"), "function_call"),
    ("n not an integer", body(n="2"), "n"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("raw", "param"), [(r, p) for _, r, p in INVALID], ids=[i for i, _, _ in INVALID]
)
def test_invalid_requests_name_the_param(raw: bytes, param: str) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        decode_chat_request(raw)
    error = caught.value
    assert error.code == "invalid_request"
    if param:
        assert error.param == param
        assert f"`{param}" in error.message
    else:
        assert error.param is None
        assert "JSON" in error.message


UNSUPPORTED: list[tuple[str, bytes, str]] = [
    ("n=2", body(n=2), "n"),
    ("audio part", body(messages=[{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}]), "messages[0].content[0].type"),
    ("file part", body(messages=[{"role": "user", "content": [{"type": "file", "file": {}}]}]), "messages[0].content[0].type"),
    ("refusal part", body(messages=[{"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]}]), "messages[0].content[0].type"),
    ("custom tool", body(tools=[{"type": "custom", "custom": {"name": "f"}}]), "tools[0].type"),
    ("custom tool call", body(messages=[{"role": "assistant", "tool_calls": [{"id": "c", "type": "custom", "custom": {}}]}]), "messages[0].tool_calls[0].type"),
    ("allowed_tools choice", body(tool_choice={"type": "allowed_tools", "allowed_tools": {}}), "tool_choice.type"),
    ("assistant audio", body(messages=[{"role": "assistant", "content": "x", "audio": {"id": "a"}}]), "messages[0].audio"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("raw", "param"), [(r, p) for _, r, p in UNSUPPORTED], ids=[i for i, _, _ in UNSUPPORTED]
)
def test_unsupported_features_name_the_param(raw: bytes, param: str) -> None:
    with pytest.raises(NativeFeatureUnsupportedError) as caught:
        decode_chat_request(raw)
    assert caught.value.param == param


def test_error_messages_never_quote_client_values() -> None:
    secret = "my-private-prompt-text"
    for raw in (
        body(messages=[{"role": secret, "content": "x"}]),
        body(max_tokens=secret),
        body(messages=[{"role": "user", "content": [{"type": secret}]}]),
        body(
            messages=[
                {"role": "user", "content": [{"type": "image_url", "image_url": {"url": secret}}]}
            ]
        ),
    ):
        with pytest.raises(InvalidRequestError) as caught:
            decode_chat_request(raw)
        assert secret not in caught.value.message

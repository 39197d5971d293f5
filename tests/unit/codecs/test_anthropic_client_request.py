"""decode_messages_request: what the Anthropic SDK sends becomes the IR; every error names its
field path, and features the IR cannot carry are refused by name."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx2
import pytest

from gw.codecs.anthropic_messages.client_request import (
    decode_count_tokens_request,
    decode_messages_request,
    encode_count_tokens_response,
)
from gw.codecs.anthropic_messages.client_response import encode_messages_response
from gw.errors import GatewayError, InvalidRequestError, NativeFeatureUnsupportedError
from gw.ir import (
    AssistantMessage,
    CacheMark,
    ChatRequest,
    ChatResponse,
    ImagePart,
    NativeBlock,
    Reasoning,
    ResponseFormat,
    Sampling,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolChoice,
    ToolDefinition,
    ToolMessage,
    UserMessage,
)

HI: Any = {"role": "user", "content": "hi"}
SCHEMA: Any = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
WEATHER: Any = {"name": "get_weather", "description": "Weather for a city", "input_schema": SCHEMA}
PNG = "iVBORw0KGgo="


def body(**fields: Any) -> bytes:
    payload = {"model": "claude", "max_tokens": 256, "messages": [HI], **fields}
    return json.dumps(payload).encode()


def decode(**fields: Any) -> ChatRequest:
    return decode_messages_request(body(**fields))


def user(*blocks: Any) -> Any:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: Any) -> Any:
    return {"role": "assistant", "content": list(blocks)}


def text(value: str) -> Any:
    return {"type": "text", "text": value}


# ---- top level ------------------------------------------------------------------------


def test_minimal_request() -> None:
    assert decode() == ChatRequest(
        model="claude",
        messages=(UserMessage(content=(TextPart(text="hi"),)),),
        max_tokens=256,
        include_usage=True,
    )


def test_top_level_fields_map_to_the_ir() -> None:
    request = decode(
        stop_sequences=["END", "STOP"],
        temperature=0.5,
        top_p=1,
        top_k=40,
        metadata={"user_id": "u-1"},
        stream=True,
        thinking={"type": "enabled", "budget_tokens": 2048},
    )
    assert request.stop == ("END", "STOP")
    assert request.sampling == Sampling(temperature=0.5, top_p=1.0, top_k=40)
    assert request.user == "u-1"
    assert request.stream is True
    assert request.include_usage is True
    assert request.reasoning == Reasoning(budget_tokens=2048)


def test_thinking_disabled_is_no_reasoning_and_is_kept_for_anthropic() -> None:
    request = decode(thinking={"type": "disabled"})
    assert request.reasoning is None
    assert request.extensions == {"anthropic": {"thinking": {"type": "disabled"}}}


@pytest.mark.parametrize("display", ["summarized", "omitted"])
def test_thinking_display_is_kept_for_anthropic(display: str) -> None:
    thinking = {"type": "enabled", "budget_tokens": 1024, "display": display}
    request = decode(thinking=thinking)
    assert request.reasoning == Reasoning(budget_tokens=1024)
    assert request.extensions == {"anthropic": {"thinking": {"display": display}}}


def test_adaptive_thinking_is_adaptive_reasoning() -> None:
    """What Claude Code sends first in every session."""
    request = decode(thinking={"type": "adaptive"})
    assert request.reasoning == Reasoning(adaptive=True)
    assert request.extensions == {}


@pytest.mark.parametrize(
    ("effort", "level"), [("low", "low"), ("xhigh", "xhigh"), ("max", "xhigh")]
)
def test_the_output_config_effort_is_the_reasoning_s_and_stays_for_anthropic(
    effort: str, level: str
) -> None:
    request = decode(thinking={"type": "adaptive"}, output_config={"effort": effort})
    assert request.reasoning == Reasoning(adaptive=True, effort=level)  # type: ignore[arg-type]
    assert request.extensions == {"anthropic": {"output_config": {"effort": effort}}}
    enabled = {"type": "enabled", "budget_tokens": 2048}
    reasoning = decode(thinking=enabled, output_config={"effort": effort}).reasoning
    assert reasoning == Reasoning(budget_tokens=2048, effort=level)  # type: ignore[arg-type]


def test_an_effort_without_thinking_is_no_reasoning() -> None:
    request = decode(output_config={"effort": "low"})
    assert request.reasoning is None
    assert request.extensions == {"anthropic": {"output_config": {"effort": "low"}}}


def test_between_tools_thinking_is_adaptive_elsewhere_and_kept_for_anthropic() -> None:
    request = decode(thinking={"type": "between_tools"})
    assert request.reasoning == Reasoning(adaptive=True)
    assert request.extensions == {"anthropic": {"thinking": {"type": "between_tools"}}}


def test_output_config_format_is_a_json_schema_response_format() -> None:
    request = decode(
        output_config={"format": {"type": "json_schema", "schema": SCHEMA}, "effort": "high"}
    )
    assert request.response_format == ResponseFormat(type="json_schema", json_schema=SCHEMA)
    assert request.extensions == {"anthropic": {"output_config": {"effort": "high"}}}


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"thinking": {"type": "sometimes"}}, "thinking.type"),
        ({"thinking": {"type": "adaptive", "display": "loud"}}, "thinking.display"),
        ({"thinking": {"type": "enabled", "budget_tokens": 1023}}, "thinking.budget_tokens"),
        ({"thinking": {"type": "enabled"}}, "thinking.budget_tokens"),
        ({"output_config": {"effort": "huge"}}, "output_config.effort"),
        ({"output_config": {"format": {"type": "json_object"}}}, "output_config.format.type"),
        ({"output_config": {"format": {"type": "json_schema"}}}, "output_config.format.schema"),
        ({"output_config": []}, "output_config"),
    ],
)
def test_malformed_thinking_and_output_config_are_refused_naming_the_field(
    fields: Any, param: str
) -> None:
    rejects(body(**fields), param)


def test_system_string_becomes_a_leading_system_message() -> None:
    assert decode(system="Be brief.").messages[0] == SystemMessage(
        content=(TextPart(text="Be brief."),)
    )


def test_system_blocks_keep_their_text_and_cache_marks() -> None:
    system = [text("one"), {**text("two"), "cache_control": {"type": "ephemeral"}}]
    request = decode(system=system)
    assert request.messages[0] == SystemMessage(
        content=(TextPart(text="one"), TextPart(text="two", cache=CacheMark()))
    )
    assert len(request.messages) == 2


@pytest.mark.parametrize("system", ["", []])
def test_empty_system_is_no_message(system: Any) -> None:
    assert decode(system=system).messages == (UserMessage(content=(TextPart(text="hi"),)),)


def test_unknown_top_level_keys_go_to_extensions() -> None:
    request = decode(
        service_tier="standard_only",
        container="c-1",
        mcp_servers=[{"type": "url", "url": "https://mcp.test", "name": "m"}],
        context_management={"edits": []},
        cache_control={"type": "ephemeral"},
        vendor_flag=True,
        inference_geo=None,
    )
    assert request.extensions == {
        "anthropic": {
            "service_tier": "standard_only",
            "container": "c-1",
            "mcp_servers": [{"type": "url", "url": "https://mcp.test", "name": "m"}],
            "context_management": {"edits": []},
            "cache_control": {"type": "ephemeral"},
            "vendor_flag": True,
        }
    }


def test_beta_header_lines_become_betas_in_order_once_each() -> None:
    raw = json.dumps({"model": "claude", "max_tokens": 5, "messages": [HI]}).encode()
    lines = ["interleaved-thinking-2025-05-14, context-1m-2025-08-07", " ,context-1m-2025-08-07"]
    assert decode_messages_request(raw, lines).betas == (
        "interleaved-thinking-2025-05-14",
        "context-1m-2025-08-07",
    )
    assert decode_messages_request(raw).betas == ()


@pytest.mark.parametrize(
    "line", ["bad beta", "x\r\ninjected: 1", "a;b", ",".join(f"b{n}" for n in range(33))]
)
def test_a_malformed_beta_header_is_refused_naming_it(line: str) -> None:
    raw = json.dumps({"model": "claude", "max_tokens": 5, "messages": [HI]}).encode()
    with pytest.raises(InvalidRequestError) as caught:
        decode_messages_request(raw, [line])
    assert caught.value.param == "anthropic-beta"


def test_no_extensions_without_unknown_keys() -> None:
    assert decode(temperature=0).extensions == {}


def test_count_tokens_request_needs_no_max_tokens() -> None:
    raw = json.dumps({"model": "claude", "messages": [HI], "system": "s"}).encode()
    request = decode_count_tokens_request(raw)
    assert request.max_tokens is None
    assert request.messages[0] == SystemMessage(content=(TextPart(text="s"),))


def test_count_tokens_request_still_checks_max_tokens_when_given() -> None:
    raw = json.dumps({"model": "claude", "messages": [HI], "max_tokens": 0}).encode()
    with pytest.raises(InvalidRequestError) as caught:
        decode_count_tokens_request(raw)
    assert caught.value.param == "max_tokens"


def test_count_tokens_response() -> None:
    assert json.loads(encode_count_tokens_response(42)) == {"input_tokens": 42}


# ---- content blocks --------------------------------------------------------------------


def test_user_blocks_text_and_images() -> None:
    message = user(
        text("look"),
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {"type": "image", "source": {"type": "url", "url": "https://img.test/a.jpg"}},
    )
    assert decode(messages=[message]).messages == (
        UserMessage(
            content=(
                TextPart(text="look"),
                ImagePart(data=PNG, media_type="image/png"),
                ImagePart(url="https://img.test/a.jpg"),
            )
        ),
    )


def test_assistant_blocks_keep_order_and_tool_calls_are_compact_json() -> None:
    message = assistant(
        {"type": "thinking", "thinking": "Let me see.", "signature": "sig-1"},
        {"type": "redacted_thinking", "data": "ENCRYPTED"},
        text("Checking."),
        {
            "type": "tool_use",
            "id": "toolu_1",
            "name": "get_weather",
            "input": {"city": "Paris", "units": {"temp": "C", "n": [1, 2.5]}},
        },
    )
    request = decode(messages=[HI, message])
    assert request.messages[1] == AssistantMessage(
        content=(
            ThinkingPart(text="Let me see.", signature="sig-1"),
            ThinkingPart(redacted="ENCRYPTED"),
            TextPart(text="Checking."),
        ),
        tool_calls=(
            ToolCall(
                id="toolu_1",
                name="get_weather",
                arguments='{"city":"Paris","units":{"temp":"C","n":[1,2.5]}}',
            ),
        ),
    )


def test_assistant_string_content() -> None:
    assert decode(messages=[HI, {"role": "assistant", "content": "Hello"}]).messages[1] == (
        AssistantMessage(content=(TextPart(text="Hello"),))
    )


def test_final_assistant_message_may_be_empty() -> None:
    assert decode(messages=[HI, {"role": "assistant", "content": ""}]).messages[1] == (
        AssistantMessage()
    )


def test_tool_results_become_tool_messages_then_the_rest_a_user_message() -> None:
    message = user(
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18 C"},
        {
            "type": "tool_result",
            "tool_use_id": "toolu_2",
            "content": [
                text("see image"),
                {"type": "image", "source": {"type": "url", "url": "https://img.test/x.png"}},
            ],
            "is_error": True,
            "cache_control": {"type": "ephemeral"},
        },
        {"type": "tool_result", "tool_use_id": "toolu_3"},
        text("Thanks"),
    )
    assert decode(messages=[message]).messages == (
        ToolMessage(tool_call_id="toolu_1", content=(TextPart(text="18 C"),)),
        ToolMessage(
            tool_call_id="toolu_2",
            content=(TextPart(text="see image"), ImagePart(url="https://img.test/x.png")),
            is_error=True,
            cache=CacheMark(),
        ),
        ToolMessage(tool_call_id="toolu_3", content=()),
        UserMessage(content=(TextPart(text="Thanks"),)),
    )


def test_tool_results_alone_make_no_user_message() -> None:
    message = user({"type": "tool_result", "tool_use_id": "toolu_1", "content": ""})
    assert decode(messages=[message]).messages == (ToolMessage(tool_call_id="toolu_1", content=()),)


def test_system_role_inside_messages_is_a_system_message() -> None:
    messages = [HI, {"role": "system", "content": [text("Now be formal.")]}, HI]
    assert decode(messages=messages).messages[1] == SystemMessage(
        content=(TextPart(text="Now be formal."),)
    )


def test_block_keys_without_meaning_are_ignored() -> None:
    message = user(
        {**text("hi"), "cache_control": None, "citations": None},
        {**text("again"), "citations": []},
    )
    assert decode(messages=[message]).messages[0] == UserMessage(
        content=(TextPart(text="hi"), TextPart(text="again"))
    )


def test_cache_control_on_every_block_kind_becomes_its_cache_mark() -> None:
    one_hour = {"type": "ephemeral", "ttl": "1h"}
    image = {"type": "image", "source": {"type": "url", "url": "https://img.test/a.png"}}
    messages = [
        user({**text("hi"), "cache_control": {"type": "ephemeral", "ttl": "5m"}}),
        assistant(
            {**text("calling"), "cache_control": one_hour},
            {"type": "tool_use", "id": "t", "name": "f", "input": {}, "cache_control": one_hour},
        ),
        user(
            {
                "type": "tool_result",
                "tool_use_id": "t",
                "content": [{**text("18 C"), "cache_control": one_hour}, image],
            },
            {**image, "cache_control": {"type": "ephemeral"}},
        ),
    ]
    assert decode(messages=messages).messages == (
        UserMessage(content=(TextPart(text="hi", cache=CacheMark(ttl="5m")),)),
        AssistantMessage(
            content=(TextPart(text="calling", cache=CacheMark(ttl="1h")),),
            tool_calls=(ToolCall(id="t", name="f", arguments="{}", cache=CacheMark(ttl="1h")),),
        ),
        ToolMessage(
            tool_call_id="t",
            content=(
                TextPart(text="18 C", cache=CacheMark(ttl="1h")),
                ImagePart(url="https://img.test/a.png"),
            ),
        ),
        UserMessage(content=(ImagePart(url="https://img.test/a.png", cache=CacheMark()),)),
    )


@pytest.mark.parametrize(
    ("cache_control", "param"),
    [
        ({"type": "persistent"}, "messages[0].content[0].cache_control.type"),
        ({}, "messages[0].content[0].cache_control.type"),
        ({"type": "ephemeral", "ttl": "2h"}, "messages[0].content[0].cache_control.ttl"),
        ({"type": "ephemeral", "ttl": 300}, "messages[0].content[0].cache_control.ttl"),
        ({"type": "ephemeral", "scope": "org"}, "messages[0].content[0].cache_control.scope"),
        ("ephemeral", "messages[0].content[0].cache_control"),
    ],
)
def test_a_malformed_cache_control_is_refused_naming_it(cache_control: Any, param: str) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        decode(messages=[user({**text("hi"), "cache_control": cache_control})])
    assert caught.value.param == param


def test_direct_caller_on_tool_use_is_accepted() -> None:
    block = {"type": "tool_use", "id": "t", "name": "f", "input": {}, "caller": {"type": "direct"}}
    assert decode(messages=[HI, assistant(block)]).messages[1] == AssistantMessage(
        tool_calls=(ToolCall(id="t", name="f", arguments="{}"),)
    )


# ---- tools and tool_choice -------------------------------------------------------------


def test_custom_tools() -> None:
    tools = [
        WEATHER,
        {"type": "custom", "name": "noop", "input_schema": {"type": "object"}, "strict": True},
        {**WEATHER, "name": "cached", "cache_control": {"type": "ephemeral"}},
    ]
    assert decode(tools=tools).tools == (
        ToolDefinition(name="get_weather", description="Weather for a city", parameters=SCHEMA),
        ToolDefinition(name="noop", parameters={"type": "object"}, strict=True),
        ToolDefinition(
            name="cached", description="Weather for a city", parameters=SCHEMA, cache=CacheMark()
        ),
    )


@pytest.mark.parametrize(
    ("choice", "expected", "parallel"),
    [
        ({"type": "auto"}, ToolChoice(mode="auto"), None),
        ({"type": "any"}, ToolChoice(mode="required"), None),
        (
            {"type": "tool", "name": "get_weather"},
            ToolChoice(mode="tool", name="get_weather"),
            None,
        ),
        ({"type": "none"}, ToolChoice(mode="none"), None),
        ({"type": "auto", "disable_parallel_tool_use": True}, ToolChoice(mode="auto"), False),
        ({"type": "any", "disable_parallel_tool_use": False}, ToolChoice(mode="required"), True),
        (
            {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True},
            ToolChoice(mode="tool", name="get_weather"),
            False,
        ),
    ],
)
def test_tool_choice(choice: Any, expected: ToolChoice, parallel: bool | None) -> None:
    request = decode(tools=[WEATHER], tool_choice=choice)
    assert (request.tool_choice, request.parallel_tool_calls) == (expected, parallel)


# ---- rejections ------------------------------------------------------------------------


def rejects(
    raw: bytes, param: str | None, error: type[GatewayError] = InvalidRequestError
) -> GatewayError:
    with pytest.raises(GatewayError) as caught:
        decode_messages_request(raw)
    assert type(caught.value) is error
    assert caught.value.param == param
    if param is not None:
        assert f"`{param}" in caught.value.message
    return caught.value


@pytest.mark.parametrize(
    ("raw", "param"),
    [
        (b"{not json", None),
        (b"[1, 2]", None),
        (b"[" * 100_000 + b"]" * 100_000, None),
        (json.dumps({"max_tokens": 1, "messages": [HI]}).encode(), "model"),
        (body(model=""), "model"),
        (body(model=5), "model"),
        (json.dumps({"model": "m", "messages": [HI]}).encode(), "max_tokens"),
        (body(max_tokens=0), "max_tokens"),
        (body(max_tokens="9"), "max_tokens"),
        (body(max_tokens=True), "max_tokens"),
        (body(max_tokens=1.5), "max_tokens"),
        (json.dumps({"model": "m", "max_tokens": 1}).encode(), "messages"),
        (body(messages=[]), "messages"),
        (body(messages={"role": "user"}), "messages"),
        (body(messages=["hi"]), "messages[0]"),
        (body(messages=[{"content": "hi"}]), "messages[0].role"),
        (body(messages=[{"role": "tool", "content": "hi"}]), "messages[0].role"),
        (body(messages=[{"role": "user"}]), "messages[0].content"),
        (body(messages=[{"role": "user", "content": 5}]), "messages[0].content"),
        (body(messages=[{"role": "user", "content": ""}]), "messages[0].content"),
        (body(messages=[{"role": "user", "content": []}]), "messages[0].content"),
        (body(messages=[{"role": "assistant", "content": []}, HI]), "messages[0].content"),
        (body(temperature=1.5), "temperature"),
        (body(temperature=True), "temperature"),
        (body(top_p=-0.1), "top_p"),
        (body(top_k=-1), "top_k"),
        (body(top_k="3"), "top_k"),
        (body(stop_sequences="END"), "stop_sequences"),
        (body(stop_sequences=["a", 5]), "stop_sequences[1]"),
        (body(metadata="u"), "metadata"),
        (body(metadata={"user_id": 5}), "metadata.user_id"),
        (body(metadata={"session": "s"}), "metadata.session"),
        (body(stream="yes"), "stream"),
        (body(system=5), "system"),
        (body(system=[{"type": "image"}]), "system[0].type"),
        (body(system=[text("")]), "system[0].text"),
        (body(thinking="on"), "thinking"),
        (body(thinking={}), "thinking.type"),
        (body(thinking={"type": "maybe"}), "thinking.type"),
        (body(thinking={"type": "enabled"}), "thinking.budget_tokens"),
        (body(thinking={"type": "enabled", "budget_tokens": 1000}), "thinking.budget_tokens"),
        (body(thinking={"type": "enabled", "budget_tokens": "2048"}), "thinking.budget_tokens"),
        (
            body(thinking={"type": "enabled", "budget_tokens": 2048, "display": "full"}),
            "thinking.display",
        ),
    ],
)
def test_top_level_rejections(raw: bytes, param: str | None) -> None:
    rejects(raw, param)


@pytest.mark.parametrize(
    ("message", "param"),
    [
        (user("hi"), "messages[0].content[0]"),
        (user({"text": "hi"}), "messages[0].content[0].type"),
        (user({"type": 3}), "messages[0].content[0].type"),
        (user(text("")), "messages[0].content[0].text"),
        (user({"type": "text", "text": 5}), "messages[0].content[0].text"),
        (user({"type": "image"}), "messages[0].content[0].source"),
        (user({"type": "image", "source": {"type": "gcs"}}), "messages[0].content[0].source.type"),
        (
            user(
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/bmp", "data": PNG},
                }
            ),
            "messages[0].content[0].source.media_type",
        ),
        (
            user(
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": ""},
                }
            ),
            "messages[0].content[0].source.data",
        ),
        (
            user({"type": "image", "source": {"type": "url", "url": "ftp://img.test/a.png"}}),
            "messages[0].content[0].source.url",
        ),
        (user({"type": "tool_result"}), "messages[0].content[0].tool_use_id"),
        (
            user({"type": "tool_result", "tool_use_id": "t", "is_error": "yes"}),
            "messages[0].content[0].is_error",
        ),
        (
            user({"type": "tool_result", "tool_use_id": "t", "content": 5}),
            "messages[0].content[0].content",
        ),
        (
            user({"type": "tool_use", "id": "t", "name": "f", "input": {}}),
            "messages[0].content[0].type",
        ),
        (
            user({"type": "thinking", "thinking": "x", "signature": "s"}),
            "messages[0].content[0].type",
        ),
        (assistant({"type": "tool_result", "tool_use_id": "t"}), "messages[0].content[0].type"),
        (
            assistant({"type": "tool_use", "id": "t", "name": "f", "input": [1]}),
            "messages[0].content[0].input",
        ),
        (assistant({"type": "tool_use", "name": "f", "input": {}}), "messages[0].content[0].id"),
        (assistant({"type": "tool_use", "id": "t", "input": {}}), "messages[0].content[0].name"),
        (assistant({"type": "thinking", "thinking": "x"}), "messages[0].content[0].signature"),
        (assistant({"type": "redacted_thinking"}), "messages[0].content[0].data"),
    ],
)
def test_block_rejections(message: Any, param: str) -> None:
    rejects(body(messages=[message, HI]), param)


@pytest.mark.parametrize(
    "kind",
    [
        "document",
        "search_result",
        "server_tool_use",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "container_upload",
        "mcp_tool_use",
        "mcp_tool_result",
        "hologram",
    ],
)
def test_unsupported_block_types_in_user_messages_are_named(kind: str) -> None:
    message = {"role": "user", "content": [text("x"), {"type": kind, "source": {}}]}
    error = rejects(
        body(messages=[message, HI]), "messages[0].content[1].type", NativeFeatureUnsupportedError
    )
    assert f"`{kind}`" in error.message


@pytest.mark.parametrize(
    ("message", "param"),
    [
        (
            user({**text("x"), "citations": [{"type": "char_location"}]}),
            "messages[0].content[0].citations",
        ),
        (
            user({"type": "image", "source": {"type": "file", "file_id": "file_1"}}),
            "messages[0].content[0].source.type",
        ),
        (
            user(
                {
                    "type": "image",
                    "source": {"type": "url", "url": "https://img.test/a.png"},
                    "transformations": {"crop": {}},
                }
            ),
            "messages[0].content[0].transformations",
        ),
        (
            assistant({"type": "image", "source": {"type": "url", "url": "https://i.test/a"}}),
            "messages[0].content[0].type",
        ),
        (
            assistant(
                {
                    "type": "tool_use",
                    "id": "t",
                    "name": "f",
                    "input": {},
                    "caller": {"type": "code_execution_20250825", "tool_id": "s"},
                }
            ),
            "messages[0].content[0].caller",
        ),
        (
            user(
                {
                    "type": "tool_result",
                    "tool_use_id": "t",
                    "content": [text("ok"), {"type": "document", "source": {}}],
                }
            ),
            "messages[0].content[0].content[1].type",
        ),
    ],
)
def test_block_features_the_ir_cannot_carry(message: Any, param: str) -> None:
    rejects(body(messages=[message, HI]), param, NativeFeatureUnsupportedError)


@pytest.mark.parametrize(
    "tool",
    [
        {"type": "bash_20250124", "name": "bash"},
        {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"},
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
        {"type": "web_fetch_20250910", "name": "web_fetch"},
        {"type": "computer_20250124", "name": "computer", "display_width_px": 1024},
        {"type": "code_execution_20250825", "name": "code_execution"},
        {"type": "memory_20250818", "name": "memory"},
        {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
        {"type": "mcp_toolset", "mcp_server_name": "docs"},
    ],
)
def test_anthropic_defined_tools_are_kept_verbatim_as_native_tools(tool: Any) -> None:
    request = decode(tools=[WEATHER, tool])
    assert [t.name for t in request.tools] == ["get_weather"]
    assert request.native_tools == (NativeBlock(format="anthropic", data=tool),)


def test_a_deferred_tool_is_a_tool_marked_for_anthropic_s_tool_search() -> None:
    deferred = {**WEATHER, "name": "get_time", "defer_loading": True}
    search = {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}
    request = decode(tools=[WEATHER, search, deferred])
    assert [(t.name, t.defer_loading) for t in request.tools] == [
        ("get_weather", False),
        ("get_time", True),
    ]
    assert request.native_tools == (NativeBlock(format="anthropic", data=search),)
    rejects(body(tools=[{**WEATHER, "defer_loading": "yes"}]), "tools[0].defer_loading")


def test_a_tool_choice_may_name_a_server_tool() -> None:
    search = {"type": "web_search_20250305", "name": "web_search"}
    request = decode(tools=[search], tool_choice={"type": "tool", "name": "web_search"})
    assert request.tool_choice == ToolChoice(mode="tool", name="web_search")
    rejects(body(tools=[search], tool_choice={"type": "tool", "name": "x"}), "tool_choice.name")


def test_a_server_tool_s_name_must_be_unique_too() -> None:
    search = {"type": "web_search_20250305", "name": "get_weather"}
    rejects(body(tools=[WEATHER, search]), "tools[1].name")


def test_server_tool_blocks_in_an_assistant_turn_are_kept_in_order() -> None:
    call = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    result = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
    cited = {**text("Paris."), "citations": [{"type": "web_search_result_location"}]}
    unknown = {"type": "hologram", "source": {}}
    blocks = [text("Searching."), call, result, cited, unknown]
    request = decode(messages=[HI, assistant(*blocks), HI])
    call_, result_, unknown_ = (
        NativeBlock(format="anthropic", data=b) for b in (call, result, unknown)
    )
    # Cited text is text for every format, kept whole (citations too) for Anthropic.
    cited_ = TextPart(text="Paris.", native=NativeBlock(format="anthropic", data=cited))
    assert request.messages[1] == AssistantMessage(
        content=(TextPart(text="Searching."), call_, result_, cited_, unknown_)
    )


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"allowed_callers": ["code_execution_20250825"]}, "tools[0].allowed_callers"),
        ({"input_examples": [{"city": "Paris"}]}, "tools[0].input_examples"),
    ],
)
def test_tool_features_the_ir_cannot_carry(extra: Any, param: str) -> None:
    rejects(body(tools=[{**WEATHER, **extra}]), param, NativeFeatureUnsupportedError)


def test_tool_features_that_change_nothing_are_accepted() -> None:
    tool = {
        **WEATHER,
        "defer_loading": False,
        "allowed_callers": ["direct"],
        "input_examples": [],
        "eager_input_streaming": True,
    }
    assert decode(tools=[tool]).tools[0].name == "get_weather"


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"tools": WEATHER}, "tools"),
        ({"tools": ["f"]}, "tools[0]"),
        ({"tools": [{**WEATHER, "type": 5}]}, "tools[0].type"),
        ({"tools": [{"input_schema": SCHEMA}]}, "tools[0].name"),
        ({"tools": [{"name": "", "input_schema": SCHEMA}]}, "tools[0].name"),
        ({"tools": [{"name": "f"}]}, "tools[0].input_schema"),
        ({"tools": [{"name": "f", "input_schema": []}]}, "tools[0].input_schema"),
        ({"tools": [{**WEATHER, "strict": "yes"}]}, "tools[0].strict"),
        ({"tools": [{**WEATHER, "description": 5}]}, "tools[0].description"),
        ({"tools": [WEATHER, WEATHER]}, "tools[1].name"),
        ({"tools": [WEATHER], "tool_choice": "auto"}, "tool_choice"),
        ({"tools": [WEATHER], "tool_choice": {}}, "tool_choice.type"),
        ({"tools": [WEATHER], "tool_choice": {"type": "required"}}, "tool_choice.type"),
        ({"tools": [WEATHER], "tool_choice": {"type": "tool"}}, "tool_choice.name"),
        (
            {"tools": [WEATHER], "tool_choice": {"type": "tool", "name": "other"}},
            "tool_choice.name",
        ),
        ({"tool_choice": {"type": "any"}}, "tool_choice"),
        (
            {"tools": [WEATHER], "tool_choice": {"type": "auto", "disable_parallel_tool_use": 1}},
            "tool_choice.disable_parallel_tool_use",
        ),
    ],
)
def test_tool_rejections(fields: Any, param: str) -> None:
    rejects(body(**fields), param)


def test_messages_never_quote_prompt_text() -> None:
    error = rejects(
        body(messages=[user({"type": "text", "text": ["secret prompt"]})]),
        "messages[0].content[0].text",
    )
    assert "secret" not in error.message


# ---- what the official SDK sends -------------------------------------------------------


def sdk_bodies(call: str = "create", **kwargs: Any) -> list[bytes]:
    """The exact bytes the official SDK sends for ``client.messages.<call>(**kwargs)``."""
    sent: list[bytes] = []
    answer = ChatResponse(id="x", model="claude", text="ok")

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(request.content)
        if request.url.path.endswith("/count_tokens"):
            content = encode_count_tokens_response(7)
        else:
            content = encode_messages_response(answer, message_id="msg_1", model="claude")
        return httpx2.Response(200, content=content, headers={"content-type": "application/json"})

    client = anthropic.Anthropic(
        api_key="x",
        base_url="http://gw.test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    result = getattr(client.messages, call)(**kwargs)
    if call == "count_tokens":
        assert result.input_tokens == 7
    return sent


def test_sdk_request_with_everything() -> None:
    messages: Any = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in this image, and the weather?"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                },
                {"type": "image", "source": {"type": "url", "url": "https://img.test/a.jpg"}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Need weather.", "signature": "sig"},
                {"type": "redacted_thinking", "data": "REDACTED"},
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
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [
                        {"type": "text", "text": "18 C"},
                        {
                            "type": "image",
                            "source": {"type": "url", "url": "https://img.test/map.png"},
                        },
                    ],
                    "is_error": False,
                },
                {"type": "text", "text": "And tomorrow?", "cache_control": {"type": "ephemeral"}},
            ],
        },
    ]
    [raw] = sdk_bodies(
        model="claude-sonnet",
        max_tokens=4096,
        system=[{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
        messages=messages,
        tools=[{**WEATHER, "cache_control": {"type": "ephemeral"}}],
        tool_choice={"type": "auto", "disable_parallel_tool_use": True},
        thinking={"type": "enabled", "budget_tokens": 2048},
        metadata={"user_id": "u-9"},
        stop_sequences=["END"],
        service_tier="standard_only",
        extra_body={"temperature": 1, "top_k": 5},
    )
    assert decode_messages_request(raw) == ChatRequest(
        model="claude-sonnet",
        messages=(
            SystemMessage(content=(TextPart(text="You are terse.", cache=CacheMark()),)),
            UserMessage(
                content=(
                    TextPart(text="What is in this image, and the weather?"),
                    ImagePart(data=PNG, media_type="image/png"),
                    ImagePart(url="https://img.test/a.jpg"),
                )
            ),
            AssistantMessage(
                content=(
                    ThinkingPart(text="Need weather.", signature="sig"),
                    ThinkingPart(redacted="REDACTED"),
                ),
                tool_calls=(
                    ToolCall(id="toolu_1", name="get_weather", arguments='{"city":"Paris"}'),
                ),
            ),
            ToolMessage(
                tool_call_id="toolu_1",
                content=(TextPart(text="18 C"), ImagePart(url="https://img.test/map.png")),
            ),
            UserMessage(content=(TextPart(text="And tomorrow?", cache=CacheMark()),)),
        ),
        tools=(
            ToolDefinition(
                name="get_weather",
                description="Weather for a city",
                parameters=SCHEMA,
                cache=CacheMark(),
            ),
        ),
        tool_choice=ToolChoice(mode="auto"),
        parallel_tool_calls=False,
        sampling=Sampling(temperature=1.0, top_k=5),
        stop=("END",),
        max_tokens=4096,
        reasoning=Reasoning(budget_tokens=2048),
        include_usage=True,
        user="u-9",
        extensions={"anthropic": {"service_tier": "standard_only"}},
    )


def test_sdk_request_passing_a_response_back() -> None:
    """Clients append ``message.content`` (SDK models, not dicts) to the next request."""
    first = ChatResponse(
        id="x",
        model="claude",
        text="Let me check.",
        thinking=(ThinkingPart(text="hmm", signature="s1"),),
        tool_calls=(ToolCall(id="toolu_9", name="get_weather", arguments='{"city":"Oslo"}'),),
        finish_reason="tool_calls",
    )
    raw = encode_messages_response(first, message_id="msg_1", model="claude")

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=raw, headers={"content-type": "application/json"})

    client = anthropic.Anthropic(
        api_key="x",
        base_url="http://gw.test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    reply = client.messages.create(model="claude", max_tokens=100, messages=[HI])
    [sent] = sdk_bodies(
        model="claude",
        max_tokens=100,
        messages=[
            HI,
            {"role": "assistant", "content": reply.content},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "-3 C"}],
            },
        ],
    )
    assert decode_messages_request(sent).messages[1:] == (
        AssistantMessage(
            content=(ThinkingPart(text="hmm", signature="s1"), TextPart(text="Let me check.")),
            tool_calls=(ToolCall(id="toolu_9", name="get_weather", arguments='{"city":"Oslo"}'),),
        ),
        ToolMessage(tool_call_id="toolu_9", content=(TextPart(text="-3 C"),)),
    )


def test_sdk_stream_request_sets_stream() -> None:
    sent: list[bytes] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(request.content)
        return httpx2.Response(
            400, json={"type": "error", "error": {"type": "x", "message": "stop"}}
        )

    client = anthropic.Anthropic(
        api_key="x",
        base_url="http://gw.test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    with (
        pytest.raises(anthropic.BadRequestError),
        client.messages.stream(
            model="claude",
            max_tokens=10,
            messages=[HI],
            tool_choice={"type": "none"},
            tools=[WEATHER],
        ) as stream,
    ):
        stream.get_final_message()
    request = decode_messages_request(sent[0])
    assert (request.stream, request.tool_choice) == (True, ToolChoice(mode="none"))


def test_sdk_count_tokens_request() -> None:
    [raw] = sdk_bodies(
        "count_tokens",
        model="claude",
        system="Be brief.",
        messages=[HI],
        tools=[WEATHER],
        thinking={"type": "enabled", "budget_tokens": 1024},
    )
    request = decode_count_tokens_request(raw)
    assert request.max_tokens is None
    assert request.tools[0].name == "get_weather"
    assert request.reasoning == Reasoning(budget_tokens=1024)
    with pytest.raises(InvalidRequestError):
        decode_messages_request(raw)


def test_an_unknown_block_type_is_named_only_when_it_looks_like_a_type() -> None:
    """Error messages go to traces, which keep no prompt text."""
    with pytest.raises(NativeFeatureUnsupportedError) as named:
        decode(messages=[user({"type": "document_v9"})])
    assert "`document_v9` blocks" in named.value.message
    with pytest.raises(NativeFeatureUnsupportedError) as unnamed:
        decode(messages=[user({"type": "my card number is 4111 1111"})])
    assert "4111" not in unnamed.value.message
    assert "blocks of an unknown type are not supported" in unnamed.value.message

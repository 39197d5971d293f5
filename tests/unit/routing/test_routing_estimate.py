"""The input-token estimate and the capabilities a request needs."""

from __future__ import annotations

import math

import msgspec

from gw.ir import (
    AssistantMessage,
    ChatRequest,
    ImagePart,
    Reasoning,
    ResponseFormat,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolChoice,
    ToolDefinition,
    ToolMessage,
    UserMessage,
)
from gw.routing.estimate import estimate_input_tokens
from gw.routing.needs import required_capabilities

TOOL = ToolDefinition(
    name="get_weather",
    description="Weather for a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


def user(*parts: TextPart | ImagePart) -> UserMessage:
    return UserMessage(content=parts)


def request(*messages: UserMessage | SystemMessage | AssistantMessage | ToolMessage) -> ChatRequest:
    return ChatRequest(model="chat", messages=messages)


def test_text_is_about_four_characters_per_token_plus_framing() -> None:
    assert estimate_input_tokens(request(user(TextPart(text="x" * 400)))) == 100 + 4
    assert estimate_input_tokens(request(user(TextPart(text="abc")))) == 1 + 4


def test_every_role_counts() -> None:
    conversation = request(
        SystemMessage(content=(TextPart(text="s" * 8),)),
        user(TextPart(text="u" * 8)),
        AssistantMessage(
            content=(TextPart(text="a" * 8),),
            tool_calls=(ToolCall(id="c1", name="tool", arguments='{"k":1}'),),
        ),
        ToolMessage(tool_call_id="c1", content=(TextPart(text="r" * 8),)),
    )
    chars = 8 * 4 + len("tool") + len('{"k":1}')
    assert estimate_input_tokens(conversation) == math.ceil(chars / 4) + 4 * 4


def test_images_cost_765_or_85_when_low_detail() -> None:
    high = request(user(ImagePart(url="https://example.com/a.png")))
    low = request(user(ImagePart(url="https://example.com/a.png", detail="low")))
    assert estimate_input_tokens(high) == 765 + 4
    assert estimate_input_tokens(low) == 85 + 4


def test_tool_definitions_count_by_json_size() -> None:
    base = request(user(TextPart(text="hi")))
    with_tools = msgspec.structs.replace(base, tools=(TOOL,))
    size = len(msgspec.json.encode(TOOL))
    assert estimate_input_tokens(with_tools) == math.ceil((len("hi") + size) / 4) + 4
    assert estimate_input_tokens(with_tools) > estimate_input_tokens(base) + 30


def test_a_json_schema_response_format_counts_too() -> None:
    base = request(user(TextPart(text="hi")))
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    with_schema = msgspec.structs.replace(
        base, response_format=ResponseFormat(type="json_schema", name="a", json_schema=schema)
    )
    size = len(msgspec.json.encode(schema))
    assert estimate_input_tokens(with_schema) == math.ceil((len("hi") + size) / 4) + 4


def test_estimate_is_deterministic_and_grows_with_text() -> None:
    short = request(user(TextPart(text="hello")))
    longer = request(user(TextPart(text="hello" * 50)))
    assert estimate_input_tokens(short) == estimate_input_tokens(short)
    assert estimate_input_tokens(longer) > estimate_input_tokens(short)


def test_plain_text_needs_nothing() -> None:
    assert required_capabilities(request(user(TextPart(text="hi")))) == frozenset()


def test_tools_are_needed_for_definitions_or_a_forcing_tool_choice() -> None:
    base = request(user(TextPart(text="hi")))
    assert required_capabilities(msgspec.structs.replace(base, tools=(TOOL,))) == {"tools"}
    forced = msgspec.structs.replace(base, tool_choice=ToolChoice(mode="required"))
    assert required_capabilities(forced) == {"tools"}
    declined = msgspec.structs.replace(base, tool_choice=ToolChoice(mode="none"))
    assert required_capabilities(declined) == frozenset()


def test_images_need_vision() -> None:
    with_image = request(user(TextPart(text="what is this"), ImagePart(data="aGk=")))
    assert required_capabilities(with_image) == {"vision"}


def test_response_formats() -> None:
    base = request(user(TextPart(text="hi")))
    schema = ResponseFormat(type="json_schema", name="x", json_schema={"type": "object"})
    assert required_capabilities(msgspec.structs.replace(base, response_format=schema)) == {
        "json_schema"
    }
    json_object = msgspec.structs.replace(base, response_format=ResponseFormat(type="json_object"))
    assert required_capabilities(json_object) == {"json_object"}
    text = msgspec.structs.replace(base, response_format=ResponseFormat(type="text"))
    assert required_capabilities(text) == frozenset()


def test_reasoning_is_needed_when_asked_for_and_not_when_disabled() -> None:
    base = request(user(TextPart(text="hi")))
    for asked in (Reasoning(budget_tokens=2048), Reasoning(effort="low")):
        assert required_capabilities(msgspec.structs.replace(base, reasoning=asked)) == {
            "reasoning"
        }
    disabled = msgspec.structs.replace(base, reasoning=Reasoning(budget_tokens=0))
    assert required_capabilities(disabled) == frozenset()

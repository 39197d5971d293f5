"""IR -> the body a ``kind: openai_responses`` upstream is sent, each body checked against
the openai SDK's own request type, and what cannot be carried noted."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types.responses.response_create_params import (
    ResponseCreateParamsNonStreaming,
    ResponseCreateParamsStreaming,
)
from pydantic import TypeAdapter

from gw.codecs.openai_responses import encode_upstream_request, lossy_notes
from gw.codecs.openai_responses.client_request import decode_responses_request
from gw.ir import (
    AssistantMessage,
    CacheMark,
    ChatRequest,
    FilePart,
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

WHOLE: TypeAdapter[Any] = TypeAdapter(ResponseCreateParamsNonStreaming)
STREAMED: TypeAdapter[Any] = TypeAdapter(ResponseCreateParamsStreaming)
CALL = ToolCall(id="call_1", name="get_weather", arguments='{"city": "Paris"}')
WEATHER = ToolDefinition(
    name="get_weather",
    description="Weather now",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)
REASONING_ITEM = {
    "id": "rs_1",
    "type": "reasoning",
    "summary": [{"type": "summary_text", "text": "Think."}],
    "encrypted_content": "gAAAAB-opaque",
}
SEARCH_ITEM = {
    "id": "ws_1",
    "type": "web_search_call",
    "status": "completed",
    "action": {"type": "search", "query": "weather"},
}


def user(text: str) -> UserMessage:
    return UserMessage(content=(TextPart(text=text),))


def encode(request: ChatRequest, *, stream: bool = False) -> dict[str, Any]:
    body = json.loads(encode_upstream_request(request, model="gpt-5-mini", stream=stream))
    (STREAMED if stream else WHOLE).validate_python(body)
    return body


def test_a_chat_conversation_becomes_instructions_and_items() -> None:
    request = ChatRequest(
        model="route",
        messages=(
            SystemMessage(content=(TextPart(text="Be brief."), TextPart(text="Use metric."))),
            user("Weather in Paris?"),
            AssistantMessage(content=(TextPart(text="Let me check."),), tool_calls=(CALL,)),
            ToolMessage(tool_call_id="call_1", content=(TextPart(text="21 C"),)),
            SystemMessage(content=(TextPart(text="Answer in French."),)),
        ),
    )
    body = encode(request)
    assert body["model"] == "gpt-5-mini"
    assert body["stream"] is False
    assert body["store"] is False
    assert body["instructions"] == "Be brief.\n\nUse metric."
    assert body["input"] == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]},
        {"type": "message", "role": "assistant", "content": "Let me check."},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "21 C"},
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Answer in French."}]},
    ]  # fmt: skip
    assert lossy_notes(request) == []


def test_settings_map_to_their_responses_fields() -> None:
    request = ChatRequest(
        model="route",
        messages=(user("hi"),),
        tools=(WEATHER, ToolDefinition(name="strict_one", strict=True)),
        tool_choice=ToolChoice(mode="tool", name="get_weather"),
        parallel_tool_calls=False,
        response_format=ResponseFormat(
            type="json_schema", name="city", json_schema={"type": "object"}, strict=True
        ),
        sampling=Sampling(temperature=0.2, top_p=0.9),
        max_tokens=300,
        reasoning=Reasoning(budget_tokens=4000),
        user="u-1",
        stream=True,
    )
    body = encode(request, stream=True)
    assert body["stream"] is True
    assert "stream_options" not in body
    assert body["tools"] == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Weather now",
            "parameters": WEATHER.parameters,
            "strict": False,  # unset: loose, as in Chat Completions (Responses would be strict)
        },
        {"type": "function", "name": "strict_one", "parameters": None, "strict": True},
    ]
    assert body["tool_choice"] == {"type": "function", "name": "get_weather"}
    assert body["parallel_tool_calls"] is False
    assert body["text"] == {
        "format": {
            "type": "json_schema",
            "name": "city",
            "schema": {"type": "object"},
            "strict": True,
        }
    }
    assert body["reasoning"] == {"effort": "medium"}
    assert body["max_output_tokens"] == 300
    assert (body["temperature"], body["top_p"], body["user"]) == (0.2, 0.9, "u-1")


@pytest.mark.parametrize(
    ("reasoning", "sent"),
    [
        (Reasoning(effort="xhigh", summary="auto"), {"effort": "xhigh", "summary": "auto"}),
        (Reasoning(summary="detailed"), {"summary": "detailed"}),  # no effort invented
        (Reasoning(adaptive=True), {"effort": "medium"}),
        (Reasoning(budget_tokens=1024), {"effort": "low"}),
        (Reasoning(budget_tokens=32000), {"effort": "high"}),
        # Thinking off (Gemini clients): nothing, as only reasoning models take "none".
        (Reasoning(budget_tokens=0), None),
    ],
)
def test_reasoning(reasoning: Reasoning, sent: dict[str, str] | None) -> None:
    body = encode(ChatRequest(model="m", messages=(user("x"),), reasoning=reasoning))
    assert body.get("reasoning") == sent


def test_images_and_files_are_input_parts() -> None:
    request = ChatRequest(
        model="m",
        messages=(
            UserMessage(
                content=(
                    ImagePart(url="https://example.com/a.png", detail="low"),
                    ImagePart(data="iVBORw0KGgo="),
                    FilePart(data="JVBERi0=", media_type="application/pdf", filename="a.pdf"),
                    FilePart(file_id="file-1"),
                    FilePart(url="https://example.com/b.pdf"),
                )
            ),
            AssistantMessage(tool_calls=(CALL,)),
            ToolMessage(
                tool_call_id="call_1",
                content=(TextPart(text="see"), ImagePart(url="https://example.com/c.png")),
            ),
        ),
    )
    body = encode(request)
    assert body["input"][0]["content"] == [
        {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "low"},
        {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"},
        {"type": "input_file", "file_data": "data:application/pdf;base64,JVBERi0=", "filename": "a.pdf"},
        {"type": "input_file", "file_id": "file-1"},
        {"type": "input_file", "file_url": "https://example.com/b.pdf"},
    ]  # fmt: skip
    assert body["input"][2]["output"] == [
        {"type": "input_text", "text": "see"},
        {"type": "input_image", "image_url": "https://example.com/c.png", "detail": "auto"},
    ]


def test_a_responses_client_body_reaches_the_upstream_verbatim() -> None:
    sent = {
        "model": "route",
        "instructions": "Be terse.",
        "previous_response_id": "resp_upstream_1",
        "store": True,
        "include": ["reasoning.encrypted_content"],
        "metadata": {"app": "x"},
        "truncation": "auto",
        "prompt_cache_key": "k1",
        "text": {"verbosity": "low", "format": {"type": "json_object"}},
        "tool_choice": {"type": "web_search_preview"},
        "tools": [{"type": "web_search"}, {"type": "function", "name": "f", "strict": True}],
        "reasoning": {"effort": "low", "summary": "auto"},
        "input": [
            {"role": "user", "content": "weather?"},
            REASONING_ITEM,
            SEARCH_ITEM,
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Sunny."}]},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "ok"},
            {"role": "user", "content": "thanks"},
        ],
    }  # fmt: skip
    request = decode_responses_request(json.dumps(sent).encode())
    body = encode(request)
    for key in ("instructions", "previous_response_id", "store", "include", "metadata",
                "truncation", "prompt_cache_key", "tool_choice", "reasoning"):  # fmt: skip
        assert body[key] == sent[key], key
    # Function tools first: the IR keeps them apart from provider-side tools.
    assert body["tools"] == [sent["tools"][1] | {"parameters": None}, sent["tools"][0]]
    assert body["text"] == {"verbosity": "low", "format": {"type": "json_object"}}
    assert body["input"] == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "weather?"}]},
        REASONING_ITEM,
        SEARCH_ITEM,
        {"type": "message", "role": "assistant", "content": "Sunny."},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "thanks"}]},
    ]  # fmt: skip
    assert lossy_notes(request) == []


def test_what_gw_computed_is_not_overridden_by_extensions() -> None:
    request = ChatRequest(
        model="m",
        messages=(user("x"),),
        max_tokens=100,
        extensions={
            "openai_responses": {
                "background": True,
                "max_output_tokens": 5000,
                "stream": True,
                "model": "other",
            }
        },
    )
    body = encode(request)
    assert (body["model"], body["stream"], body["max_output_tokens"]) == ("gpt-5-mini", False, 100)
    assert "background" not in body


def test_what_the_format_cannot_carry_is_noted() -> None:
    request = ChatRequest(
        model="m",
        messages=(
            UserMessage(content=(TextPart(text="x", cache=CacheMark()),), name="ann"),
            AssistantMessage(
                content=(
                    ThinkingPart(text="hmm", signature="sig"),
                    NativeBlock(format="anthropic", data={"type": "server_tool_use"}),
                    TextPart(text="y"),
                )
            ),
            ToolMessage(tool_call_id="t", content=(TextPart(text="bad"),), is_error=True),
        ),
        sampling=Sampling(top_k=5, seed=1),
        stop=("END",),
        extensions={"openai": {"logprobs": True}},
        native_tools=(NativeBlock(format="anthropic", data={"type": "web_search_20250305"}),),
    )
    body = encode(request)
    assert body["input"][1] == {"type": "message", "role": "assistant", "content": "y"}
    assert "stop" not in body
    assert "logprobs" not in body
    assert "tools" not in body
    notes = lossy_notes(request)
    assert notes[0] == (
        "sampling.top_k, sampling.seed, stop sequences: not sent (the OpenAI Responses format "
        "has none)"
    )
    assert notes[1] == (
        "messages[0].name: not sent (the OpenAI Responses format has no message names)"
    )
    assert any("thinking blocks" in note for note in notes)
    assert any("is_error" in note for note in notes)
    assert any("cache_control" in note for note in notes)
    assert any(note.startswith("logprobs: not sent") for note in notes)
    assert any("server_tool_use not sent" in note for note in notes)
    assert any("tools web_search_20250305: not sent" in note for note in notes)

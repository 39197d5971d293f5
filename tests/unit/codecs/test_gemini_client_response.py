"""encode_response: IR answers as the GenerateContentResponse google-genai parses, field for
field: text, thoughts and their signatures, function calls, finish reason and usage."""

from __future__ import annotations

import json

import pytest
from unit.codecs.gemini_sdk import answer

from gw.codecs.gemini.client_request import decode_generate_request
from gw.codecs.gemini.client_response import check_response, encode_response
from gw.errors import UpstreamError
from gw.ir import (
    AssistantMessage,
    ChatResponse,
    NativeBlock,
    TextPart,
    ThinkingPart,
    ToolCall,
    Usage,
)

USAGE = Usage(input_tokens=10, output_tokens=30, cached_input_tokens=4, reasoning_tokens=12)


def encode(response: ChatResponse) -> bytes:
    return encode_response(response, response_id="req_1", model="gpt-4o")


def test_the_sdk_reads_text_usage_and_ids() -> None:
    body = encode(ChatResponse(id="x", model="gpt-4o", text="Hello", usage=USAGE))
    parsed = answer(body).client.models.generate_content(model="m", contents="hi")
    assert parsed.text == "Hello"
    assert parsed.response_id == "req_1"
    assert parsed.model_version == "gpt-4o"
    assert parsed.candidates is not None
    assert parsed.candidates[0].finish_reason == "STOP"
    usage = parsed.usage_metadata
    assert usage is not None
    assert (usage.prompt_token_count, usage.candidates_token_count) == (10, 18)
    assert (usage.thoughts_token_count, usage.cached_content_token_count) == (12, 4)
    assert usage.total_token_count == 40


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("stop", "STOP"),
        ("length", "MAX_TOKENS"),
        ("tool_calls", "STOP"),
        ("content_filter", "SAFETY"),
    ],
)
def test_finish_reasons(reason: str, expected: str) -> None:
    response = ChatResponse(id="x", model="m", text="t", finish_reason=reason)  # type: ignore[arg-type]
    assert json.loads(encode(response))["candidates"][0]["finishReason"] == expected


def test_function_calls_go_whole_with_their_ids() -> None:
    calls = (
        ToolCall(id="call_9", name="get_weather", arguments='{"city": "Paris"}'),
        ToolCall(id="call_10", name="now", arguments=""),
    )
    response = ChatResponse(id="x", model="m", tool_calls=calls, finish_reason="tool_calls")
    parsed = answer(encode(response)).client.models.generate_content(model="m", contents="hi")
    assert [(c.id, c.name, c.args) for c in parsed.function_calls or []] == [
        ("call_9", "get_weather", {"city": "Paris"}),
        ("call_10", "now", {}),
    ]


def test_arguments_that_are_not_an_object_are_an_upstream_error() -> None:
    response = ChatResponse(
        id="x", model="m", tool_calls=(ToolCall(id="c", name="f", arguments='{"cut'),)
    )
    with pytest.raises(UpstreamError):
        check_response(response)


def test_gemini_signatures_go_back_where_gemini_put_them() -> None:
    """A Gemini upstream's answer: a thought summary, then a signed function call."""
    response = ChatResponse(
        id="x",
        model="m",
        thinking=(ThinkingPart(text="I need the weather"), ThinkingPart(signature="c2ln")),
        tool_calls=(ToolCall(id="c1", name="f", arguments="{}"),),
    )
    parts = json.loads(encode(response))["candidates"][0]["content"]["parts"]
    assert parts == [
        {"text": "I need the weather", "thought": True},
        {"functionCall": {"id": "c1", "name": "f", "args": {}}, "thoughtSignature": "c2ln"},
    ]
    parsed = answer(encode(response)).client.models.generate_content(model="m", contents="hi")
    assert parsed.text is None  # thoughts are not the answer's text
    text_only = ChatResponse(
        id="x", model="m", text="hi", thinking=(ThinkingPart(signature="c2ln"),)
    )
    assert json.loads(encode(text_only))["candidates"][0]["content"]["parts"] == [
        {"text": "hi", "thoughtSignature": "c2ln"}
    ]


def test_a_signature_the_sdk_cannot_read_is_left_out() -> None:
    response = ChatResponse(
        id="x", model="m", text="hi", thinking=(ThinkingPart(text="hm", signature="not base64!"),)
    )
    parts = json.loads(encode(response))["candidates"][0]["content"]["parts"]
    assert parts == [{"text": "hm", "thought": True}, {"text": "hi"}]
    answer(encode(response)).client.models.generate_content(model="m", contents="hi")


def test_ordered_blocks_keep_their_order_and_come_back_the_same() -> None:
    """An Anthropic upstream's interleaved answer survives a round trip through the client."""
    blocks = (
        ThinkingPart(text="first", signature="RXFRQg=="),
        TextPart(text="Looking it up."),
        ToolCall(id="toolu_1", name="f", arguments='{"q":1}'),
        NativeBlock(format="anthropic", data={"type": "server_tool_use"}),
    )
    response = ChatResponse(id="x", model="m", blocks=blocks, tool_calls=(blocks[2],))  # type: ignore[arg-type]
    parts = json.loads(encode(response))["candidates"][0]["content"]["parts"]
    assert parts == [
        {"text": "first", "thought": True, "thoughtSignature": "RXFRQg=="},
        {"text": "Looking it up."},
        {"functionCall": {"id": "toolu_1", "name": "f", "args": {"q": 1}}},
    ]
    back = {
        "contents": [
            {"role": "user", "parts": [{"text": "hi"}]},
            {"role": "model", "parts": parts},
            {
                "role": "user",
                "parts": [{"functionResponse": {"id": "toolu_1", "name": "f", "response": {}}}],
            },
        ]
    }
    request = decode_generate_request(json.dumps(back).encode(), model="m", stream=False)
    assert request.messages[1] == AssistantMessage(
        content=(ThinkingPart(text="first", signature="RXFRQg=="), TextPart(text="Looking it up.")),
        tool_calls=(ToolCall(id="toolu_1", name="f", arguments='{"q":1}'),),
    )


def test_an_empty_answer_still_has_a_part() -> None:
    body = json.loads(encode(ChatResponse(id="x", model="m")))
    assert body["candidates"][0]["content"]["parts"] == [{"text": ""}]
    assert "usageMetadata" not in body

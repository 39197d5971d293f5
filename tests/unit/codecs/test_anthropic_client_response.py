"""encode_messages_response: the Message object, checked by the official Anthropic SDK."""

from __future__ import annotations

import json

import anthropic
import httpx2
import pytest
from anthropic.types import Message, RedactedThinkingBlock, TextBlock, ThinkingBlock, ToolUseBlock

from gw.codecs.anthropic_messages.client_response import STOP_REASONS, encode_messages_response
from gw.errors import UpstreamError
from gw.ir import (
    ChatResponse,
    FinishReason,
    NativeBlock,
    TextPart,
    ThinkingPart,
    ToolCall,
    Usage,
)

USAGE = Usage(input_tokens=120, output_tokens=30, cached_input_tokens=100, cache_write_tokens=15)


def sdk_message(raw: bytes) -> Message:
    """What ``client.messages.create`` returns for ``raw``."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=raw, headers={"content-type": "application/json"})

    client = anthropic.Anthropic(
        api_key="x",
        base_url="http://gw.test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        _strict_response_validation=True,
    )
    return client.messages.create(
        model="claude", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    )


def encode(response: ChatResponse) -> bytes:
    return encode_messages_response(response, message_id="msg_01", model="claude-sonnet-4")


def test_text_message_exactly() -> None:
    raw = encode(ChatResponse(id="up-1", model="x", text="Hello!", usage=USAGE))
    assert json.loads(raw) == {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4",
        "content": [{"type": "text", "text": "Hello!"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 5,
            "cache_creation_input_tokens": 15,
            "cache_read_input_tokens": 100,
            "output_tokens": 30,
        },
    }


def test_sdk_reads_text_stop_reason_and_usage() -> None:
    message = sdk_message(encode(ChatResponse(id="u", model="x", text="Hello!", usage=USAGE)))
    assert message.id == "msg_01"
    assert message.model == "claude-sonnet-4"
    assert message.content == [TextBlock(type="text", text="Hello!")]
    assert message.stop_reason == "end_turn"
    assert message.stop_sequence is None
    usage = message.usage
    assert (usage.input_tokens, usage.output_tokens) == (5, 30)
    assert (usage.cache_creation_input_tokens, usage.cache_read_input_tokens) == (15, 100)


def test_content_order_thinking_text_tool_use() -> None:
    response = ChatResponse(
        id="u",
        model="x",
        text="Checking the weather.",
        thinking=(
            ThinkingPart(text="The user wants weather.", signature="sig-1"),
            ThinkingPart(redacted="ENCRYPTED"),
        ),
        tool_calls=(
            ToolCall(
                id="toolu_1", name="get_weather", arguments='{"city": "Paris", "days": [1, 2]}'
            ),
            ToolCall(id="toolu_2", name="get_time", arguments=""),
        ),
        finish_reason="tool_calls",
        usage=USAGE,
    )
    message = sdk_message(encode(response))
    assert message.content == [
        ThinkingBlock(type="thinking", thinking="The user wants weather.", signature="sig-1"),
        RedactedThinkingBlock(type="redacted_thinking", data="ENCRYPTED"),
        TextBlock(type="text", text="Checking the weather."),
        ToolUseBlock(
            type="tool_use",
            id="toolu_1",
            name="get_weather",
            input={"city": "Paris", "days": [1, 2]},
        ),
        ToolUseBlock(type="tool_use", id="toolu_2", name="get_time", input={}),
    ]
    assert message.stop_reason == "tool_use"


def test_ordered_blocks_go_out_in_their_order() -> None:
    """An Anthropic upstream's interleaved thinking and tool use, as it produced them."""
    paris = ToolCall(id="toolu_1", name="weather", arguments='{"city":"Paris"}')
    rome = ToolCall(id="toolu_2", name="weather", arguments='{"city":"Rome"}')
    first = ThinkingPart(text="first", signature="s1")
    then = ThinkingPart(text="then", signature="s2")
    response = ChatResponse(
        id="u",
        model="x",
        text="Paris.Rome.",
        thinking=(first, then),
        tool_calls=(paris, rome),
        blocks=(first, TextPart(text="Paris."), paris, then, TextPart(text="Rome."), rome),
        finish_reason="tool_calls",
    )
    message = sdk_message(encode(response))
    assert message.content == [
        ThinkingBlock(type="thinking", thinking="first", signature="s1"),
        TextBlock(type="text", text="Paris."),
        ToolUseBlock(type="tool_use", id="toolu_1", name="weather", input={"city": "Paris"}),
        ThinkingBlock(type="thinking", thinking="then", signature="s2"),
        TextBlock(type="text", text="Rome."),
        ToolUseBlock(type="tool_use", id="toolu_2", name="weather", input={"city": "Rome"}),
    ]


def test_native_blocks_go_out_verbatim_in_their_place() -> None:
    """A web search answer from an Anthropic upstream, as the SDK reads it."""
    call = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    result = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
    cited = {
        "type": "text",
        "text": "Paris.",
        "citations": [
            {
                "type": "web_search_result_location",
                "url": "https://a.test",
                "title": "A",
                "encrypted_index": "Eo",
                "cited_text": "Paris",
            }
        ],
    }
    response = ChatResponse(
        id="u",
        model="x",
        text="Paris.",
        blocks=(
            NativeBlock(format="anthropic", data=call),
            NativeBlock(format="anthropic", data=result),
            NativeBlock(format="openai_responses", data={"type": "reasoning"}),
            NativeBlock(format="anthropic", data=cited),
        ),
        finish_reason="pause",
    )
    message = sdk_message(encode(response))
    assert [block.model_dump(exclude_none=True) for block in message.content] == [
        call,
        result,
        cited,
    ]
    assert message.stop_reason == "pause_turn"


def test_thinking_without_signature_gets_an_empty_one() -> None:
    raw = encode(ChatResponse(id="u", model="x", thinking=(ThinkingPart(text="hmm"),)))
    assert json.loads(raw)["content"] == [{"type": "thinking", "thinking": "hmm", "signature": ""}]


@pytest.mark.parametrize("text", [None, ""])
def test_no_text_block_without_text(text: str | None) -> None:
    call = ToolCall(id="t", name="f", arguments="{}")
    response = ChatResponse(
        id="u", model="x", text=text, tool_calls=(call,), finish_reason="tool_calls"
    )
    assert [block["type"] for block in json.loads(encode(response))["content"]] == ["tool_use"]


def test_empty_answer_has_empty_content() -> None:
    message = sdk_message(encode(ChatResponse(id="u", model="x")))
    assert message.content == []


@pytest.mark.parametrize("arguments", ["[1, 2]", '"text"', "{not json", "null", '{"a": 1'])
def test_arguments_that_are_not_a_json_object_are_an_upstream_error(arguments: str) -> None:
    call = ToolCall(id="t", name="f", arguments=arguments)
    with pytest.raises(UpstreamError) as caught:
        encode(ChatResponse(id="u", model="x", tool_calls=(call,), finish_reason="tool_calls"))
    assert caught.value.blame == "upstream"
    assert arguments not in caught.value.message


@pytest.mark.parametrize("arguments", ["", "  \n"])
def test_empty_arguments_are_an_empty_input(arguments: str) -> None:
    call = ToolCall(id="t", name="f", arguments=arguments)
    body = json.loads(encode(ChatResponse(id="u", model="x", tool_calls=(call,))))
    assert body["content"][0]["input"] == {}


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("stop", "end_turn"),
        ("length", "max_tokens"),
        ("tool_calls", "tool_use"),
        ("content_filter", "refusal"),
        ("error", "end_turn"),
        ("pause", "pause_turn"),
    ],
)
def test_stop_reasons(reason: FinishReason, expected: str) -> None:
    assert STOP_REASONS[reason] == expected
    message = sdk_message(encode(ChatResponse(id="u", model="x", text="t", finish_reason=reason)))
    assert (message.stop_reason, message.stop_sequence) == (expected, None)


def test_stop_sequence() -> None:
    response = ChatResponse(id="u", model="x", text="t", finish_reason="stop", stop_sequence="END")
    message = sdk_message(encode(response))
    assert (message.stop_reason, message.stop_sequence) == ("stop_sequence", "END")


def test_stop_sequence_only_counts_for_a_stop() -> None:
    response = ChatResponse(
        id="u", model="x", text="t", finish_reason="length", stop_sequence="END"
    )
    body = json.loads(encode(response))
    assert (body["stop_reason"], body["stop_sequence"]) == ("max_tokens", None)


def test_unknown_usage_is_zeros() -> None:
    message = sdk_message(encode(ChatResponse(id="u", model="x", text="t")))
    usage = message.usage
    assert (usage.input_tokens, usage.output_tokens) == (0, 0)
    assert (usage.cache_creation_input_tokens, usage.cache_read_input_tokens) == (0, 0)


def test_input_tokens_never_go_negative() -> None:
    usage = Usage(input_tokens=3, output_tokens=1, cached_input_tokens=5)
    body = json.loads(encode(ChatResponse(id="u", model="x", text="t", usage=usage)))
    assert body["usage"]["input_tokens"] == 0

"""decode_upstream_response (Anthropic): blocks, stop reasons, usage, malformed bodies."""

from __future__ import annotations

import json
from typing import Any, get_args

import pytest
from anthropic.types import StopReason

from gw.codecs.anthropic_messages.upstream_response import (
    FINISH_REASONS,
    decode_upstream_response,
)
from gw.errors import OverloadedError, UpstreamError
from gw.ir import ChatResponse, NativeBlock, TextPart, ThinkingPart, ToolCall, Usage


def message(**fields: Any) -> bytes:
    body = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Hi"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 3},
    }
    return json.dumps(body | fields).encode()


def test_text_answer() -> None:
    assert decode_upstream_response(message()) == ChatResponse(
        id="msg_01",
        model="claude-sonnet-4-5",
        text="Hi",
        blocks=(TextPart(text="Hi"),),
        finish_reason="stop",
        usage=Usage(input_tokens=12, output_tokens=3),
    )


def test_every_block_kind() -> None:
    response = decode_upstream_response(
        message(
            content=[
                {"type": "thinking", "thinking": "hmm", "signature": "sig1"},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "text", "text": "Let me ", "citations": None},
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
                {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
                {"type": "text", "text": "check."},
                {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"b": 1, "a": [1, 2]}},
                {"type": "tool_use", "id": "toolu_2", "name": "g", "input": {}},
            ],
            stop_reason="tool_use",
        )
    )
    assert response.text == "Let me check."
    assert response.thinking == (
        ThinkingPart(text="hmm", signature="sig1"),
        ThinkingPart(redacted="opaque"),
    )
    assert response.tool_calls == (
        ToolCall(id="toolu_1", name="f", arguments='{"b":1,"a":[1,2]}'),
        ToolCall(id="toolu_2", name="g", arguments="{}"),
    )
    assert response.finish_reason == "tool_calls"
    assert response.blocks == (
        response.thinking[0],
        response.thinking[1],
        TextPart(text="Let me "),
        NativeBlock(
            format="anthropic",
            data={"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
        ),
        NativeBlock(
            format="anthropic",
            data={"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
        ),
        TextPart(text="check."),
        *response.tool_calls,
    )


def test_server_tool_blocks_and_cited_text_are_kept_verbatim_in_order() -> None:
    """A web search answer: its blocks go back to an Anthropic client as they came; the
    cited text also counts in ``text``, for clients of other formats."""
    citation = {
        "type": "web_search_result_location",
        "url": "https://example.com/paris",
        "title": "Paris",
        "encrypted_index": "EoMBCkYI",
        "cited_text": "Paris is the capital of France.",
    }
    content = [
        {"type": "text", "text": "I'll search."},
        {
            "type": "server_tool_use",
            "id": "srvtoolu_1",
            "name": "web_search",
            "input": {"query": "capital of France"},
        },
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_1",
            "content": [
                {
                    "type": "web_search_result",
                    "url": "https://example.com/paris",
                    "title": "Paris",
                    "encrypted_content": "EqgfCioIARgB",
                    "page_age": None,
                }
            ],
        },
        {"type": "text", "text": "It is Paris.", "citations": [citation]},
        {
            "type": "mcp_tool_use",
            "id": "mcptoolu_1",
            "name": "ask",
            "server_name": "d",
            "input": {},
        },
    ]
    response = decode_upstream_response(message(content=content, stop_reason="pause_turn"))
    assert response.text == "I'll search.It is Paris."
    assert response.blocks == (
        TextPart(text="I'll search."),
        *(NativeBlock(format="anthropic", data=block) for block in content[1:]),
    )
    assert response.finish_reason == "pause"


def test_empty_text_blocks_are_left_out() -> None:
    """Anthropic sends some; a client sending the answer back would be refused for them."""
    content = [
        {"type": "text", "text": ""},
        {"type": "tool_use", "id": "t", "name": "f", "input": {}},
    ]
    response = decode_upstream_response(message(content=content, stop_reason="tool_use"))
    assert response.blocks == (ToolCall(id="t", name="f", arguments="{}"),)
    assert response.text is None


def test_interleaved_blocks_keep_their_order() -> None:
    content = [
        {"type": "thinking", "thinking": "first", "signature": "s1"},
        {"type": "text", "text": "Checking Paris."},
        {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}},
        {"type": "thinking", "thinking": "then", "signature": "s2"},
        {"type": "text", "text": "And Rome."},
        {"type": "tool_use", "id": "toolu_2", "name": "weather", "input": {"city": "Rome"}},
    ]
    response = decode_upstream_response(message(content=content, stop_reason="tool_use"))
    assert response.blocks == (
        ThinkingPart(text="first", signature="s1"),
        TextPart(text="Checking Paris."),
        ToolCall(id="toolu_1", name="weather", arguments='{"city":"Paris"}'),
        ThinkingPart(text="then", signature="s2"),
        TextPart(text="And Rome."),
        ToolCall(id="toolu_2", name="weather", arguments='{"city":"Rome"}'),
    )
    assert response.text == "Checking Paris.And Rome."


def test_no_text_block_gives_no_text() -> None:
    body = message(content=[{"type": "tool_use", "id": "t", "name": "f", "input": {}}])
    assert decode_upstream_response(body).text is None


@pytest.mark.parametrize(
    ("stop_reason", "stop_sequence", "finish", "sequence"),
    [
        ("end_turn", None, "stop", None),
        ("stop_sequence", "END", "stop", "END"),
        ("max_tokens", None, "length", None),
        ("model_context_window_exceeded", None, "length", None),
        ("tool_use", None, "tool_calls", None),
        ("refusal", None, "content_filter", None),
        ("pause_turn", None, "pause", None),
        (None, None, "stop", None),
        ("something_new", None, "stop", None),
    ],
)
def test_stop_reasons(
    stop_reason: str | None, stop_sequence: str | None, finish: str, sequence: str | None
) -> None:
    response = decode_upstream_response(
        message(stop_reason=stop_reason, stop_sequence=stop_sequence)
    )
    assert (response.finish_reason, response.stop_sequence) == (finish, sequence)


def test_finish_table_covers_every_documented_stop_reason() -> None:
    # anthropic.types.StopReason, as the SDK in .venv declares it.
    assert set(get_args(StopReason)) == set(FINISH_REASONS)


def test_usage_adds_cache_counts_and_reads_thinking_tokens() -> None:
    usage = {
        "input_tokens": 10,
        "output_tokens": 50,
        "cache_read_input_tokens": 1000,
        "cache_creation_input_tokens": 200,
        "output_tokens_details": {"thinking_tokens": 30},
        "service_tier": "standard",
    }
    assert decode_upstream_response(message(usage=usage)).usage == Usage(
        input_tokens=1210,
        output_tokens=50,
        cached_input_tokens=1000,
        cache_write_tokens=200,
        reasoning_tokens=30,
    )


def test_null_cache_counts_read_as_zero() -> None:
    usage = {"input_tokens": 4, "output_tokens": 2, "cache_read_input_tokens": None}
    assert decode_upstream_response(message(usage=usage)).usage == Usage(
        input_tokens=4, output_tokens=2
    )


def test_error_object_with_status_200_is_mapped() -> None:
    body = b'{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}'
    with pytest.raises(OverloadedError) as caught:
        decode_upstream_response(body)
    assert caught.value.upstream_status == 200


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b'{"id": "msg", "content": [',
        b'{"id": "msg", "type": "message"}',
        b'{"id": 5, "content": []}',
        b'{"content": [{"type": "tool_use", "input": {}}]}',
        b"[]",
    ],
)
def test_malformed_bodies_raise_upstream_error_without_quoting(body: bytes) -> None:
    with pytest.raises(UpstreamError) as caught:
        decode_upstream_response(body)
    assert caught.value.blame == "upstream"
    assert body.decode() not in caught.value.message

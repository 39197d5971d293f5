"""UpstreamStreamDecoder (Anthropic): event mapping, chunking, errors mid-stream, early EOF."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gw.codecs.anthropic_messages.upstream_stream import UpstreamStreamDecoder
from gw.errors import InvalidRequestError, OverloadedError, PersistentUpstreamError, UpstreamError
from gw.ir import (
    Finish,
    NativeBlock,
    NativeEvent,
    StreamEvent,
    StreamStart,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    Usage,
    UsageEvent,
)


def frame(data: dict[str, Any], event: str | None = None) -> bytes:
    name = data["type"] if event is None else event
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


START = frame(
    {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": 25,
                "cache_creation_input_tokens": 5,
                "cache_read_input_tokens": 100,
                "output_tokens": 1,
            },
        },
    }
)
PING = frame({"type": "ping"})
STOP = frame({"type": "message_stop"})


def block_start(index: int, block: dict[str, Any]) -> bytes:
    return frame({"type": "content_block_start", "index": index, "content_block": block})


def delta(index: int, body: dict[str, Any]) -> bytes:
    return frame({"type": "content_block_delta", "index": index, "delta": body})


def block_stop(index: int) -> bytes:
    return frame({"type": "content_block_stop", "index": index})


def message_delta(stop_reason: str, usage: dict[str, Any], sequence: str | None = None) -> bytes:
    body = {"stop_reason": stop_reason, "stop_sequence": sequence}
    return frame({"type": "message_delta", "delta": body, "usage": usage})


TRANSCRIPT = b"".join(
    [
        START,
        block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        PING,
        delta(0, {"type": "thinking_delta", "thinking": "Let me"}),
        delta(0, {"type": "thinking_delta", "thinking": " think."}),
        delta(0, {"type": "signature_delta", "signature": "EqQBCg"}),
        block_stop(0),
        block_start(1, {"type": "redacted_thinking", "data": "EmwKAh"}),
        block_stop(1),
        block_start(2, {"type": "text", "text": ""}),
        delta(2, {"type": "text_delta", "text": "Hello"}),
        delta(2, {"type": "text_delta", "text": " there"}),
        delta(2, {"type": "citations_delta", "citation": {"type": "char_location"}}),
        block_stop(2),
        block_start(3, {"type": "tool_use", "id": "toolu_a", "name": "get_weather", "input": {}}),
        delta(3, {"type": "input_json_delta", "partial_json": ""}),
        delta(3, {"type": "input_json_delta", "partial_json": '{"city": '}),
        delta(3, {"type": "input_json_delta", "partial_json": '"Paris"}'}),
        block_stop(3),
        block_start(4, {"type": "tool_use", "id": "toolu_b", "name": "now", "input": {}}),
        block_stop(4),
        message_delta("tool_use", {"output_tokens": 42}),
        STOP,
    ]
)
START_USAGE = Usage(
    input_tokens=130, output_tokens=1, cached_input_tokens=100, cache_write_tokens=5
)
EXPECTED: list[StreamEvent] = [
    StreamStart(id="msg_1", model="claude-sonnet-4-5"),
    UsageEvent(usage=START_USAGE),
    ThinkingDelta(text="Let me"),
    ThinkingDelta(text=" think."),
    ThinkingDelta(signature="EqQBCg"),
    ThinkingDelta(redacted="EmwKAh"),
    TextDelta(text="Hello"),
    TextDelta(text=" there"),
    NativeEvent(
        block=NativeBlock(
            format="anthropic",
            data={"type": "citations_delta", "citation": {"type": "char_location"}},
        )
    ),
    ToolCallDelta(index=0, id="toolu_a", name="get_weather"),
    ToolCallDelta(index=0, arguments='{"city": '),
    ToolCallDelta(index=0, arguments='"Paris"}'),
    ToolCallDelta(index=1, id="toolu_b", name="now"),
    ToolCallDelta(index=1, arguments="{}"),
    Finish(reason="tool_calls"),
    UsageEvent(
        usage=Usage(
            input_tokens=130, output_tokens=42, cached_input_tokens=100, cache_write_tokens=5
        )
    ),
]


def decode(*chunks: bytes) -> tuple[list[StreamEvent], UpstreamStreamDecoder]:
    decoder = UpstreamStreamDecoder()
    events: list[StreamEvent] = []
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    return events, decoder


def test_transcript_maps_every_block_kind() -> None:
    events, decoder = decode(TRANSCRIPT)
    assert events == EXPECTED
    assert decoder.done
    assert decoder.close() == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, len(TRANSCRIPT) - 1), max_size=12))
def test_any_chunking_gives_the_same_events(cuts: list[int]) -> None:
    bounds = [0, *sorted(set(cuts)), len(TRANSCRIPT)]
    events, _ = decode(*(TRANSCRIPT[a:b] for a, b in itertools.pairwise(bounds)))
    assert events == EXPECTED


def test_text_in_a_start_block_and_stop_sequence() -> None:
    events, _ = decode(
        START,
        block_start(0, {"type": "text", "text": "Hi"}),
        block_stop(0),
        message_delta("stop_sequence", {"output_tokens": 2}, sequence="###"),
        STOP,
    )
    assert TextDelta(text="Hi") in events
    assert Finish(reason="stop", stop_sequence="###") in events


def test_message_delta_usage_overrides_only_what_it_carries() -> None:
    usage = {
        "input_tokens": 30,
        "cache_read_input_tokens": 100,
        "output_tokens": 9,
        "output_tokens_details": {"thinking_tokens": 4},
    }
    events, _ = decode(START, message_delta("end_turn", usage), STOP)
    assert events[-1] == UsageEvent(
        usage=Usage(
            input_tokens=135,
            output_tokens=9,
            cached_input_tokens=100,
            cache_write_tokens=5,
            reasoning_tokens=4,
        )
    )


def test_pings_and_unknown_events_are_skipped() -> None:
    events, _ = decode(
        PING,
        frame({"type": "future_event", "x": 1}),
        START,
        frame({"type": "future_event"}),
        block_start(0, {"type": "text", "text": ""}),
        delta(0, {"type": "future_delta", "x": 1}),
        block_stop(0),
        message_delta("end_turn", {"output_tokens": 1}),
        STOP,
    )
    assert [type(event) for event in events] == [StreamStart, UsageEvent, Finish, UsageEvent]


def test_server_tool_blocks_become_one_native_event_each_once_complete() -> None:
    """A server tool call's input fragments are joined; its result arrives whole."""
    result = {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": [{"type": "web_search_result", "url": "https://a.test", "title": "A"}],
    }
    future = {"type": "hologram_block", "shape": {"sides": 3}}
    events, _ = decode(
        START,
        block_start(0, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search"}),
        delta(0, {"type": "input_json_delta", "partial_json": '{"query": '}),
        delta(0, {"type": "input_json_delta", "partial_json": '"paris"}'}),
        block_stop(0),
        block_start(1, result),
        block_stop(1),
        block_start(2, future),
        block_stop(2),
        block_start(3, {"type": "mcp_tool_use", "id": "m1", "name": "ask", "input": {}}),
        block_stop(3),
        message_delta("pause_turn", {"output_tokens": 1}),
        STOP,
    )
    native = [event.block for event in events if isinstance(event, NativeEvent)]
    assert native == [
        NativeBlock(
            format="anthropic",
            data={
                "type": "server_tool_use",
                "id": "srvtoolu_1",
                "name": "web_search",
                "input": {"query": "paris"},
            },
        ),
        NativeBlock(format="anthropic", data=result),
        NativeBlock(format="anthropic", data=future),
        NativeBlock(
            format="anthropic",
            data={"type": "mcp_tool_use", "id": "m1", "name": "ask", "input": {}},
        ),
    ]
    assert Finish(reason="pause") in events


def test_a_server_tool_s_input_that_is_not_json_is_malformed() -> None:
    decoder = UpstreamStreamDecoder()
    decoder.feed(START + block_start(0, {"type": "server_tool_use", "id": "s", "name": "x"}))
    decoder.feed(delta(0, {"type": "input_json_delta", "partial_json": '{"q": '}))
    with pytest.raises(UpstreamError):
        decoder.feed(block_stop(0))


def test_error_event_after_deltas_is_raised_by_the_next_call() -> None:
    decoder = UpstreamStreamDecoder()
    error = frame({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    events = decoder.feed(
        START
        + block_start(0, {"type": "text", "text": ""})
        + delta(0, {"type": "text_delta", "text": "a"})
        + error
    )
    assert events[-1] == TextDelta(text="a")
    with pytest.raises(OverloadedError) as caught:
        decoder.close()
    assert caught.value.upstream_message == "Overloaded"
    assert caught.value.blame == "upstream"


def test_error_event_alone_raises_at_once() -> None:
    decoder = UpstreamStreamDecoder()
    decoder.feed(START)
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}
    with pytest.raises(InvalidRequestError):
        decoder.feed(frame(body))


def test_error_named_only_by_the_sse_event_is_an_error() -> None:
    decoder = UpstreamStreamDecoder()
    with pytest.raises(UpstreamError):
        decoder.feed(b'event: error\ndata: {"type": "api_error_wrapper"}\n\n')


def test_end_without_message_stop_raises() -> None:
    events, decoder = decode(START, message_delta("end_turn", {"output_tokens": 1}))
    assert Finish(reason="stop") in events
    assert not decoder.done
    with pytest.raises(UpstreamError, match="message_stop"):
        decoder.close()


def test_nothing_after_message_stop_is_read() -> None:
    events, decoder = decode(START + STOP + b"data: {not json}\n\n")
    assert decoder.done
    assert events == [
        StreamStart(id="msg_1", model="claude-sonnet-4-5"),
        UsageEvent(usage=START_USAGE),
    ]


@pytest.mark.parametrize(
    "body",
    [
        b"event: message_start\ndata: {not json}\n\n",
        block_start(0, {"type": "text", "text": ""}),
        START + delta(7, {"type": "text_delta", "text": "x"}),
        START + frame({"type": "content_block_start", "index": 0}),
        START + block_start(0, {"type": "tool_use", "input": {}}),
        START + START,
    ],
)
def test_malformed_streams_raise_upstream_error(body: bytes) -> None:
    def feed_and_close() -> None:
        # An error after events of the same chunk is held back until the next call.
        decoder = UpstreamStreamDecoder()
        decoder.feed(body)
        decoder.close()

    with pytest.raises(UpstreamError) as caught:
        feed_and_close()
    assert type(caught.value) is PersistentUpstreamError  # would repeat: not retried
    assert caught.value.blame == "upstream"

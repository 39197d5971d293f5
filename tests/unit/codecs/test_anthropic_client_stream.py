"""MessagesStreamEncoder: IR events as Anthropic SSE, checked frame by frame and by the
official SDK's stream accumulation (``client.messages.stream(...).get_final_message()``)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import anthropic
import httpx2
import pytest
from anthropic.types import Message
from hypothesis import given, settings
from hypothesis import strategies as st

from gw.codecs.anthropic_messages.client_stream import MessagesStreamEncoder
from gw.codecs.sse import SSEParser
from gw.ir import (
    ErrorEvent,
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

START = StreamStart(id="up-1", model="claude-sonnet-4")
USAGE = Usage(input_tokens=120, output_tokens=30, cached_input_tokens=100, cache_write_tokens=15)


def encode(events: Iterable[StreamEvent], *, input_tokens: int = 50) -> bytes:
    encoder = MessagesStreamEncoder(
        message_id="msg_01", model="claude-sonnet-4", input_tokens=input_tokens
    )
    return b"".join(encoder.encode(event) for event in events) + encoder.done()


def frames(stream: bytes) -> list[tuple[str | None, dict[str, Any]]]:
    return [(m.event, json.loads(m.data)) for m in SSEParser().feed(stream)]


def kinds(stream: bytes) -> list[str]:
    return [data["type"] for _, data in frames(stream)]


def sdk_client(stream: bytes) -> anthropic.Anthropic:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=stream, headers={"content-type": "text/event-stream"})

    return anthropic.Anthropic(
        api_key="x",
        base_url="http://gw.test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        _strict_response_validation=True,
    )


def blocks(message: Message) -> list[dict[str, Any]]:
    """The content blocks as plain data (the stream helper returns its Parsed* subclasses)."""
    return [block.model_dump(exclude_none=True) for block in message.content]


def final_message(stream: bytes) -> Message:
    client = sdk_client(stream)
    with client.messages.stream(
        model="claude", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as sdk_stream:
        return sdk_stream.get_final_message()


# ---- the exact frames ------------------------------------------------------------------


def test_text_stream_frames_exactly() -> None:
    stream = encode(
        [
            START,
            TextDelta(text="Hel"),
            TextDelta(text="lo"),
            Finish(reason="stop"),
            UsageEvent(usage=USAGE),
        ]
    )
    assert frames(stream) == [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_01",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 50, "output_tokens": 1},
                },
            },
        ),
        ("ping", {"type": "ping"}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Hel"},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "lo"},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {
                    "input_tokens": 5,
                    "cache_creation_input_tokens": 15,
                    "cache_read_input_tokens": 100,
                    "output_tokens": 30,
                },
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def test_every_frame_is_event_line_data_line_blank_line() -> None:
    stream = encode([START, TextDelta(text="a\nb"), Finish(reason="stop")])
    for chunk in stream.split(b"\n\n")[:-1]:
        event, data = chunk.split(b"\n")
        assert event.startswith(b"event: ")
        assert data.startswith(b"data: ")
        assert json.loads(data[6:])["type"] == event[7:].decode()


def test_nothing_is_written_before_output() -> None:
    encoder = MessagesStreamEncoder(message_id="m", model="c", input_tokens=1)
    assert encoder.encode(START) == b""
    assert encoder.encode(TextDelta(text="")) == b""
    assert encoder.encode(ThinkingDelta()) == b""
    assert encoder.encode(UsageEvent(usage=USAGE)) == b""
    assert encoder.encode(TextDelta(text="x")).startswith(b"event: message_start\n")


def test_usage_seen_before_output_goes_into_message_start() -> None:
    stream = encode([START, UsageEvent(usage=USAGE), TextDelta(text="x"), Finish(reason="stop")])
    assert frames(stream)[0][1]["message"]["usage"] == {
        "input_tokens": 5,
        "cache_creation_input_tokens": 15,
        "cache_read_input_tokens": 100,
        "output_tokens": 30,
    }


def test_blocks_get_increasing_indexes_and_stop_before_the_next_starts() -> None:
    stream = encode(
        [
            START,
            ThinkingDelta(text="think"),
            ThinkingDelta(signature="sig"),
            TextDelta(text="answer"),
            ToolCallDelta(index=0, id="toolu_a", name="f", arguments='{"x":'),
            ToolCallDelta(index=0, arguments="1}"),
            ToolCallDelta(index=1, id="toolu_b", name="g"),
            Finish(reason="tool_calls"),
        ]
    )
    events = [(data["type"], data.get("index")) for _, data in frames(stream)]
    assert events == [
        ("message_start", None),
        ("ping", None),
        ("content_block_start", 0),
        ("content_block_delta", 0),
        ("content_block_delta", 0),
        ("content_block_stop", 0),
        ("content_block_start", 1),
        ("content_block_delta", 1),
        ("content_block_stop", 1),
        ("content_block_start", 2),
        ("content_block_delta", 2),
        ("content_block_delta", 2),
        ("content_block_stop", 2),
        ("content_block_start", 3),
        ("content_block_stop", 3),
        ("message_delta", None),
        ("message_stop", None),
    ]
    starts = [
        data["content_block"] for _, data in frames(stream) if data["type"] == "content_block_start"
    ]
    assert starts == [
        {"type": "thinking", "thinking": "", "signature": ""},
        {"type": "text", "text": ""},
        {"type": "tool_use", "id": "toolu_a", "name": "f", "input": {}},
        {"type": "tool_use", "id": "toolu_b", "name": "g", "input": {}},
    ]


def test_finish_without_content_still_makes_a_message() -> None:
    assert kinds(encode([START, Finish(reason="length")])) == [
        "message_start",
        "ping",
        "message_delta",
        "message_stop",
    ]


def test_usage_unknown_reports_output_tokens_only() -> None:
    last_delta = frames(encode([START, TextDelta(text="x"), Finish(reason="stop")]))[-2][1]
    assert last_delta["usage"] == {"output_tokens": 0}


def test_stream_cut_short_without_finish_still_closes() -> None:
    data = frames(encode([START, TextDelta(text="x")]))
    assert [d["type"] for _, d in data][-3:] == [
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert data[-2][1]["delta"]["stop_reason"] == "end_turn"


def test_error_frame_and_nothing_after() -> None:
    encoder = MessagesStreamEncoder(message_id="m", model="c", input_tokens=1)
    head = encoder.encode(TextDelta(text="partial"))
    error = encoder.encode(ErrorEvent(code="upstream_timeout", message="the upstream stopped"))
    assert frames(error) == [
        (
            "error",
            {
                "type": "error",
                "error": {"type": "timeout_error", "message": "the upstream stopped"},
                "gw": {"code": "upstream_timeout"},
            },
        )
    ]
    assert b"content_block_stop" not in head + error
    assert encoder.encode(TextDelta(text="more")) == b""
    assert encoder.encode(Finish(reason="stop")) == b""
    assert encoder.done() == b""


def test_unknown_error_code_is_an_api_error() -> None:
    encoder = MessagesStreamEncoder(message_id="m", model="c", input_tokens=1)
    [(_, data)] = frames(encoder.encode(ErrorEvent(code="mystery", message="m")))
    assert data["error"]["type"] == "api_error"


def test_missing_tool_id_gets_a_stable_fallback() -> None:
    stream = encode(
        [START, ToolCallDelta(index=2, name="f", arguments="{}"), Finish(reason="tool_calls")]
    )
    [block] = [d["content_block"] for _, d in frames(stream) if d["type"] == "content_block_start"]
    assert block["id"] == "toolu_msg_01_2"


# ---- the SDK accumulates what we send --------------------------------------------------


def test_sdk_accumulates_text_stop_reason_and_usage() -> None:
    stream = encode(
        [
            START,
            TextDelta(text="Hello"),
            TextDelta(text=" world"),
            Finish(reason="stop"),
            UsageEvent(usage=USAGE),
        ]
    )
    message = final_message(stream)
    assert message.id == "msg_01"
    assert blocks(message) == [{"type": "text", "text": "Hello world"}]
    assert message.stop_reason == "end_turn"
    usage = message.usage
    assert (usage.input_tokens, usage.output_tokens) == (5, 30)
    assert (usage.cache_creation_input_tokens, usage.cache_read_input_tokens) == (15, 100)


def test_sdk_text_stream() -> None:
    stream = encode([START, TextDelta(text="a"), TextDelta(text="b"), Finish(reason="stop")])
    with sdk_client(stream).messages.stream(
        model="claude", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
    ) as sdk_stream:
        assert list(sdk_stream.text_stream) == ["a", "b"]


def test_sdk_accumulates_thinking_text_and_tool_input() -> None:
    stream = encode(
        [
            START,
            ThinkingDelta(text="The user "),
            ThinkingDelta(text="wants weather."),
            ThinkingDelta(signature="sig-1"),
            ThinkingDelta(redacted="ENCRYPTED"),
            TextDelta(text="Checking."),
            ToolCallDelta(index=0, id="toolu_1", name="get_weather", arguments='{"ci'),
            ToolCallDelta(index=0, arguments='ty": "Par'),
            ToolCallDelta(index=0, arguments='is", "days": [1, 2]}'),
            ToolCallDelta(index=1, id="toolu_2", name="get_time", arguments=""),
            Finish(reason="tool_calls"),
            UsageEvent(usage=Usage(input_tokens=40, output_tokens=22)),
        ]
    )
    message = final_message(stream)
    assert blocks(message) == [
        {"type": "thinking", "thinking": "The user wants weather.", "signature": "sig-1"},
        {"type": "redacted_thinking", "data": "ENCRYPTED"},
        {"type": "text", "text": "Checking."},
        {
            "type": "tool_use",
            "id": "toolu_1",
            "name": "get_weather",
            "input": {"city": "Paris", "days": [1, 2]},
        },
        {"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {}},
    ]
    assert message.stop_reason == "tool_use"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (40, 22)


def test_sdk_thinking_after_a_signature_is_a_new_block() -> None:
    stream = encode(
        [
            START,
            ThinkingDelta(text="first", signature="s1"),
            ThinkingDelta(text="second"),
            ThinkingDelta(signature="s2"),
            Finish(reason="stop"),
        ]
    )
    assert blocks(final_message(stream)) == [
        {"type": "thinking", "thinking": "first", "signature": "s1"},
        {"type": "thinking", "thinking": "second", "signature": "s2"},
    ]


def test_sdk_reads_stop_sequence() -> None:
    stream = encode([START, TextDelta(text="x"), Finish(reason="stop", stop_sequence="END")])
    message = final_message(stream)
    assert (message.stop_reason, message.stop_sequence) == ("stop_sequence", "END")


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("length", "max_tokens"),
        ("content_filter", "refusal"),
        ("error", "end_turn"),
        ("pause", "pause_turn"),
    ],
)
def test_sdk_reads_other_stop_reasons(reason: Any, expected: str) -> None:
    assert (
        final_message(encode([START, TextDelta(text="x"), Finish(reason=reason)])).stop_reason
        == expected
    )


def test_sdk_keeps_the_estimate_when_usage_never_comes() -> None:
    message = final_message(
        encode([START, TextDelta(text="x"), Finish(reason="stop")], input_tokens=77)
    )
    assert (message.usage.input_tokens, message.usage.output_tokens) == (77, 0)


# Two parallel tool calls whose argument fragments an upstream interleaves.
INTERLEAVED_CALLS: list[StreamEvent] = [
    START,
    ToolCallDelta(index=0, id="t0", name="f", arguments='{"a":'),
    ToolCallDelta(index=1, id="t1", name="g", arguments='{"b":'),
    ToolCallDelta(index=0, arguments="1}"),
    ToolCallDelta(index=1, arguments="2}"),
    Finish(reason="tool_calls"),
]


def test_sdk_accumulates_interleaved_tool_fragments() -> None:
    stream = encode(INTERLEAVED_CALLS)
    assert blocks(final_message(stream)) == [
        {"type": "tool_use", "id": "t0", "name": "f", "input": {"a": 1}},
        {"type": "tool_use", "id": "t1", "name": "g", "input": {"b": 2}},
    ]


def test_interleaved_tool_calls_never_feed_a_closed_block() -> None:
    """A closed block takes no more input: the later call waits, then goes out whole, so
    each content_block_stop the SDK reports already holds its call's whole input."""
    stream = encode(INTERLEAVED_CALLS)
    stopped: dict[int, bool] = {}
    for _, data in frames(stream):
        if data["type"] == "content_block_stop":
            stopped[data["index"]] = True
        if data["type"] == "content_block_delta":
            assert data["index"] not in stopped, "a delta after its block stopped"
    client = sdk_client(stream)
    with client.messages.stream(
        model="claude", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as sdk_stream:
        inputs = [
            event.content_block.input  # type: ignore[union-attr]
            for event in sdk_stream
            if event.type == "content_block_stop"
        ]
    assert inputs == [{"a": 1}, {"b": 2}]


def test_sdk_raises_on_an_error_frame_mid_stream() -> None:
    encoder = MessagesStreamEncoder(message_id="m", model="c", input_tokens=1)
    stream = (
        encoder.encode(START)
        + encoder.encode(TextDelta(text="partial"))
        + encoder.encode(ErrorEvent(code="overloaded", message="the upstream is overloaded"))
        + encoder.done()
    )
    seen: list[str] = []
    client = sdk_client(stream)
    with (
        pytest.raises(anthropic.APIStatusError) as caught,
        client.messages.stream(
            model="claude", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        ) as sdk_stream,
    ):
        seen.extend(sdk_stream.text_stream)
    assert seen == ["partial"]
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["error"] == {
        "type": "overloaded_error",
        "message": "the upstream is overloaded",
    }


# ---- native blocks (server tools) --------------------------------------------------------

CITATION: Any = {
    "type": "web_search_result_location",
    "url": "https://example.com/paris",
    "title": "Paris",
    "encrypted_index": "EoMBCkYI",
    "cited_text": "Paris is the capital of France.",
}
SEARCH_CALL: Any = {
    "type": "server_tool_use",
    "id": "srvtoolu_1",
    "name": "web_search",
    "input": {"query": "capital of France"},
}
SEARCH_RESULT: Any = {
    "type": "web_search_tool_result",
    "tool_use_id": "srvtoolu_1",
    "content": [
        {
            "type": "web_search_result",
            "url": "https://example.com/paris",
            "title": "Paris",
            "encrypted_content": "EqgfCioIARgB",
            "page_age": "April 30, 2025",
        }
    ],
}


def native(data: Any, fmt: Any = "anthropic") -> NativeEvent:
    return NativeEvent(block=NativeBlock(format=fmt, data=data))


WEB_SEARCH: list[StreamEvent] = [
    START,
    TextDelta(text="I'll search."),
    native(SEARCH_CALL),
    native(SEARCH_RESULT),
    native({"type": "citations_delta", "citation": CITATION}),
    TextDelta(text="It is Paris."),
    Finish(reason="stop"),
]


def test_server_tool_blocks_are_written_as_the_api_streams_them() -> None:
    parsed = [data for _, data in frames(encode(WEB_SEARCH))]
    body = [data for data in parsed if data["type"].startswith("content_block")]
    assert body == [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "I'll search."},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {**SEARCH_CALL, "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"query":"capital of France"}'},
        },
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2, "content_block": SEARCH_RESULT},
        {"type": "content_block_stop", "index": 2},
        {"type": "content_block_start", "index": 3, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 3,
            "delta": {"type": "citations_delta", "citation": CITATION},
        },
        {
            "type": "content_block_delta",
            "index": 3,
            "delta": {"type": "text_delta", "text": "It is Paris."},
        },
        {"type": "content_block_stop", "index": 3},
    ]


def test_sdk_accumulates_server_tool_blocks_and_citations() -> None:
    message = final_message(encode([*WEB_SEARCH[:-1], Finish(reason="pause")]))
    assert blocks(message) == [
        {"type": "text", "text": "I'll search."},
        SEARCH_CALL,
        SEARCH_RESULT,
        {"type": "text", "text": "It is Paris.", "citations": [CITATION]},
    ]
    assert message.stop_reason == "pause_turn"


def test_another_format_s_native_events_write_nothing() -> None:
    reasoning = native({"type": "reasoning", "id": "rs_1", "summary": []}, "openai_responses")
    assert encode([START, reasoning, TextDelta(text="x")]) == encode([START, TextDelta(text="x")])


# ---- property: any event sequence is a well-formed stream ------------------------------

events = st.one_of(
    st.builds(TextDelta, text=st.text(max_size=4)),
    st.builds(ThinkingDelta, text=st.text(max_size=4), signature=st.none() | st.just("sig")),
    st.builds(ThinkingDelta, redacted=st.just("R")),
    st.builds(
        ToolCallDelta,
        index=st.integers(min_value=0, max_value=2),
        id=st.just("t"),
        name=st.just("f"),
        arguments=st.sampled_from(["", "{}"]),
    ),
    st.builds(UsageEvent, usage=st.just(USAGE)),
    st.sampled_from(
        [native(SEARCH_CALL), native(SEARCH_RESULT), native({"type": "citations_delta"})]
    ),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(events, max_size=10), st.booleans())
def test_any_event_sequence_is_well_formed(body: list[StreamEvent], finish: bool) -> None:
    tail: list[StreamEvent] = [Finish(reason="stop")] if finish else []
    parsed = frames(encode([START, *body, *tail]))
    types = [data["type"] for _, data in parsed]
    assert all(event == data["type"] for event, data in parsed)
    assert types[:2] == ["message_start", "ping"]
    assert types[-2:] == ["message_delta", "message_stop"]
    started = [data["index"] for _, data in parsed if data["type"] == "content_block_start"]
    stopped = [data["index"] for _, data in parsed if data["type"] == "content_block_stop"]
    assert started == list(range(len(started)))
    assert stopped == started
    open_index: int | None = None
    for _, data in parsed:
        if data["type"] == "content_block_start":
            assert open_index is None
            open_index = data["index"]
        elif data["type"] == "content_block_stop":
            assert data["index"] == open_index
            open_index = None
        elif data["type"] == "content_block_delta":
            assert data["index"] in started

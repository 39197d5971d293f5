"""decode_upstream_response and UpstreamStreamDecoder on real-shaped upstream output."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gw.codecs.openai_chat import UpstreamStreamDecoder, decode_upstream_response
from gw.errors import (
    ContextLengthExceededError,
    GatewayError,
    InvalidRequestError,
    UpstreamError,
)
from gw.ir import (
    ChatResponse,
    Finish,
    StreamEvent,
    StreamStart,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
    UsageEvent,
)

COMPLETION: dict[str, Any] = {
    "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
    "object": "chat.completion",
    "created": 1741569952,
    "model": "gpt-4o-mini-2024-07-18",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Hello! How can I assist you today?",
                "refusal": None,
                "annotations": [],
            },
            "logprobs": None,
            "finish_reason": "stop",
        }
    ],
    "usage": {
        "prompt_tokens": 19,
        "completion_tokens": 10,
        "total_tokens": 29,
        "prompt_tokens_details": {"cached_tokens": 3, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 1,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    },
    "service_tier": "default",
    "system_fingerprint": "fp_06737a9306",
}


def completion(**changes: Any) -> bytes:
    return json.dumps({**COMPLETION, **changes}).encode()


def test_decodes_a_real_completion() -> None:
    assert decode_upstream_response(completion()) == ChatResponse(
        id="chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
        model="gpt-4o-mini-2024-07-18",
        text="Hello! How can I assist you today?",
        finish_reason="stop",
        usage=Usage(input_tokens=19, output_tokens=10, cached_input_tokens=3, reasoning_tokens=1),
        created=1741569952,
    )


def test_tool_calls_with_null_content_and_legacy_finish_reason() -> None:
    choice = {
        "index": 0,
        "message": {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        "finish_reason": "function_call",
    }
    response = decode_upstream_response(completion(choices=[choice], usage=None))
    assert response.text is None
    assert response.tool_calls == (ToolCall(id="call_1", name="f", arguments="{}"),)
    assert response.finish_reason == "tool_calls"
    assert response.usage is None


@pytest.mark.parametrize(
    ("wire", "ir"),
    [("stop", "stop"), ("length", "length"), ("content_filter", "content_filter"),
     ("tool_calls", "tool_calls"), ("eos", "stop"), (None, "stop")],
)  # fmt: skip
def test_finish_reason_table(wire: str | None, ir: str) -> None:
    choice = {**COMPLETION["choices"][0], "finish_reason": wire}
    assert decode_upstream_response(completion(choices=[choice])).finish_reason == ir


def test_minimal_compatible_server_answer() -> None:
    raw = b'{"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":1,"completion_tokens":2,"prompt_tokens_details":null}}'
    response = decode_upstream_response(raw)
    assert (response.text, response.id, response.usage) == (
        "hi",
        "",
        Usage(input_tokens=1, output_tokens=2),
    )


def test_a_refusal_is_kept_apart_from_the_text() -> None:
    choice = {"index": 0, "message": {"role": "assistant", "content": None, "refusal": "No."}}
    decoded = decode_upstream_response(completion(choices=[choice]))
    assert (decoded.text, decoded.refusal) == (None, "No.")


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"<html>secret-body</html>", "not JSON"),
        (b"[]", "Expected `object`"),
        (completion(choices=[]), "no choices"),
        (json.dumps({"id": "x"}).encode(), "no choices"),
        (completion(choices=[{"message": {"content": 5}}]), "choices[0].message.content"),
        (completion(usage={"prompt_tokens": "many"}), "usage.prompt_tokens"),
    ],
)
def test_malformed_bodies_raise_upstream_error_without_the_body(raw: bytes, reason: str) -> None:
    with pytest.raises(UpstreamError) as caught:
        decode_upstream_response(raw)
    assert caught.value.message.startswith("upstream sent a malformed chat completion: ")
    assert reason in caught.value.message
    assert "secret-body" not in caught.value.message
    assert caught.value.blame == "upstream"


def test_error_object_in_a_200_body_is_mapped() -> None:
    raw = b'{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}'
    with pytest.raises(ContextLengthExceededError):
        decode_upstream_response(raw)


# ---- streaming --------------------------------------------------------------------------


def chunk(choices: list[dict[str, Any]], **extra: Any) -> str:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1694268190,
        "model": "gpt-4o-mini",
        "system_fingerprint": "fp_44709d6fcb",
        "choices": choices,
        **extra,
    }
    return f"data: {json.dumps(body)}\n\n"


def delta(d: dict[str, Any], finish: str | None = None) -> list[dict[str, Any]]:
    return [{"index": 0, "delta": d, "logprobs": None, "finish_reason": finish}]


TOOL_CALL_STREAM = (
    chunk(delta({"role": "assistant", "content": None, "tool_calls": [{"index": 0, "id": "call_x", "type": "function", "function": {"name": "get_weather", "arguments": ""}}], "refusal": None}), usage=None)
    + chunk(delta({"tool_calls": [{"index": 0, "function": {"arguments": "{\"loc"}}]}), usage=None)
    + chunk(delta({"tool_calls": [{"index": 0, "function": {"arguments": "ation\": \"Oslo\"}"}}]}), usage=None)
    + chunk(delta({}, "tool_calls"), usage=None)
    + chunk([], usage={"prompt_tokens": 80, "completion_tokens": 17, "total_tokens": 97, "prompt_tokens_details": {"cached_tokens": 0}, "completion_tokens_details": {"reasoning_tokens": 0}})
    + "data: [DONE]\n\n"
).encode()  # fmt: skip

TOOL_CALL_EVENTS: list[StreamEvent] = [
    StreamStart(id="chatcmpl-1", model="gpt-4o-mini", created=1694268190),
    ToolCallDelta(index=0, id="call_x", name="get_weather", arguments=""),
    ToolCallDelta(index=0, arguments='{"loc'),
    ToolCallDelta(index=0, arguments='ation": "Oslo"}'),
    Finish(reason="tool_calls"),
    UsageEvent(usage=Usage(input_tokens=80, output_tokens=17)),
]


def decode_all(chunks: list[bytes]) -> tuple[list[StreamEvent], UpstreamStreamDecoder]:
    decoder = UpstreamStreamDecoder()
    events: list[StreamEvent] = []
    for piece in chunks:
        events.extend(decoder.feed(piece))
    events.extend(decoder.close())
    return events, decoder


def test_tool_call_stream_with_usage() -> None:
    events, decoder = decode_all([TOOL_CALL_STREAM])
    assert events == TOOL_CALL_EVENTS
    assert decoder.done


@given(st.lists(st.integers(min_value=0, max_value=len(TOOL_CALL_STREAM)), max_size=10))
def test_stream_decoding_ignores_chunk_boundaries(cuts: list[int]) -> None:
    bounds = [0, *sorted(cuts), len(TOOL_CALL_STREAM)]
    pieces = [TOOL_CALL_STREAM[a:b] for a, b in itertools.pairwise(bounds)]
    assert decode_all(pieces)[0] == TOOL_CALL_EVENTS


def test_stream_one_event_a_chunk_as_upstreams_send_it() -> None:
    # The SSE parser's fast path: each chunk is one whole ``data:`` event.
    pieces = [event + b"\n\n" for event in TOOL_CALL_STREAM.split(b"\n\n") if event]
    assert len(pieces) == 6
    events, decoder = decode_all(pieces)
    assert events == TOOL_CALL_EVENTS
    assert decoder.done


def test_stream_with_crlf_line_ends() -> None:
    events, decoder = decode_all([TOOL_CALL_STREAM.replace(b"\n", b"\r\n")])
    assert events == TOOL_CALL_EVENTS
    assert decoder.done


def test_text_stream_without_done_is_accepted_after_finish() -> None:
    stream = (
        chunk(delta({"role": "assistant", "content": ""}))
        + chunk(delta({"content": "Hi"}))
        + chunk(delta({"content": " there"}, ""))  # finish_reason "" is "not yet"
        + chunk(delta({}, "length"))
    ).encode()
    events, decoder = decode_all([stream])
    assert [e for e in events if not isinstance(e, StreamStart)] == [
        TextDelta(text="Hi"),
        TextDelta(text=" there"),
        Finish(reason="length"),
    ]
    assert not decoder.done


def test_tool_calls_without_index_are_numbered_by_id() -> None:
    stream = (
        chunk(delta({"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}]}))
        + chunk(delta({"tool_calls": [{"id": "b", "function": {"name": "g", "arguments": "{"}}]}))
        + chunk(delta({"tool_calls": [{"function": {"arguments": "}"}}]}, "tool_calls"))
        + "data: [DONE]\n\n"
    ).encode()
    calls = [e for e in decode_all([stream])[0] if isinstance(e, ToolCallDelta)]
    assert [(c.index, c.id, c.arguments) for c in calls] == [
        (0, "a", "{}"),
        (1, "b", "{"),
        (1, None, "}"),
    ]


def test_azure_filter_chunks_and_comments_are_skipped() -> None:
    azure = 'data: {"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[]}\n\n'
    stream = (
        ": keep-alive\n\n" + azure + chunk(delta({"content": "x"}, "stop")) + "data: [DONE]\n\n"
    )
    events = decode_all([stream.encode()])[0]
    assert events[0] == StreamStart(id="chatcmpl-1", model="gpt-4o-mini", created=1694268190)
    assert events[1:] == [TextDelta(text="x"), Finish(reason="stop")]


def test_usage_on_every_chunk_gives_several_usage_events() -> None:
    usage = {"prompt_tokens": 5, "completion_tokens": 1}
    stream = chunk(delta({"content": "a"}), usage=usage) + chunk(delta({}, "stop"), usage=usage)
    events = decode_all([stream.encode()])[0]
    assert sum(isinstance(e, UsageEvent) for e in events) == 2


def test_data_after_done_is_ignored() -> None:
    stream = chunk(delta({"content": "a"}, "stop")) + "data: [DONE]\n\n" + "data: garbage\n\n"
    events, decoder = decode_all([stream.encode()])
    assert decoder.done
    assert isinstance(events[-1], Finish)


def test_data_after_done_in_later_chunks_is_ignored() -> None:
    pieces = [chunk(delta({"content": "a"}, "stop")).encode(), b"data: [DONE]\n\n"]
    events, decoder = decode_all([*pieces, b"data: garbage\n\n", b"data: {}\n\n"])
    assert decoder.done
    assert events[1:] == [TextDelta(text="a"), Finish(reason="stop")]


@pytest.mark.parametrize("done", [b"data:[DONE]\n\n", b"data: \t[DONE] \xc2\xa0\n\n"])
def test_done_with_whitespace_around_it(done: bytes) -> None:
    events, decoder = decode_all([chunk(delta({"content": "a"})).encode(), done])
    assert decoder.done
    assert events[1:] == [TextDelta(text="a")]


def test_invalid_utf8_in_a_chunk_is_replaced_as_sse_text_is() -> None:
    pieces = [chunk(delta({"content": "a"})).encode().replace(b'"a"', b'"a\xff"')]
    events = decode_all([*pieces, chunk(delta({}, "stop")).encode()])[0]
    assert events[1] == TextDelta(text="a\ufffd")


def test_a_chunk_of_the_wrong_shape_names_the_field() -> None:
    decoder = UpstreamStreamDecoder()
    with pytest.raises(UpstreamError, match=r"got `int` - at `\$\.choices`"):
        decoder.feed(b'data: {"choices": 5}\n\n')


@pytest.mark.parametrize(
    "stream",
    [
        b"",
        chunk(delta({"content": "cut"})).encode(),
        b'data: {"id":"x","choices":[{"delta":{"content":"a"}',
    ],
    ids=["empty", "no finish", "cut mid chunk"],
)
def test_stream_ending_early_raises(stream: bytes) -> None:
    with pytest.raises(UpstreamError, match="ended early"):
        decode_all([stream])


def test_malformed_chunk_raises_after_earlier_events_are_delivered() -> None:
    decoder = UpstreamStreamDecoder()
    events = decoder.feed((chunk(delta({"content": "a"})) + "data: {nope\n\n").encode())
    assert [type(e) for e in events] == [StreamStart, TextDelta]
    with pytest.raises(UpstreamError, match="malformed"):
        decoder.feed(b"")


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ({"message": "The server had an error", "type": "server_error", "param": None, "code": None}, UpstreamError),
        ({"message": "bad", "type": "BadRequestError", "param": None, "code": 400}, InvalidRequestError),
        ({"message": "long", "type": "invalid_request_error", "code": "context_length_exceeded"}, ContextLengthExceededError),
        ("plain text error", UpstreamError),
    ],
)  # fmt: skip
def test_error_inside_the_stream_raises_the_mapped_error(
    payload: object, expected: type[GatewayError]
) -> None:
    stream = f"data: {json.dumps({'error': payload})}\n\n".encode()
    with pytest.raises(expected) as caught:
        decode_all([stream])
    assert caught.value.blame == "upstream"
    assert caught.value.upstream_status == 200
    assert caught.value.message.startswith("upstream sent an error")


def test_repeated_tool_call_id_and_name_are_carried_once() -> None:
    fragment = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{"}}
    stream = (
        chunk(delta({"tool_calls": [{"index": 0, **fragment}]}))
        + chunk(delta({"tool_calls": [{"index": 0, **fragment}]}))
        + chunk(delta({"tool_calls": [{**fragment, "function": {"name": "f", "arguments": "}"}}]}))
        + chunk(delta({}, "tool_calls"))
    ).encode()
    calls = [e for e in decode_all([stream])[0] if isinstance(e, ToolCallDelta)]
    assert calls == [
        ToolCallDelta(index=0, id="c1", name="f", arguments="{"),
        ToolCallDelta(index=0, arguments="{"),
        ToolCallDelta(index=0, arguments="}"),
    ]

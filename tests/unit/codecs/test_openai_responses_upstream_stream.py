"""A Responses upstream's SSE stream -> IR events, fed the frames the fake upstream sends
(the SDK's types check those) and hand-made ones for what servers may leave out."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gw.codecs.openai_responses import UpstreamStreamDecoder, decode_upstream_response
from gw.errors import GatewayError, RateLimitedError, UpstreamError
from gw.ir import (
    Finish,
    NativeBlock,
    NativeEvent,
    StreamEvent,
    StreamStart,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    UsageEvent,
)

from fakes.responses_answer import ENCRYPTED_INCLUDE, Answer, Behavior
from fakes.responses_upstream import frame

REQUEST = {"model": "gpt-5-mini", "input": "hi", "include": [ENCRYPTED_INCLUDE]}
EVERYTHING = Behavior(
    reasoning=("Plan it.", "Check it."),
    web_search="paris",
    text="It is sunny.",
    tool_call=("get_weather", '{"city": "Paris"}'),
    chunks=2,
)


def body_of(behavior: Behavior) -> bytes:
    return b"".join(frame(event) for event in Answer(behavior, REQUEST, 3).events())


def decode(data: bytes, *, piece: int | None = None) -> list[StreamEvent]:
    decoder = UpstreamStreamDecoder()
    events: list[StreamEvent] = []
    step = piece or len(data) or 1
    for start in range(0, len(data), step):
        events.extend(decoder.feed(data[start : start + step]))
    events.extend(decoder.close())
    return events


def test_text_stream() -> None:
    events = decode(body_of(Behavior(text="one two three", chunks=2, usage=(5, 3))))
    assert isinstance(events[0], StreamStart)
    assert events[0].id.startswith("resp_fake")
    assert events[0].model == "gpt-5-mini"
    assert events[1:] == [
        TextDelta(text="one"),
        TextDelta(text=" two three"),
        UsageEvent(usage=events[-2].usage),  # type: ignore[union-attr]
        Finish(reason="stop"),
    ]
    assert events[-2].usage.input_tokens == 5  # type: ignore[union-attr]


def test_reasoning_search_text_and_call_in_order() -> None:
    answer = Answer(EVERYTHING, REQUEST, 3)
    items = [item.final for item in answer.items()]
    events = decode(body_of(EVERYTHING))
    opening = {**answer.items()[0].added, "status": "in_progress"}
    assert events[1:] == [
        NativeEvent(block=NativeBlock(format="openai_responses", data=opening)),
        ThinkingDelta(text="Plan"),
        ThinkingDelta(text=" it."),
        ThinkingDelta(text="\n\n"),
        ThinkingDelta(text="Check"),
        ThinkingDelta(text=" it."),
        NativeEvent(block=NativeBlock(format="openai_responses", data=items[0])),
        NativeEvent(block=NativeBlock(format="openai_responses", data=items[1])),
        TextDelta(text="It"),
        TextDelta(text=" is sunny."),
        ToolCallDelta(index=0, id="call_fake3", name="get_weather"),
        ToolCallDelta(index=0, arguments='{"city":'),
        ToolCallDelta(index=0, arguments=' "Paris"}'),
        UsageEvent(usage=events[-2].usage),  # type: ignore[union-attr]
        Finish(reason="tool_calls"),
    ]
    assert items[0]["encrypted_content"]


def test_the_stream_and_the_whole_answer_agree() -> None:
    whole = decode_upstream_response(json.dumps(Answer(EVERYTHING, REQUEST, 3).whole()).encode())
    events = decode(body_of(EVERYTHING))
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    thinking = "".join(e.text for e in events if isinstance(e, ThinkingDelta))
    arguments = "".join(e.arguments for e in events if isinstance(e, ToolCallDelta))
    assert text == whole.text
    assert thinking == whole.thinking[0].text
    assert arguments == whole.tool_calls[0].arguments
    usage = [e.usage for e in events if isinstance(e, UsageEvent)]
    assert usage == [whole.usage]


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=1, max_value=97))
def test_any_chunking_gives_the_same_events(piece: int) -> None:
    data = body_of(EVERYTHING)
    assert decode(data, piece=piece) == decode(data)


def test_a_refusal_and_an_incomplete_answer() -> None:
    events = decode(body_of(Behavior(text="No.", refusal=True)))
    assert TextDelta(text="No.", refusal=True) in events
    events = decode(body_of(Behavior(ending="incomplete", incomplete_reason="content_filter")))
    assert events[-1] == Finish(reason="content_filter")
    events = decode(body_of(Behavior(ending="incomplete")))
    assert events[-1] == Finish(reason="length")


def test_response_failed_raises_the_mapped_error() -> None:
    with pytest.raises(RateLimitedError):
        decode(body_of(Behavior(ending="failed", failure_code="rate_limit_exceeded")))


@pytest.mark.parametrize("nested", [False, True])
def test_an_error_event_ends_the_stream_after_the_events_before_it(nested: bool) -> None:
    behavior = Behavior(
        text="a b c", error_after_chunks=2, error_code="rate_limit_exceeded", nested_error=nested
    )
    answer = Answer(behavior, REQUEST, 3)
    data = b""
    for event in answer.events():
        if event["type"] == "response.output_text.delta" and answer.deltas == 2:
            data += frame(answer.error_event(event["sequence_number"]))
            break
        answer.deltas += event["type"] == "response.output_text.delta"
        data += frame(event)
    decoder = UpstreamStreamDecoder()
    events = decoder.feed(data)
    assert [e for e in events if isinstance(e, TextDelta)] == [
        TextDelta(text="a"),
        TextDelta(text=" b"),
    ]
    with pytest.raises(GatewayError) as caught:
        decoder.close()
    assert type(caught.value) is RateLimitedError


def test_a_stream_cut_before_its_end_is_an_upstream_error() -> None:
    data = body_of(Behavior(text="a b c"))
    cut = data[: data.index(b"event: response.completed")]
    decoder = UpstreamStreamDecoder()
    decoder.feed(cut)
    with pytest.raises(UpstreamError, match=r"ended before response\.completed"):
        decoder.close()


def sse(event: dict[str, Any]) -> bytes:
    return frame({"sequence_number": 0, **event})


CREATED = sse({"type": "response.created", "response": {"id": "resp_1", "model": "m"}})
COMPLETED = sse({"type": "response.completed", "response": {"status": "completed"}})


def test_items_sent_only_whole_are_taken_from_their_done_event() -> None:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Hi!", "annotations": []}],
    }
    call = {"id": "fc_1", "type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
    data = (
        CREATED
        + sse({"type": "response.output_item.done", "output_index": 0, "item": message})
        + sse({"type": "response.output_item.done", "output_index": 1, "item": call})
        + COMPLETED
    )
    assert decode(data)[1:] == [
        TextDelta(text="Hi!"),
        ToolCallDelta(index=0, id="c1", name="f"),
        ToolCallDelta(index=0, arguments="{}"),
        Finish(reason="tool_calls"),
    ]


def test_unknown_event_types_are_skipped() -> None:
    data = CREATED + sse({"type": "response.something_new", "x": 1}) + COMPLETED
    assert decode(data)[1:] == [Finish(reason="stop")]


@pytest.mark.parametrize(
    "data",
    [
        sse({"type": "response.output_text.delta", "delta": "x", "item_id": "m"}),  # no start
        CREATED + CREATED,
        CREATED + b"event: x\ndata: {not json}\n\n",
        CREATED + sse({"type": "response.function_call_arguments.delta", "item_id": "nope",
                       "delta": "{"}),
    ],
)  # fmt: skip
def test_malformed_streams(data: bytes) -> None:
    with pytest.raises(UpstreamError, match="malformed"):
        decode(data)


def test_a_reasoning_item_opens_only_with_its_first_summary_delta() -> None:
    """Nothing that commits a client stream before there is something to show: a
    reasoning model's stream that fails while it thinks may still be retried."""
    decoder = UpstreamStreamDecoder()
    head = (
        b'event: response.created\ndata: {"type":"response.created","sequence_number":0,'
        b'"response":{"id":"resp_1","model":"m","created_at":1,"output":[]}}\n\n'
        b'event: response.output_item.added\ndata: {"type":"response.output_item.added",'
        b'"sequence_number":1,"output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[]}}\n\n'
    )
    events = decoder.feed(head)
    assert [type(event).__name__ for event in events] == ["StreamStart"]
    delta = (
        b'event: response.reasoning_summary_text.delta\ndata: {"type":'
        b'"response.reasoning_summary_text.delta","sequence_number":2,"item_id":"rs_1",'
        b'"output_index":0,"summary_index":0,"delta":"Hm"}\n\n'
    )
    opened, thought = decoder.feed(delta)
    assert isinstance(opened, NativeEvent)
    assert opened.block.data == {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [],
        "status": "in_progress",
    }
    assert thought == ThinkingDelta(text="Hm")

"""UpstreamStreamDecoder: Gemini SSE chunks -> IR stream events, fed in any pieces."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gw.codecs.gemini.upstream_stream import UpstreamStreamDecoder
from gw.errors import ContentBlockedError, GatewayError, UpstreamError
from gw.ir import (
    Finish,
    StreamEvent,
    StreamStart,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    Usage,
    UsageEvent,
)


def chunk(
    parts: list[dict[str, Any]] | None = None,
    finish: str | None = None,
    usage: tuple[int, int] | None = None,
    **extra: Any,
) -> bytes:
    candidate: dict[str, Any] = {"index": 0}
    if parts is not None:
        candidate["content"] = {"parts": parts, "role": "model"}
    if finish is not None:
        candidate["finishReason"] = finish
    payload: dict[str, Any] = {
        "candidates": [candidate],
        "modelVersion": "gemini-x",
        "responseId": "r9",
        **extra,
    }
    if usage is not None:
        payload["usageMetadata"] = {
            "promptTokenCount": usage[0],
            "candidatesTokenCount": usage[1],
            "totalTokenCount": sum(usage),
        }
    return b"data: " + json.dumps(payload).encode() + b"\r\n\r\n"


TEXT_STREAM = [
    chunk([{"text": "Hel"}], usage=(5, 1)),
    chunk([{"text": "lo"}], usage=(5, 2)),
    chunk([{"text": "!"}], "STOP", usage=(5, 3)),
]
TEXT_EVENTS: list[StreamEvent] = [
    StreamStart(id="r9", model="gemini-x"),
    TextDelta(text="Hel"),
    TextDelta(text="lo"),
    TextDelta(text="!"),
    UsageEvent(usage=Usage(input_tokens=5, output_tokens=3)),
    Finish(reason="stop"),
]


def decode_all(data: bytes, *, piece: int | None = None, model: str = "") -> list[StreamEvent]:
    decoder = UpstreamStreamDecoder(model=model)
    step = piece or len(data) or 1
    events: list[StreamEvent] = []
    for start in range(0, len(data), step):
        events.extend(decoder.feed(data[start : start + step]))
    events.extend(decoder.close())
    assert decoder.done
    return events


@pytest.mark.parametrize("piece", [None, 1, 7])
def test_text_stream_in_any_pieces(piece: int | None) -> None:
    assert decode_all(b"".join(TEXT_STREAM), piece=piece) == TEXT_EVENTS


def test_lf_framing_is_read_too() -> None:
    data = b"".join(TEXT_STREAM).replace(b"\r\n", b"\n")

    assert decode_all(data) == TEXT_EVENTS


def test_model_stands_in_when_the_chunk_names_none() -> None:
    data = b'data: {"candidates": [{"content": {"parts": [{"text": "x"}]}, "finishReason": "STOP"}]}\r\n\r\n'

    assert decode_all(data, model="asked")[0] == StreamStart(id="", model="asked")


def test_thoughts_signatures_and_whole_tool_calls() -> None:
    data = b"".join(
        [
            chunk([{"text": "Pondering", "thought": True}]),
            chunk([{"text": " more", "thought": True, "thoughtSignature": "sig-t"}]),
            chunk(
                [
                    {"functionCall": {"name": "f", "args": {"a": 1}}, "thoughtSignature": "sig-f"},
                    {"functionCall": {"name": "g", "args": {}, "id": "fc-g"}},
                ],
                "STOP",
                usage=(4, 6),
            ),
        ]
    )

    assert decode_all(data) == [
        StreamStart(id="r9", model="gemini-x"),
        ThinkingDelta(text="Pondering"),
        ThinkingDelta(text=" more", signature="sig-t"),
        ThinkingDelta(signature="sig-f"),
        ToolCallDelta(index=0, id="call_r9_0", name="f", arguments='{"a":1}'),
        ToolCallDelta(index=1, id="fc-g", name="g", arguments="{}"),
        UsageEvent(usage=Usage(input_tokens=4, output_tokens=6)),
        Finish(reason="tool_calls"),
    ]


def test_a_signature_on_the_last_text_part_comes_before_its_text() -> None:
    data = chunk([{"text": "Done", "thoughtSignature": "sig"}], "STOP")

    assert decode_all(data)[1:] == [
        ThinkingDelta(signature="sig"),
        TextDelta(text="Done"),
        Finish(reason="stop"),
    ]


def test_usage_after_the_finish_reason_is_sent_again() -> None:
    data = (
        chunk([{"text": "x"}], "STOP", usage=(1, 1))
        + b'data: {"usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 2}}\r\n\r\n'
    )

    usage = [e.usage for e in decode_all(data) if isinstance(e, UsageEvent)]

    assert usage == [Usage(input_tokens=1, output_tokens=1), Usage(input_tokens=1, output_tokens=2)]


def test_parts_after_the_finish_reason_are_ignored() -> None:
    data = chunk([{"text": "x"}], "STOP") + chunk([{"text": "late"}], "STOP")

    assert [e for e in decode_all(data) if isinstance(e, TextDelta | Finish)] == [
        TextDelta(text="x"),
        Finish(reason="stop"),
    ]


def test_safety_after_content_finishes_with_content_filter() -> None:
    data = chunk([{"text": "Some"}]) + chunk(None, "SAFETY", usage=(3, 1))

    assert decode_all(data)[-2:] == [
        UsageEvent(usage=Usage(input_tokens=3, output_tokens=1)),
        Finish(reason="content_filter"),
    ]


@pytest.mark.parametrize(
    "data",
    [
        chunk(None, "SAFETY"),
        chunk([], "PROHIBITED_CONTENT"),
        b'data: {"promptFeedback": {"blockReason": "SAFETY"}, "responseId": "r"}\r\n\r\n',
    ],
)
def test_a_block_before_any_content_raises_and_starts_nothing(data: bytes) -> None:
    decoder = UpstreamStreamDecoder()

    with pytest.raises(ContentBlockedError):
        decoder.feed(data)


def test_a_malformed_function_call_fails_the_stream_rather_than_finishing_it() -> None:
    decoder = UpstreamStreamDecoder()
    data = chunk([{"text": "Let me look"}]) + chunk(None, "MALFORMED_FUNCTION_CALL")
    first = decoder.feed(data)  # the text that came first, then the failure
    assert TextDelta(text="Let me look") in first
    with pytest.raises(UpstreamError, match="finishReason MALFORMED_FUNCTION_CALL"):
        decoder.close()


def test_an_unnamed_end_of_an_empty_stream_fails_it() -> None:
    decoder = UpstreamStreamDecoder()
    with pytest.raises(UpstreamError, match="finishReason OTHER"):
        decoder.feed(chunk([], "OTHER"))


def test_end_of_body_without_a_finish_reason_is_an_error() -> None:
    decoder = UpstreamStreamDecoder()
    assert decoder.feed(TEXT_STREAM[0])[1] == TextDelta(text="Hel")

    with pytest.raises(UpstreamError, match="before a finish reason"):
        decoder.close()
    assert not decoder.done


def test_an_error_after_events_in_the_same_feed_waits_for_the_next_call() -> None:
    error = b'data: {"error": {"code": 500, "message": "boom", "status": "INTERNAL"}}\r\n\r\n'
    decoder = UpstreamStreamDecoder()

    events = decoder.feed(TEXT_STREAM[0] + error + TEXT_STREAM[1])

    assert events == TEXT_EVENTS[:2]
    with pytest.raises(GatewayError) as caught:
        decoder.close()
    assert (caught.value.code, caught.value.upstream_status) == ("upstream_error", 200)


@pytest.mark.parametrize(
    "frame", [b"data: {not json}\r\n\r\n", b'data: {"candidates": {"x": 1}}\r\n\r\n']
)
def test_unreadable_chunks_are_upstream_errors(frame: bytes) -> None:
    with pytest.raises(UpstreamError, match="malformed"):
        UpstreamStreamDecoder().feed(frame)

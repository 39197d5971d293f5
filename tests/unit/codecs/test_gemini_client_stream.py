"""GeminiStreamEncoder: IR events as streamGenerateContent chunks, read back by google-genai's
own stream parser (SSE with ?alt=sse; a JSON array without)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from google.genai import errors
from unit.codecs.gemini_sdk import answer

from gw.codecs.gemini.client_request import decode_generate_request
from gw.codecs.gemini.client_stream import GeminiStreamEncoder
from gw.ir import (
    AssistantMessage,
    ErrorEvent,
    Finish,
    StreamEvent,
    StreamStart,
    TextDelta,
    ThinkingDelta,
    ThinkingPart,
    ToolCall,
    ToolCallDelta,
    Usage,
    UsageEvent,
)

START = StreamStart(id="up", model="gpt-4o")
USAGE = UsageEvent(usage=Usage(input_tokens=5, output_tokens=7))


def body(
    events: Sequence[StreamEvent], *, sse: bool = True, signatures_lead: bool = False
) -> bytes:
    encoder = GeminiStreamEncoder(
        response_id="req_1", model="gpt-4o", sse=sse, signatures_lead=signatures_lead
    )
    return b"".join(encoder.encode(event) for event in events) + encoder.done()


def chunks(events: Sequence[StreamEvent], **options: Any) -> list[dict[str, Any]]:
    raw = body(events, **options)
    return [json.loads(frame[len(b"data: ") :]) for frame in raw.split(b"\r\n\r\n") if frame]


def parts(events: Sequence[StreamEvent], **options: Any) -> list[dict[str, Any]]:
    return [p for c in chunks(events, **options) for p in c["candidates"][0]["content"]["parts"]]


def test_the_sdk_reads_text_chunks_then_the_finish_and_usage() -> None:
    events = [START, TextDelta(text="Hel"), TextDelta(text="lo"), Finish(reason="stop"), USAGE]
    sdk = answer(body(events))
    got = list(sdk.client.models.generate_content_stream(model="m", contents="hi"))
    assert "".join(c.text or "" for c in got) == "Hello"
    last = got[-1]
    assert last.candidates is not None
    assert last.candidates[0].finish_reason == "STOP"
    assert last.usage_metadata is not None
    assert last.usage_metadata.total_token_count == 12
    assert {c.response_id for c in got} == {"req_1"}


def test_nothing_is_written_before_the_upstream_produced_output() -> None:
    encoder = GeminiStreamEncoder(response_id="r", model="m")
    assert encoder.encode(START) == b""
    assert encoder.encode(USAGE) == b""
    assert encoder.encode(ToolCallDelta(index=0, id="c", name="f", arguments='{"a"')) == b""


def test_a_tool_call_goes_out_whole_once_complete() -> None:
    events = [
        START,
        ToolCallDelta(index=0, id="c0", name="f", arguments='{"a"'),
        ToolCallDelta(index=1, id="c1", name="g", arguments=""),
        ToolCallDelta(index=0, arguments=": 1}"),
        Finish(reason="tool_calls"),
    ]
    sdk = answer(body(events))
    got = list(sdk.client.models.generate_content_stream(model="m", contents="hi"))
    calls = [(c.id, c.name, c.args) for chunk in got for c in chunk.function_calls or []]
    assert calls == [("c0", "f", {"a": 1}), ("c1", "g", {})]
    assert got[-1].candidates is not None
    assert got[-1].candidates[0].finish_reason == "STOP"


def test_calls_are_sent_before_text_that_follows_them() -> None:
    events = [START, ToolCallDelta(index=0, id="c0", name="f", arguments="{}"), TextDelta(text="x")]
    assert parts(events)[:2] == [
        {"functionCall": {"id": "c0", "name": "f", "args": {}}},
        {"text": "x"},
    ]


def test_a_call_cut_by_the_output_limit_is_dropped_and_the_answer_ends_at_the_limit() -> None:
    events = [
        START,
        TextDelta(text="a"),
        ToolCallDelta(index=0, id="c", name="f", arguments='{"cut'),
    ]
    raw = body([*events, Finish(reason="length")])
    assert b'"error"' not in raw
    assert b"functionCall" not in raw
    assert b'"finishReason":"MAX_TOKENS"' in raw


def test_arguments_that_are_not_an_object_end_the_stream_with_an_error() -> None:
    """Outside the output limit, unreadable arguments are the upstream's fault."""
    events = [
        START,
        TextDelta(text="a"),
        ToolCallDelta(index=0, id="c", name="f", arguments='{"cut'),
    ]
    raw = body([*events, Finish(reason="tool_calls")])
    assert raw.count(b'data: {"error":') == 1
    assert raw.endswith(b"\r\n\r\n")
    assert b"finishReason" not in raw


def test_an_anthropic_signature_closes_its_thought_and_comes_back_with_it() -> None:
    events = [
        START,
        ThinkingDelta(text="Let me "),
        ThinkingDelta(text="think."),
        ThinkingDelta(signature="RXFRQg=="),
        TextDelta(text="Hi"),
        Finish(reason="stop"),
    ]
    got = parts(events)
    assert got[:4] == [
        {"text": "Let me ", "thought": True},
        {"text": "think.", "thought": True},
        {"text": "", "thought": True, "thoughtSignature": "RXFRQg=="},
        {"text": "Hi"},
    ]
    history = {
        "contents": [{"role": "user", "parts": [{"text": "q"}]}, {"role": "model", "parts": got}]
    }
    request = decode_generate_request(json.dumps(history).encode(), model="m", stream=False)
    assistant = request.messages[1]
    assert isinstance(assistant, AssistantMessage)
    assert assistant.content[0] == ThinkingPart(text="Let me think.", signature="RXFRQg==")


def test_a_gemini_signature_goes_on_the_part_after_it() -> None:
    events = [
        START,
        ThinkingDelta(text="plan"),
        ThinkingDelta(signature="c2ln"),
        ToolCallDelta(index=0, id="c0", name="f", arguments="{}"),
        Finish(reason="tool_calls"),
    ]
    got = parts(events, signatures_lead=True)
    assert got[:2] == [
        {"text": "plan", "thought": True},
        {"functionCall": {"id": "c0", "name": "f", "args": {}}, "thoughtSignature": "c2ln"},
    ]
    history = {
        "contents": [{"role": "user", "parts": [{"text": "q"}]}, {"role": "model", "parts": got}]
    }
    request = decode_generate_request(json.dumps(history).encode(), model="m", stream=False)
    assistant = request.messages[1]
    assert isinstance(assistant, AssistantMessage)
    assert assistant.content == (ThinkingPart(text="plan"), ThinkingPart(signature="c2ln"))
    assert assistant.tool_calls == (ToolCall(id="c0", name="f", arguments="{}"),)


def test_a_signature_left_over_at_the_end_rides_on_the_last_chunk() -> None:
    events = [START, TextDelta(text="x"), ThinkingDelta(signature="c2ln"), Finish(reason="stop")]
    last = chunks(events, signatures_lead=True)[-1]["candidates"][0]
    assert last["content"]["parts"] == [{"text": "", "thoughtSignature": "c2ln"}]
    assert last["finishReason"] == "STOP"


def test_an_error_after_the_first_byte_ends_the_stream_as_the_sdk_raises_it() -> None:
    events = [START, TextDelta(text="par"), ErrorEvent(code="upstream_timeout", message="gave up")]
    raw = body(events)
    assert raw.endswith(b"\r\n\r\n")
    error = json.loads(raw.split(b"\r\n\r\n")[-2][len(b"data: ") :])
    assert error["error"]["status"] == "DEADLINE_EXCEEDED"
    assert error["gw"] == {"code": "upstream_timeout"}
    sdk = answer(raw)
    stream = sdk.client.models.generate_content_stream(model="m", contents="hi")
    assert next(stream).text == "par"
    with pytest.raises(errors.ServerError) as caught:
        next(stream)
    assert caught.value.code == 504


def test_without_alt_sse_the_chunks_are_one_json_array() -> None:
    events = [START, TextDelta(text="a"), TextDelta(text="b"), Finish(reason="stop")]
    whole = json.loads(body(events, sse=False))
    assert [c["candidates"][0]["content"]["parts"][0]["text"] for c in whole] == ["a", "b", ""]
    failed = json.loads(
        body(
            [START, TextDelta(text="a"), ErrorEvent(code="upstream_error", message="x")], sse=False
        )
    )
    assert failed[-1]["error"]["code"] == 502
    assert (
        json.loads(body([ErrorEvent(code="overloaded", message="x")], sse=False))[0]["error"][
            "status"
        ]
        == "UNAVAILABLE"
    )

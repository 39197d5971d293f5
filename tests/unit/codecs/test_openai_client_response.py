"""Client-side encoders, checked by the official OpenAI SDK's own types and stream helpers."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import get_args

import httpx2
import openai
import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from gw.codecs.openai_chat import ChatStreamEncoder, encode_chat_response
from gw.codecs.openai_chat.client_stream import _Delta
from gw.codecs.sse import SSEParser
from gw.ir import (
    ChatResponse,
    ErrorEvent,
    Finish,
    FinishReason,
    StreamEvent,
    StreamStart,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
    UsageEvent,
)

USAGE = Usage(input_tokens=12, output_tokens=5, cached_input_tokens=4, reasoning_tokens=2)
TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def sdk_client(body: bytes, *, stream: bool) -> openai.OpenAI:
    headers = {"content-type": "text/event-stream" if stream else "application/json"}

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=body, headers=headers)

    return openai.OpenAI(
        api_key="test",
        base_url="http://gw.test/v1",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        _strict_response_validation=True,
    )


def encode_stream(events: Iterable[StreamEvent], *, include_usage: bool = True) -> bytes:
    encoder = ChatStreamEncoder(
        request_id="chatcmpl-gw1",
        model="gpt-4o-mini",
        created=1700000000,
        include_usage=include_usage,
    )
    return b"".join(encoder.encode(event) for event in events) + encoder.done()


def frames(stream: bytes) -> list[str]:
    parser = SSEParser()
    return [message.data for message in parser.feed(stream)]


# ---- chat.completion ------------------------------------------------------------------


def test_text_response_validates_as_sdk_chat_completion() -> None:
    response = ChatResponse(id="chatcmpl-1", model="x", text="Hello!", usage=USAGE, created=7)
    raw = encode_chat_response(response, model="gpt-4o-mini-2024-07-18")
    completion = ChatCompletion.model_validate_json(raw)
    assert completion.object == "chat.completion"
    assert completion.model == "gpt-4o-mini-2024-07-18"
    assert completion.created == 7
    choice = completion.choices[0]
    assert (choice.index, choice.finish_reason, choice.logprobs) == (0, "stop", None)
    assert choice.message.role == "assistant"
    assert choice.message.content == "Hello!"
    assert choice.message.tool_calls is None
    assert completion.usage is not None
    assert completion.usage.total_tokens == 17
    assert completion.usage.prompt_tokens_details is not None
    assert completion.usage.prompt_tokens_details.cached_tokens == 4
    assert completion.usage.completion_tokens_details is not None
    assert completion.usage.completion_tokens_details.reasoning_tokens == 2
    assert "tool_calls" not in json.loads(raw)["choices"][0]["message"]


def test_tool_call_response_has_null_content() -> None:
    response = ChatResponse(
        id="chatcmpl-2",
        model="x",
        tool_calls=(ToolCall(id="call_1", name="get_weather", arguments='{"city":"Oslo"}'),),
        finish_reason="tool_calls",
    )
    raw = encode_chat_response(response, model="m")
    message = json.loads(raw)["choices"][0]["message"]
    assert message["content"] is None
    assert message["refusal"] is None
    completion = ChatCompletion.model_validate_json(raw)
    assert completion.usage is None
    calls = completion.choices[0].message.tool_calls
    assert calls is not None
    assert calls[0].type == "function"
    assert calls[0].function.name == "get_weather"


@pytest.mark.parametrize("reason", get_args(FinishReason))
def test_every_finish_reason_is_one_the_sdk_accepts(reason: FinishReason) -> None:
    response = ChatResponse(id="a", model="m", text="x", finish_reason=reason)
    ChatCompletion.model_validate_json(encode_chat_response(response, model="m"))


def test_sdk_client_reads_the_response() -> None:
    raw = encode_chat_response(ChatResponse(id="c", model="m", text="hi", usage=USAGE), model="m")
    completion = sdk_client(raw, stream=False).chat.completions.create(
        model="chat", messages=[{"role": "user", "content": "hi"}]
    )
    assert completion.choices[0].message.content == "hi"


# ---- chat.completion.chunk --------------------------------------------------------------

TOOL_STREAM: list[StreamEvent] = [
    StreamStart(id="up-1", model="upstream"),
    ToolCallDelta(index=0, id="call_a", name="get_weather", arguments=""),
    ToolCallDelta(index=0, arguments='{"city":'),
    ToolCallDelta(index=0, arguments='"Oslo"}'),
    # OpenAI streams tool calls one after another; the SDK closes a call when the next starts.
    ToolCallDelta(index=1, id="call_b", name="get_weather", arguments='{"city"'),
    ToolCallDelta(index=1, arguments=':"Rome"}'),
    UsageEvent(usage=USAGE),
    Finish(reason="tool_calls"),
]

TEXT_STREAM: list[StreamEvent] = [
    StreamStart(id="up-1", model="upstream"),
    TextDelta(text="Hel"),
    TextDelta(text="lo\nworld"),
    Finish(reason="stop"),
    UsageEvent(usage=USAGE),
]


@pytest.mark.parametrize("events", [TOOL_STREAM, TEXT_STREAM])
@pytest.mark.parametrize("include_usage", [True, False])
def test_every_frame_validates_as_sdk_chunk(events: list[StreamEvent], include_usage: bool) -> None:
    stream = encode_stream(events, include_usage=include_usage)
    assert stream.endswith(b"data: [DONE]\n\n")
    datas = frames(stream)
    assert datas[-1] == "[DONE]"
    chunks = [ChatCompletionChunk.model_validate_json(data) for data in datas[:-1]]
    assert all(c.id == "chatcmpl-gw1" and c.model == "gpt-4o-mini" for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    raw = [json.loads(data) for data in datas[:-1]]
    if include_usage:
        assert all(r["usage"] is None for r in raw[:-1])
        assert raw[-1]["choices"] == []
        assert raw[-1]["usage"]["total_tokens"] == 17
    else:
        assert all("usage" not in r for r in raw)


def test_first_text_chunk_matches_openai() -> None:
    first = json.loads(frames(encode_stream(TEXT_STREAM))[0])
    assert first["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert first["object"] == "chat.completion.chunk"


def test_stream_start_alone_commits_nothing() -> None:
    encoder = ChatStreamEncoder(request_id="r", model="m", created=1, include_usage=True)
    assert encoder.encode(StreamStart(id="u", model="m")) == b""
    assert encoder.encode(UsageEvent(usage=USAGE)) == b""


def test_tool_call_fragments_carry_id_type_and_name_only_first() -> None:
    raw = [json.loads(d) for d in frames(encode_stream(TOOL_STREAM))[:-1]]
    deltas = [r["choices"][0]["delta"] for r in raw if r["choices"]]
    assert deltas[0] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "index": 0,
                "id": "call_a",
                "type": "function",
                "function": {"name": "get_weather", "arguments": ""},
            }
        ],
    }
    assert deltas[1] == {"tool_calls": [{"index": 0, "function": {"arguments": '{"city":'}}]}
    assert deltas[-1] == {}
    assert raw[-2]["choices"][0]["finish_reason"] == "tool_calls"


def test_sdk_stream_helper_accumulates_text() -> None:
    client = sdk_client(encode_stream(TEXT_STREAM), stream=True)
    with client.chat.completions.stream(
        model="chat", messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_completion()
    assert "content.delta" in kinds
    assert final.choices[0].message.content == "Hello\nworld"
    assert final.choices[0].finish_reason == "stop"
    assert final.usage is not None
    assert final.usage.completion_tokens == 5


def test_sdk_stream_helper_accumulates_tool_calls() -> None:
    client = sdk_client(encode_stream(TOOL_STREAM), stream=True)
    with client.chat.completions.stream(
        model="chat",
        messages=[{"role": "user", "content": "weather?"}],
        tools=[TOOL],  # type: ignore[list-item]  # a plain dict is what users pass
    ) as stream:
        done = [e for e in stream if e.type == "tool_calls.function.arguments.done"]
        final = stream.get_final_completion()
    assert [e.arguments for e in done] == ['{"city":"Oslo"}', '{"city":"Rome"}']
    calls = final.choices[0].message.tool_calls
    assert calls is not None
    assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [
        ("call_a", "get_weather", '{"city":"Oslo"}'),
        ("call_b", "get_weather", '{"city":"Rome"}'),
    ]
    assert final.choices[0].finish_reason == "tool_calls"


def test_sdk_raw_stream_yields_usage_chunk_last() -> None:
    client = sdk_client(encode_stream(TEXT_STREAM), stream=True)
    chunks = list(
        client.chat.completions.create(
            model="chat",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Hello\nworld"


def test_error_event_makes_the_sdk_raise() -> None:
    events: list[StreamEvent] = [
        StreamStart(id="u", model="m"),
        TextDelta(text="partial"),
        ErrorEvent(code="upstream_error", message="upstream stream ended early"),
    ]
    stream = encode_stream(events)
    error_frame = json.loads(frames(stream)[-2])
    assert error_frame == {
        "error": {
            "message": "upstream stream ended early",
            "type": "server_error",
            "code": "upstream_error",
            "param": None,
        }
    }
    assert b'"choices":[]' not in stream  # no usage chunk after a failure
    client = sdk_client(stream, stream=True)
    with pytest.raises(openai.APIError, match="upstream stream ended early") as caught:
        list(
            client.chat.completions.create(
                model="chat", messages=[{"role": "user", "content": "hi"}], stream=True
            )
        )
    assert caught.value.code == "upstream_error"


def test_finish_without_output_still_opens_the_message() -> None:
    datas = frames(encode_stream([Finish(reason="length")], include_usage=False))
    first, finish = (json.loads(d) for d in datas[:2])
    assert first["choices"][0]["delta"]["role"] == "assistant"
    assert finish["choices"][0]["finish_reason"] == "length"


def test_id_and_name_are_sent_once_per_tool_call() -> None:
    events: list[StreamEvent] = [
        ToolCallDelta(index=0, arguments=""),
        ToolCallDelta(index=0, id="c", name="f", arguments="{"),
        ToolCallDelta(index=0, id="c", name="f", arguments="}"),
        Finish(reason="tool_calls"),
    ]
    client = sdk_client(encode_stream(events), stream=True)
    with client.chat.completions.stream(
        model="chat", messages=[{"role": "user", "content": "x"}]
    ) as stream:
        final = stream.until_done().get_final_completion()
    calls = final.choices[0].message.tool_calls
    assert calls is not None
    assert (calls[0].id, calls[0].function.name, calls[0].function.arguments) == ("c", "f", "{}")


@pytest.mark.parametrize("include_usage", [False, True])
def test_text_chunks_are_the_struct_encoding_byte_for_byte(include_usage: bool) -> None:
    """The text fast path (bytes around the text encoded once) changes no byte."""
    encoder = ChatStreamEncoder(
        request_id='req "1"', model='m\n"content":""', created=7, include_usage=include_usage
    )
    encoder.encode(TextDelta(text="opens the message"))
    for text in ("plain", 'quote " and \\ backslash', "line\nbreak\u2028", "é 😀", ""):
        expected = encoder._chunk(_Delta(content=text))  # the struct path, for reference
        assert encoder.encode(TextDelta(text=text)) == expected

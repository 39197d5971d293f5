"""The Responses client codec: requests into the IR, answers and streams out, each output
checked by the official SDK's own types (pydantic models of the Responses API)."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from gw.codecs.openai_responses.client_request import decode_responses_request
from gw.codecs.openai_responses.client_response import encode_responses_response
from gw.codecs.openai_responses.client_stream import ResponsesStreamEncoder
from gw.errors import InvalidRequestError, NativeFeatureUnsupportedError
from gw.ir import (
    AssistantMessage,
    ChatRequest,
    ChatResponse,
    ErrorEvent,
    FilePart,
    Finish,
    ImagePart,
    NativeBlock,
    NativeEvent,
    StreamEvent,
    StreamStart,
    SystemMessage,
    TextDelta,
    TextPart,
    ThinkingDelta,
    ThinkingPart,
    ToolCall,
    ToolCallDelta,
    ToolMessage,
    Usage,
    UsageEvent,
    UserMessage,
)

EVENTS: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
RID = "resp_0123"


def decode(body: dict[str, Any]) -> ChatRequest:
    return decode_responses_request(json.dumps(body).encode())


# -- requests --------------------------------------------------------------------------


def test_a_string_input_is_one_user_message_after_the_instructions() -> None:
    request = decode({"model": "m", "input": "hi", "instructions": "be brief"})
    assert request.messages == (
        SystemMessage(content=(TextPart(text="be brief"),)),
        UserMessage(content=(TextPart(text="hi"),)),
    )
    assert request.include_usage
    assert not request.stream


def test_items_become_turns_in_order() -> None:
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc"}
    request = decode(
        {
            "model": "m",
            "input": [
                {"role": "developer", "content": "rules"},
                {
                    "type": "message",
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "look"},
                        {"type": "input_image", "image_url": "https://x/a.png", "detail": "low"},
                        {
                            "type": "input_file",
                            "file_data": "data:application/pdf;base64,QUJD",
                            "filename": "a.pdf",
                        },
                    ],
                },
                reasoning,
                {"type": "function_call", "call_id": "call_1", "name": "get", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "42"},
                {"role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
            ],
        }
    )
    system, user, assistant, tool, last = request.messages
    assert system == SystemMessage(content=(TextPart(text="rules"),))
    assert user == UserMessage(
        content=(
            TextPart(text="look"),
            ImagePart(url="https://x/a.png", detail="low"),
            FilePart(data="QUJD", media_type="application/pdf", filename="a.pdf"),
        )
    )
    assert isinstance(assistant, AssistantMessage)
    assert assistant.content == (NativeBlock(format="openai_responses", data=reasoning),)
    assert assistant.tool_calls == (ToolCall(id="call_1", name="get", arguments="{}"),)
    assert tool == ToolMessage(tool_call_id="call_1", content=(TextPart(text="42"),))
    assert last == AssistantMessage(content=(TextPart(text="done"),))


def test_the_highest_effort_max_is_the_irs_xhigh() -> None:
    request = decode({"model": "m", "input": "x", "reasoning": {"effort": "max"}})
    assert request.reasoning is not None
    assert request.reasoning.effort == "xhigh"


def test_tools_settings_and_the_keys_kept_for_a_responses_upstream() -> None:
    search = {"type": "web_search"}
    request = decode(
        {
            "model": "m",
            "input": "q",
            "tools": [
                {"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": True},
                search,
            ],
            "tool_choice": {"type": "function", "name": "f"},
            "text": {
                "format": {
                    "type": "json_schema",
                    "name": "out",
                    "schema": {"type": "object"},
                    "strict": True,
                },
                "verbosity": "low",
            },
            "reasoning": {"effort": "xhigh", "summary": "auto"},
            "max_output_tokens": 99,
            "temperature": 0.5,
            "store": False,
            "previous_response_id": "resp_x",
            "include": ["reasoning.encrypted_content"],
            "stream": True,
        }
    )
    assert [tool.name for tool in request.tools] == ["f"]
    assert request.native_tools == (NativeBlock(format="openai_responses", data=search),)
    assert request.tool_choice is not None
    assert (request.tool_choice.mode, request.tool_choice.name) == ("tool", "f")
    assert request.response_format is not None
    assert request.response_format.json_schema == {"type": "object"}
    assert request.reasoning is not None
    assert (request.reasoning.effort, request.reasoning.summary) == ("xhigh", "auto")
    assert request.max_tokens == 99
    assert request.stream
    assert request.extensions["openai_responses"] == {
        "store": False,
        "previous_response_id": "resp_x",
        "include": ["reasoning.encrypted_content"],
        "text": {"verbosity": "low"},
    }


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"input": "x"}, "model"),
        ({"model": "m"}, "input"),
        ({"model": "m", "input": []}, "input"),
        ({"model": "m", "input": [{"role": "robot", "content": "x"}]}, "input[0].role"),
        (
            {"model": "m", "input": [{"role": "user", "content": [{"type": "nope"}]}]},
            "input[0].content[0].type",
        ),
        ({"model": "m", "input": "x", "max_output_tokens": 0}, "max_output_tokens"),
        ({"model": "m", "input": "x", "reasoning": {"effort": "huge"}}, "reasoning.effort"),
        ({"model": "m", "input": "x", "text": {"format": {"type": "xml"}}}, "text.format.type"),
        ({"model": "m", "input": "x", "tools": [{"type": "function"}]}, "tools[0].name"),
        (
            {"model": "m", "input": [{"type": "function_call", "name": "f", "arguments": "{}"}]},
            "input[0].call_id",
        ),
    ],
)
def test_bad_requests_name_the_field(body: dict[str, Any], param: str) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        decode(body)
    assert caught.value.param == param


@pytest.mark.parametrize(
    "body",
    [
        {"model": "m", "input": [{"role": "user", "content": [{"type": "input_audio"}]}]},
        {"model": "m", "input": "x", "top_logprobs": 3},
        {"model": "m", "input": "x", "include": ["message.output_text.logprobs"]},
    ],
    ids=["audio", "top_logprobs", "include-logprobs"],
)
def test_what_gw_cannot_answer_is_refused_as_unsupported(body: dict[str, Any]) -> None:
    with pytest.raises(NativeFeatureUnsupportedError):
        decode(body)


def test_prompt_text_is_never_quoted_in_an_error() -> None:
    with pytest.raises(InvalidRequestError) as caught:
        decode({"model": "m", "input": [{"type": "secret prompt words!", "x": 1}]})
    assert "secret" not in caught.value.client_message


# -- whole answers ---------------------------------------------------------------------


def encode(response: ChatResponse, request: ChatRequest | None = None) -> dict[str, Any]:
    request = request or decode({"model": "route", "input": "hi"})
    body = encode_responses_response(response, request, response_id=RID, created_at=1)
    Response.model_validate_json(body)  # the SDK's own model accepts it
    decoded: dict[str, Any] = msgspec.json.decode(body)
    return decoded


def test_an_answer_is_a_response_object_with_its_items_and_usage() -> None:
    usage = Usage(input_tokens=10, output_tokens=5, cached_input_tokens=4, reasoning_tokens=2)
    body = encode(
        ChatResponse(
            id="x",
            model="up-model",
            text="hello",
            thinking=(ThinkingPart(text="hmm"),),
            tool_calls=(ToolCall(id="call_9", name="f", arguments='{"a":1}'),),
            finish_reason="tool_calls",
            usage=usage,
        )
    )
    assert body["id"] == RID
    assert body["status"] == "completed"
    assert body["model"] == "up-model"
    assert body["output_text"] == "hello"
    assert [item["type"] for item in body["output"]] == ["reasoning", "message", "function_call"]
    assert body["output"][2]["call_id"] == "call_9"
    assert body["usage"] == {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 4, "cache_write_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 2},
        "total_tokens": 15,
    }


def test_a_cut_answer_is_incomplete_with_its_reason() -> None:
    body = encode(ChatResponse(id="x", model="m", text="par", finish_reason="length"))
    assert body["status"] == "incomplete"
    assert body["incomplete_details"] == {"reason": "max_output_tokens"}


def test_a_responses_upstreams_own_items_come_back_verbatim_in_order() -> None:
    item = {
        "type": "web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {"type": "search", "query": "q"},
    }
    body = encode(
        ChatResponse(
            id="x",
            model="m",
            text="found",
            blocks=(NativeBlock(format="openai_responses", data=item), TextPart(text="found")),
        )
    )
    assert body["output"][0] == item
    assert body["output"][1]["content"][0]["text"] == "found"


def test_the_request_settings_are_echoed() -> None:
    request = decode(
        {
            "model": "route",
            "input": "hi",
            "metadata": {"k": "v"},
            "store": False,
            "instructions": "x",
            "tools": [{"type": "function", "name": "f"}],
        }
    )
    body = encode(ChatResponse(id="x", model="m", text="ok"), request)
    assert body["metadata"] == {"k": "v"}
    assert body["store"] is False
    assert body["instructions"] == "x"
    assert body["tools"][0]["name"] == "f"
    assert body["tool_choice"] == "auto"


# -- streams ---------------------------------------------------------------------------


def stream(events: list[StreamEvent], request: ChatRequest | None = None) -> list[dict[str, Any]]:
    """The frames for ``events``, each checked against the SDK's event union."""
    encoder = ResponsesStreamEncoder(
        request=request or decode({"model": "route", "input": "hi"}),
        response_id=RID,
        model="up-model",
        created_at=1,
    )
    raw = b"".join(encoder.encode(event) for event in events) + encoder.done()
    frames = []
    for block in raw.decode().split("\n\n"):
        if not block:
            continue
        kind_line, data_line = block.split("\n")
        payload = json.loads(data_line.removeprefix("data: "))
        assert kind_line == f"event: {payload['type']}"
        EVENTS.validate_python(payload)
        frames.append(payload)
    assert [frame["sequence_number"] for frame in frames] == list(range(len(frames)))
    return frames


def kinds(frames: list[dict[str, Any]]) -> list[str]:
    return [frame["type"] for frame in frames]


def test_nothing_is_written_before_the_upstream_produced_output() -> None:
    encoder = ResponsesStreamEncoder(
        request=decode({"model": "m", "input": "hi"}), response_id=RID, model="m", created_at=1
    )
    assert encoder.encode(StreamStart(id="x", model="m")) == b""


def test_a_text_stream_is_the_full_numbered_sequence() -> None:
    frames = stream(
        [
            StreamStart(id="x", model="m"),
            TextDelta(text="Hel"),
            TextDelta(text="lo"),
            UsageEvent(usage=Usage(input_tokens=3, output_tokens=2)),
            Finish(reason="stop"),
        ]
    )
    assert kinds(frames) == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    completed = frames[-1]["response"]
    assert completed["output"][0]["content"][0]["text"] == "Hello"
    assert completed["usage"]["total_tokens"] == 5
    Response.model_validate(completed)


def test_reasoning_then_parallel_tool_calls() -> None:
    frames = stream(
        [
            ThinkingDelta(text="think"),
            ToolCallDelta(index=0, id="call_a", name="f", arguments='{"x"'),
            ToolCallDelta(index=1, id="call_b", name="g", arguments="{}"),
            ToolCallDelta(index=0, arguments=":1}"),
            Finish(reason="tool_calls"),
        ]
    )
    assert "response.reasoning_summary_text.delta" in kinds(frames)
    done = [frame["item"] for frame in frames if frame["type"] == "response.output_item.done"]
    assert [item["type"] for item in done] == ["reasoning", "function_call", "function_call"]
    assert done[1]["arguments"] == '{"x":1}'
    assert done[2]["call_id"] == "call_b"
    assert frames[-1]["type"] == "response.completed"
    assert [item["type"] for item in frames[-1]["response"]["output"]] == [
        "reasoning",
        "function_call",
        "function_call",
    ]


def test_a_responses_upstreams_reasoning_item_closes_the_reasoning_with_its_own_form() -> None:
    item = {
        "type": "reasoning",
        "id": "rs_up",
        "summary": [{"type": "summary_text", "text": "t"}],
        "encrypted_content": "enc",
    }
    opening = {"type": "reasoning", "id": "rs_up", "summary": [], "status": "in_progress"}
    frames = stream(
        [
            NativeEvent(block=NativeBlock(format="openai_responses", data=opening)),
            ThinkingDelta(text="t"),
            NativeEvent(block=NativeBlock(format="openai_responses", data=item)),
            TextDelta(text="answer"),
            Finish(reason="stop"),
        ]
    )
    added = [frame["item"] for frame in frames if frame["type"] == "response.output_item.added"]
    done = [frame["item"] for frame in frames if frame["type"] == "response.output_item.done"]
    assert added[0] == opening
    assert done[0] == item
    deltas = [f for f in frames if f["type"] == "response.reasoning_summary_text.delta"]
    assert [delta["item_id"] for delta in deltas] == ["rs_up"]
    assert frames[-1]["response"]["output"][0]["encrypted_content"] == "enc"


def test_another_formats_native_block_is_left_out() -> None:
    block = NativeBlock(
        format="anthropic",
        data={"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}},
    )
    frames = stream([NativeEvent(block=block), TextDelta(text="x"), Finish(reason="stop")])
    assert [item["type"] for item in frames[-1]["response"]["output"]] == ["message"]


def test_a_refusal_streams_in_its_own_part() -> None:
    frames = stream([TextDelta(text="no", refusal=True), Finish(reason="stop")])
    assert "response.refusal.delta" in kinds(frames)
    assert frames[-1]["response"]["output"][0]["content"] == [{"type": "refusal", "refusal": "no"}]


def test_a_cut_stream_is_incomplete() -> None:
    frames = stream([TextDelta(text="x"), Finish(reason="length")])
    assert frames[-1]["type"] == "response.incomplete"
    assert frames[-1]["response"]["incomplete_details"] == {"reason": "max_output_tokens"}


def test_a_failure_after_the_first_byte_ends_with_the_error_events() -> None:
    frames = stream([TextDelta(text="partial"), ErrorEvent(code="upstream_error", message="boom")])
    assert kinds(frames)[-2:] == ["error", "response.failed"]
    assert frames[-2]["code"] == "upstream_error"
    failed = frames[-1]["response"]
    assert failed["status"] == "failed"
    assert failed["error"] == {"code": "server_error", "message": "boom"}
    assert "response.completed" not in kinds(frames)


# -- Codex's namespace tools -----------------------------------------------------------

NAMESPACE = {
    "type": "namespace",
    "name": "multi_agent_v1",
    "description": "sub-agents",
    "tools": [
        {
            "type": "function",
            "name": "spawn_agent",
            "parameters": {"type": "object"},
            "strict": False,
        }
    ],
}


def test_a_namespaces_functions_are_offered_under_joined_names_and_the_namespace_kept() -> None:
    request = decode(
        {
            "model": "m",
            "input": [
                {
                    "type": "function_call",
                    "call_id": "c1",
                    "name": "spawn_agent",
                    "namespace": "multi_agent_v1",
                    "arguments": "{}",
                },
                {"type": "function_call_output", "call_id": "c1", "output": "ok"},
            ],
            "tools": [{"type": "function", "name": "exec_command"}, NAMESPACE],
        }
    )
    assert [tool.name for tool in request.tools] == ["exec_command", "multi_agent_v1__spawn_agent"]
    assert request.native_tools == (NativeBlock(format="openai_responses", data=NAMESPACE),)
    assistant = request.messages[0]
    assert isinstance(assistant, AssistantMessage)
    assert assistant.tool_calls[0].name == "multi_agent_v1__spawn_agent"


def test_a_call_to_a_joined_name_goes_back_split_whole_and_streamed() -> None:
    request = decode(
        {"model": "m", "input": "go", "tools": [NAMESPACE, {"type": "function", "name": "a__b"}]}
    )
    call = ToolCall(id="c9", name="multi_agent_v1__spawn_agent", arguments="{}")
    own = ToolCall(id="c8", name="a__b", arguments="{}")  # not a declared namespace
    body = encode(
        ChatResponse(id="x", model="m", tool_calls=(call, own), finish_reason="tool_calls"), request
    )
    assert [(item["name"], item.get("namespace")) for item in body["output"]] == [
        ("spawn_agent", "multi_agent_v1"),
        ("a__b", None),
    ]
    assert [tool["type"] for tool in body["tools"]] == ["function", "namespace"]  # echoed once
    frames = stream(
        [
            ToolCallDelta(index=0, id="c9", name=call.name, arguments="{}"),
            Finish(reason="tool_calls"),
        ],
        request,
    )
    done = [frame["item"] for frame in frames if frame["type"] == "response.output_item.done"]
    assert (done[0]["name"], done[0]["namespace"]) == ("spawn_agent", "multi_agent_v1")

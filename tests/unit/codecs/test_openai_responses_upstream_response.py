"""A Responses upstream's answers and errors -> the IR: whole ``response`` objects (as the
fake upstream renders them, which the SDK's types check) and error bodies, by table."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from gw.codecs.openai_responses import decode_upstream_response, error_from_upstream
from gw.codecs.openai_responses.upstream_errors import (
    CODES,
    error_from_response_error,
    error_from_stream_event,
)
from gw.errors import (
    ContentBlockedError,
    ContextLengthExceededError,
    GatewayError,
    InvalidRequestError,
    RateLimitedError,
    UpstreamAuthFailedError,
    UpstreamError,
)
from gw.ir import NativeBlock, TextPart, ThinkingPart, ToolCall, Usage

from fakes.responses_answer import ENCRYPTED_INCLUDE, Answer, Behavior

REQUEST = {"model": "gpt-5-mini", "input": "weather in Paris?", "include": [ENCRYPTED_INCLUDE]}


def whole(behavior: Behavior, body: dict[str, Any] = REQUEST) -> dict[str, Any]:
    return Answer(behavior, body, 7).whole()


def decode(response: dict[str, Any]) -> Any:
    return decode_upstream_response(json.dumps(response).encode())


def test_text_usage_and_ids() -> None:
    response = whole(Behavior(text="Hello there", usage=(12, 3), cached_tokens=4))
    answer = decode(response)
    assert answer.id == response["id"]
    assert answer.model == "gpt-5-mini"
    assert answer.text == "Hello there"
    assert answer.created == response["created_at"]
    assert answer.finish_reason == "stop"
    assert answer.blocks == ()
    assert answer.usage == Usage(input_tokens=12, output_tokens=3, cached_input_tokens=4)


def test_a_function_call_is_a_tool_call_by_call_id() -> None:
    answer = decode(whole(Behavior(tool_call=("get_weather", '{"city": "Paris"}'))))
    assert answer.text is None
    assert answer.tool_calls == (
        ToolCall(id="call_fake7", name="get_weather", arguments='{"city": "Paris"}'),
    )
    assert answer.finish_reason == "tool_calls"


def test_reasoning_is_its_summary_then_the_item_verbatim_in_blocks() -> None:
    response = whole(
        Behavior(
            reasoning=("Plan.", "Check."),
            web_search="paris weather",
            text="Sunny.",
            tool_call=("f", "{}"),
        )
    )
    reasoning_item, search_item = response["output"][:2]
    assert reasoning_item["encrypted_content"]
    answer = decode(response)
    assert answer.thinking == (ThinkingPart(text="Plan.\n\nCheck."),)
    # The summary for other formats' clients, then the item standing for it (Responses).
    assert answer.blocks == (
        ThinkingPart(text="Plan.\n\nCheck."),
        NativeBlock(format="openai_responses", data=reasoning_item),
        NativeBlock(format="openai_responses", data=search_item),
        TextPart(text="Sunny."),
        ToolCall(id="call_fake7", name="f", arguments="{}"),
    )
    assert answer.usage.reasoning_tokens == 2


def test_a_reasoning_item_without_summary_has_no_thinking_part() -> None:
    response = whole(Behavior(text="x"))
    response["output"].insert(0, {"id": "rs_1", "type": "reasoning", "summary": []})
    answer = decode(response)
    assert answer.thinking == ()
    assert answer.blocks[0] == NativeBlock(format="openai_responses", data=response["output"][0])


def test_a_refusal_is_kept_apart() -> None:
    answer = decode(whole(Behavior(text="I can't help with that.", refusal=True)))
    assert (answer.text, answer.refusal) == (None, "I can't help with that.")


@pytest.mark.parametrize(
    ("reason", "finish"),
    [("max_output_tokens", "length"), ("content_filter", "content_filter")],
)
def test_incomplete(reason: str, finish: str) -> None:
    answer = decode(whole(Behavior(ending="incomplete", incomplete_reason=reason)))
    assert answer.finish_reason == finish
    assert answer.text


def test_a_failed_response_raises_its_mapped_error() -> None:
    with pytest.raises(RateLimitedError):
        decode(whole(Behavior(ending="failed", failure_code="rate_limit_exceeded")))
    with pytest.raises(UpstreamError) as caught:
        decode(whole(Behavior(ending="failed")))
    assert caught.value.retryable


@pytest.mark.parametrize(
    "body",
    [b"{not json", b'{"output": 5}', b'{"status": "in_progress", "output": []}',
     b'{"output": [{"type": "function_call", "arguments": "{}"}]}'],
)  # fmt: skip
def test_malformed_bodies(body: bytes) -> None:
    with pytest.raises(UpstreamError) as caught:
        decode_upstream_response(body)
    assert "malformed" in str(caught.value)


def openai_error(status: int, code: str | None, kind: str = "invalid_request_error") -> bytes:
    error = {"message": "upstream words", "type": kind, "param": None, "code": code}
    return json.dumps({"error": error}).encode()


@pytest.mark.parametrize(
    ("status", "code", "expected"),
    [
        (400, None, InvalidRequestError),
        (400, "context_length_exceeded", ContextLengthExceededError),
        (401, "invalid_api_key", UpstreamAuthFailedError),
        (429, "rate_limit_exceeded", RateLimitedError),
        (429, "insufficient_quota", RateLimitedError),
        (500, None, UpstreamError),
        (500, "invalid_prompt", UpstreamError),  # a 5xx keeps its retry and fallback
        (400, "invalid_prompt", InvalidRequestError),
        (400, "image_content_policy_violation", ContentBlockedError),
    ],
)
def test_http_errors_by_table(status: int, code: str | None, expected: type[GatewayError]) -> None:
    error = error_from_upstream(status, openai_error(status, code), {"retry-after": "2"})
    assert type(error) is expected
    assert error.upstream_status == status
    assert error.retry_after == 2.0
    assert error.blame == "upstream"


def test_every_code_in_the_table_maps_to_its_class() -> None:
    for code, cls in CODES.items():
        assert type(error_from_response_error({"code": code, "message": "m"})) is cls, code


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"type": "error", "code": "rate_limit_exceeded", "message": "slow", "param": None},
         RateLimitedError),
        ({"type": "error", "error": {"type": "too_many_requests", "code": "too_many_requests",
                                     "message": "Too Many Requests"}}, RateLimitedError),
        ({"type": "error", "code": "context_length_exceeded", "message": "long"},
         ContextLengthExceededError),
        ({"type": "error", "code": None, "message": "boom"}, UpstreamError),
        ({"type": "error"}, UpstreamError),
    ],
)  # fmt: skip
def test_stream_error_events_flat_and_nested(
    data: dict[str, Any], expected: type[GatewayError]
) -> None:
    error = error_from_stream_event(msgspec.json.encode(data))
    assert type(error) is expected
    assert error.upstream_status == 200

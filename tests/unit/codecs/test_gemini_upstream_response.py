"""decode_upstream_response: a Gemini GenerateContentResponse as an IR ChatResponse."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gw.codecs.gemini.upstream_response import FINISH_REASONS, decode_upstream_response
from gw.errors import ContentBlockedError, GatewayError, PersistentUpstreamError, UpstreamError
from gw.ir import ChatResponse, ThinkingPart, ToolCall, Usage


def body(parts: list[dict[str, Any]] | None, finish: str | None = "STOP", **extra: Any) -> bytes:
    candidate: dict[str, Any] = {"index": 0}
    if parts is not None:
        candidate["content"] = {"parts": parts, "role": "model"}
    if finish is not None:
        candidate["finishReason"] = finish
    payload = {
        "candidates": [candidate],
        "modelVersion": "gemini-2.5-flash",
        "responseId": "r1",
        **extra,
    }
    return json.dumps(payload).encode()


def decode(raw: bytes) -> ChatResponse:
    return decode_upstream_response(raw, model="asked-for")


def test_text_and_usage() -> None:
    usage = {
        "promptTokenCount": 10,
        "candidatesTokenCount": 5,
        "thoughtsTokenCount": 7,
        "cachedContentTokenCount": 4,
        "toolUsePromptTokenCount": 2,
        "totalTokenCount": 24,
    }

    response = decode(body([{"text": "Hello, "}, {"text": "world"}], usageMetadata=usage))

    assert response == ChatResponse(
        id="r1",
        model="gemini-2.5-flash",
        text="Hello, world",
        finish_reason="stop",
        usage=Usage(input_tokens=12, output_tokens=12, cached_input_tokens=4, reasoning_tokens=7),
    )


def test_the_model_asked_for_stands_in_for_a_missing_model_version() -> None:
    raw = json.dumps(
        {"candidates": [{"content": {"parts": [{"text": "x"}]}, "finishReason": "STOP"}]}
    ).encode()

    response = decode(raw)

    assert (response.id, response.model, response.usage) == ("", "asked-for", None)


def test_thinking_signatures_and_calls() -> None:
    parts = [
        {"text": "First ", "thought": True},
        {"text": "then.", "thought": True, "thoughtSignature": "sig-a"},
        {"text": "Plan", "thought": True},
        {"text": "Calling.", "thoughtSignature": "sig-b"},
        {"functionCall": {"name": "f", "args": {"x": [1, 2]}}, "thoughtSignature": "sig-c"},
        {"functionCall": {"name": "g", "args": {}, "id": "given-id"}},
        {"functionCall": {"name": "h"}},
    ]

    response = decode(body(parts))

    assert response.thinking == (
        ThinkingPart(text="First then.", signature="sig-a"),
        ThinkingPart(text="Plan"),
        ThinkingPart(signature="sig-b"),
        ThinkingPart(signature="sig-c"),
    )
    assert response.text == "Calling."
    assert response.tool_calls == (
        ToolCall(id="call_r1_0", name="f", arguments='{"x":[1,2]}'),
        ToolCall(id="given-id", name="g", arguments="{}"),
        ToolCall(id="call_r1_2", name="h", arguments="{}"),
    )
    assert response.finish_reason == "tool_calls"


def test_call_ids_without_a_response_id() -> None:
    raw = json.dumps(
        {
            "candidates": [
                {"content": {"parts": [{"functionCall": {"name": "f"}}]}, "finishReason": "STOP"}
            ]
        }
    )

    assert decode(raw.encode()).tool_calls[0].id == "call_0"


FINISHED = sorted((gemini, ir) for gemini, ir in FINISH_REASONS.items() if ir != "error")
UNUSABLE = sorted(gemini for gemini, ir in FINISH_REASONS.items() if ir == "error")


@pytest.mark.parametrize(("gemini", "ir"), FINISHED)
def test_finish_reason_table(gemini: str, ir: str) -> None:
    assert decode(body([{"text": "x"}], gemini)).finish_reason == ir


@pytest.mark.parametrize("gemini", UNUSABLE)
def test_unusable_output_is_an_upstream_error_not_a_clean_finish(gemini: str) -> None:
    call = {"functionCall": {"name": "f", "args": {}}}
    with pytest.raises(UpstreamError, match=f"finishReason {gemini}") as failed:
        decode(body([call], gemini))
    assert failed.value.code == "upstream_error"
    assert failed.value.blame == "upstream"


@pytest.mark.parametrize("value", ["OTHER", "FINISH_REASON_UNSPECIFIED", "SOMETHING_NEW", None])
def test_unlisted_finish_reasons_read_as_stop(value: str | None) -> None:
    assert decode(body([{"text": "x"}], value)).finish_reason == "stop"


@pytest.mark.parametrize("value", ["OTHER", "FINISH_REASON_UNSPECIFIED", "NO_IMAGE", "IMAGE_OTHER"])
def test_an_unnamed_end_with_nothing_produced_is_an_upstream_error(value: str) -> None:
    for parts in ([], [{"text": ""}]):
        with pytest.raises(UpstreamError, match=f"finishReason {value}") as failed:
            decode(body(parts, value))
        assert failed.value.code == "upstream_error"


def test_other_parts_are_not_read() -> None:
    parts = [
        {"inlineData": {"mimeType": "image/png", "data": "AAAA"}},
        {"executableCode": {"language": "PYTHON", "code": "1"}},
    ]

    response = decode(body(parts))

    assert (response.text, response.tool_calls) == (None, ())


@pytest.mark.parametrize("finish", ["SAFETY", "RECITATION", "PROHIBITED_CONTENT"])
def test_an_answer_withheld_entirely_is_content_blocked(finish: str) -> None:
    with pytest.raises(ContentBlockedError) as caught:
        decode(body(None, finish))

    assert caught.value.blame == "upstream"
    assert finish in caught.value.message


def test_a_blocked_prompt_is_content_blocked() -> None:
    raw = json.dumps(
        {
            "promptFeedback": {"blockReason": "SAFETY", "safetyRatings": []},
            "usageMetadata": {"promptTokenCount": 3},
        }
    )

    with pytest.raises(ContentBlockedError, match="blockReason SAFETY"):
        decode(raw.encode())


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b"[]",
        b'{"candidates": []}',
        b'{"candidates": [{"content": {"parts": [{"text": 3}]}}]}',
    ],
)
def test_malformed_answers_are_upstream_errors(raw: bytes) -> None:
    with pytest.raises(UpstreamError) as caught:
        decode(raw)

    assert type(caught.value) is PersistentUpstreamError  # would repeat: not retried
    assert "malformed" in caught.value.message


def test_an_error_object_in_a_200_answer_is_mapped() -> None:
    raw = json.dumps(
        {"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}}
    ).encode()

    with pytest.raises(GatewayError) as caught:
        decode(raw)

    assert (caught.value.code, caught.value.upstream_status) == ("rate_limited", 200)

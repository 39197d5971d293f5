"""Adaptive thinking (an Anthropic client's ``thinking: {type: adaptive}``, what Claude Code
sends) and structured outputs (``output_config.format``) on every upstream format."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gw.codecs.anthropic_messages.client_request import decode_messages_request
from gw.codecs.gemini.upstream_request import encode_upstream_request as gemini_request
from gw.codecs.openai_chat import encode_upstream_request as openai_request
from gw.ir import ChatRequest, Effort

SCHEMA: Any = {"type": "object", "properties": {"city": {"type": "string"}}}


def from_anthropic(**fields: Any) -> ChatRequest:
    body = {"model": "m", "max_tokens": 8000, "messages": [{"role": "user", "content": "hi"}]}
    return decode_messages_request(json.dumps({**body, **fields}).encode())


def to_openai(request: ChatRequest) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(openai_request(request, model="gpt-x", stream=False))
    return result


def to_gemini(request: ChatRequest) -> dict[str, Any]:
    body, _ = gemini_request(request)
    result: dict[str, Any] = json.loads(body)
    return result


def test_adaptive_thinking_is_openai_s_default_effort() -> None:
    assert to_openai(from_anthropic(thinking={"type": "adaptive"}))["reasoning_effort"] == "medium"


@pytest.mark.parametrize(("effort", "sent"), [("low", "low"), ("high", "high"), ("max", "xhigh")])
def test_adaptive_thinking_takes_the_client_s_effort_to_openai(effort: str, sent: Effort) -> None:
    request = from_anthropic(thinking={"type": "adaptive"}, output_config={"effort": effort})
    assert to_openai(request)["reasoning_effort"] == sent


def test_adaptive_thinking_is_gemini_s_dynamic_thinking() -> None:
    config = to_gemini(from_anthropic(thinking={"type": "adaptive"}))["generationConfig"]
    assert config["thinkingConfig"] == {"thinkingBudget": -1, "includeThoughts": True}


def test_structured_outputs_reach_openai_and_gemini_as_their_own() -> None:
    request = from_anthropic(output_config={"format": {"type": "json_schema", "schema": SCHEMA}})
    assert to_openai(request)["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "response", "schema": SCHEMA},
    }
    config = to_gemini(request)["generationConfig"]
    assert config["responseMimeType"] == "application/json"

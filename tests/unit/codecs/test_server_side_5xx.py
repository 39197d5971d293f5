"""A real HTTP 5xx stays a server-side error in every upstream codec, whatever its body
names (DESIGN.md: 5xx -> upstream_error, 529 -> overloaded); an error sent inside a 200
answer keeps the class its body gives."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from gw.codecs.anthropic_messages import upstream_errors as anthropic
from gw.codecs.gemini import upstream_errors as gemini
from gw.codecs.openai_chat import upstream_errors as openai
from gw.errors import GatewayError

Map = Callable[[int, bytes, dict[str, str]], GatewayError]


def anthropic_body(kind: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": kind, "message": "no"}}).encode()


def openai_body(code: str) -> bytes:
    return json.dumps({"error": {"message": "no", "type": code, "code": code}}).encode()


def gemini_body(status: str) -> bytes:
    return json.dumps({"error": {"code": 400, "message": "no", "status": status}}).encode()


CASES: list[tuple[str, Map, int, bytes, str]] = [
    ("anthropic", anthropic.error_from_upstream, 500, anthropic_body("invalid_request_error"), "upstream_error"),
    ("anthropic", anthropic.error_from_upstream, 503, anthropic_body("authentication_error"), "upstream_error"),
    ("anthropic", anthropic.error_from_upstream, 529, anthropic_body("invalid_request_error"), "overloaded"),
    ("anthropic", anthropic.error_from_upstream, 529, anthropic_body("overloaded_error"), "overloaded"),
    ("anthropic", anthropic.error_from_upstream, 504, anthropic_body("timeout_error"), "upstream_timeout"),
    ("openai", openai.error_from_upstream, 503, openai_body("context_length_exceeded"), "upstream_error"),
    ("openai", openai.error_from_upstream, 500, openai_body("invalid_request_error"), "upstream_error"),
    ("openai", openai.error_from_upstream, 400, openai_body("context_length_exceeded"), "context_length_exceeded"),
    ("gemini", gemini.error_from_upstream, 500, gemini_body("INVALID_ARGUMENT"), "upstream_error"),
    ("gemini", gemini.error_from_upstream, 400, gemini_body("INVALID_ARGUMENT"), "invalid_request"),
]  # fmt: skip


@pytest.mark.parametrize(("codec", "mapping", "status", "body", "code"), CASES)
def test_the_status_decides_for_a_5xx(
    codec: str, mapping: Map, status: int, body: bytes, code: str
) -> None:
    assert mapping(status, body, {}).code == code, codec


def test_an_error_event_inside_a_200_stream_keeps_its_class() -> None:
    payload = {"type": "invalid_request_error", "message": "bad"}
    assert anthropic.error_from_payload(payload).code == "invalid_request"
    assert openai.error_from_payload({"message": "bad", "code": 400}).code == "invalid_request"

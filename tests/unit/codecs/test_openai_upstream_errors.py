"""error_from_upstream: recorded OpenAI error answers, table coverage and retry-after."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gw.codecs.openai_chat import (
    CODE_TABLE,
    STATUS_CLASS_TABLE,
    STATUS_TABLE,
    error_from_upstream,
    parse_retry_after,
)
from gw.errors import ALL_ERRORS, PersistentUpstreamError


def openai_body(message: str, type_: str, code: str | None, param: str | None = None) -> bytes:
    return json.dumps(
        {"error": {"message": message, "type": type_, "param": param, "code": code}}
    ).encode()


# (name, status, body, headers, expected gw code, expected retry_after)
RECORDED: list[tuple[str, int, bytes, dict[str, str], str, float | None]] = [
    (
        "401 invalid_api_key",
        401,
        openai_body(
            "Incorrect API key provided: sk-proj-****************************abcd. You can find "
            "your API key at https://platform.openai.com/account/api-keys.",
            "invalid_request_error",
            "invalid_api_key",
        ),
        {},
        "upstream_auth_failed",
        None,
    ),
    (
        "429 rate_limit_exceeded",
        429,
        openai_body(
            "Rate limit reached for gpt-4o-mini in organization org-abc on requests per min "
            "(RPM): Limit 3, Used 3, Requested 1. Please try again in 20s. Visit "
            "https://platform.openai.com/account/rate-limits to learn more.",
            "requests",
            "rate_limit_exceeded",
        ),
        {"retry-after": "20", "x-ratelimit-remaining-requests": "0"},
        "rate_limited",
        20.0,
    ),
    (
        "429 rate limit with retry-after-ms",
        429,
        openai_body("Rate limit reached for tokens", "tokens", "rate_limit_exceeded"),
        {"Retry-After-Ms": "1500", "Retry-After": "2"},
        "rate_limited",
        1.5,
    ),
    (
        "429 insufficient_quota",
        429,
        openai_body(
            "You exceeded your current quota, please check your plan and billing details.",
            "insufficient_quota",
            "insufficient_quota",
        ),
        {},
        "rate_limited",
        None,
    ),
    (
        "400 context_length_exceeded",
        400,
        openai_body(
            "This model's maximum context length is 128000 tokens. However, your messages "
            "resulted in 130017 tokens. Please reduce the length of the messages.",
            "invalid_request_error",
            "context_length_exceeded",
            "messages",
        ),
        {},
        "context_length_exceeded",
        None,
    ),
    (
        "400 invalid param",
        400,
        openai_body(
            "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, "
            "but got 3 instead.",
            "invalid_request_error",
            "decimal_above_max_value",
            "temperature",
        ),
        {},
        "invalid_request",
        None,
    ),
    (
        "400 content policy",
        400,
        openai_body(
            "Your request was rejected as a result of our safety system.",
            "invalid_request_error",
            "content_policy_violation",
        ),
        {},
        "content_blocked",
        None,
    ),
    (
        "404 model_not_found",
        404,
        openai_body(
            "The model `gpt-5-turbo` does not exist or you do not have access to it.",
            "invalid_request_error",
            "model_not_found",
        ),
        {},
        "upstream_error",
        None,
    ),
    (
        "500 server_error",
        500,
        openai_body(
            "The server had an error while processing your request. Sorry about that!",
            "server_error",
            None,
        ),
        {},
        "upstream_error",
        None,
    ),
    (
        "503 overloaded",
        503,
        openai_body(
            "That model is currently overloaded with other requests. You can retry your "
            "request, or contact us through our help center if the error persists.",
            "server_error",
            None,
        ),
        {"retry-after": "1"},
        "upstream_error",
        1.0,
    ),
    (
        "503 engine_overloaded",
        503,
        openai_body(
            "The engine is currently overloaded, please try again later",
            "engine_overloaded",
            None,
        ),
        {},
        "overloaded",
        None,
    ),
    (
        "529 overloaded",
        529,
        b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
        {},
        "overloaded",
        None,
    ),
    (
        "502 html from a proxy",
        502,
        b"<html><body>Bad gateway</body></html>",
        {},
        "upstream_error",
        None,
    ),
    ("504 empty", 504, b"", {}, "upstream_error", None),
]


@pytest.mark.parametrize(
    ("status", "body", "headers", "code", "retry_after"),
    [row[1:] for row in RECORDED],
    ids=[row[0] for row in RECORDED],
)
def test_recorded_openai_errors(
    status: int, body: bytes, headers: dict[str, str], code: str, retry_after: float | None
) -> None:
    error = error_from_upstream(status, body, headers)
    assert error.code == code
    assert error.upstream_status == status
    assert error.blame == "upstream"
    assert error.retry_after == retry_after
    assert error.message.startswith(f"upstream answered {status}")


def test_message_carries_the_upstream_text_truncated() -> None:
    long = "x" * 500
    error = error_from_upstream(400, openai_body(long, "invalid_request_error", None), {})
    assert error.client_message.startswith("upstream answered 400: xxx")
    assert len(error.client_message) <= len("upstream answered 400: ") + 200
    # The upstream's words may quote the request: they reach the client, never a trace.
    assert error.message == "upstream answered 400"


def test_non_json_body_gives_the_status_only() -> None:
    assert error_from_upstream(500, b"oops secret", {}).message == "upstream answered 500"


def test_auth_error_text_is_never_copied() -> None:
    body = RECORDED[0][2]
    error = error_from_upstream(401, body, {})
    assert "sk-" not in error.client_message
    assert "abcd" not in error.client_message


def test_not_found_says_what_it_means() -> None:
    assert "does not know this model" in error_from_upstream(404, b"", {}).message


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (400, "invalid_request"),
        (401, "upstream_auth_failed"),
        (402, "rate_limited"),
        (403, "upstream_auth_failed"),
        (404, "upstream_error"),
        (408, "upstream_timeout"),
        (409, "upstream_error"),
        (413, "invalid_request"),
        (418, "invalid_request"),
        (422, "invalid_request"),
        (429, "rate_limited"),
        (500, "upstream_error"),
        (501, "upstream_error"),
        (502, "upstream_error"),
        (503, "upstream_error"),
        (504, "upstream_error"),
        (529, "overloaded"),
        (599, "upstream_error"),
        (302, "upstream_error"),
    ],
)
def test_status_table(status: int, code: str) -> None:
    assert error_from_upstream(status, b"", {}).code == code


def test_every_status_class_is_mapped() -> None:
    for status in range(100, 600):
        assert status // 100 in STATUS_CLASS_TABLE, f"status class of {status} is unmapped"
        error = error_from_upstream(status, b"", {})
        assert error.blame == "upstream"
        assert error.upstream_status == status


def test_tables_only_name_known_errors() -> None:
    for cls in [*STATUS_TABLE.values(), *STATUS_CLASS_TABLE.values(), *CODE_TABLE.values()]:
        assert cls in ALL_ERRORS or cls is PersistentUpstreamError


def test_every_body_code_in_the_table_refines_the_status() -> None:
    for code, cls in CODE_TABLE.items():
        error = error_from_upstream(400, openai_body("m", "t", code), {})
        assert type(error) is cls


def test_error_as_string_and_unexpected_shapes() -> None:
    assert error_from_upstream(400, b'{"error": "bad thing"}', {}).client_message == (
        "upstream answered 400: bad thing"
    )
    assert error_from_upstream(400, b'{"error": 5}', {}).message == "upstream answered 400"
    assert error_from_upstream(400, b"[1, 2]", {}).message == "upstream answered 400"


NOW = 1_700_000_000.0


@pytest.mark.parametrize(
    ("headers", "now", "expected"),
    [
        ({}, None, None),
        ({"retry-after": "7"}, None, 7.0),
        ({"Retry-After": "0.5"}, None, 0.5),
        ({"retry-after-ms": "250"}, None, 0.25),
        ({"retry-after-ms": "soon", "retry-after": "3"}, None, 3.0),
        ({"retry-after": "-3"}, None, None),
        ({"retry-after": "nan"}, None, None),
        ({"retry-after": "Tue, 14 Nov 2023 22:13:50 GMT"}, None, None),
        ({"retry-after": "Tue, 14 Nov 2023 22:13:50 GMT"}, NOW, 30.0),
        ({"retry-after": "Tue, 14 Nov 2023 22:00:00 GMT"}, NOW, 0.0),
        ({"retry-after": "not a date"}, NOW, None),
    ],
)
def test_retry_after(headers: dict[str, Any], now: float | None, expected: float | None) -> None:
    assert parse_retry_after(headers, now=now) == expected


def test_error_from_upstream_uses_now_for_dates() -> None:
    headers = {"retry-after": "Tue, 14 Nov 2023 22:13:50 GMT"}
    assert error_from_upstream(429, b"", headers, now=NOW).retry_after == 30.0

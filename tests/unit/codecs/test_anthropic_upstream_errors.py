"""error_from_upstream (Anthropic): recorded error answers, table coverage, retry-after."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import get_args

import pytest
from anthropic.types import ErrorType

from gw.codecs.anthropic_messages.upstream_errors import (
    ERROR_TYPE_TABLE,
    MESSAGE_PREFIX_TABLE,
    STATUS_CLASS_TABLE,
    STATUS_TABLE,
    error_from_payload,
    error_from_upstream,
)
from gw.errors import (
    ALL_ERRORS,
    ContextLengthExceededError,
    GatewayError,
    PersistentUpstreamError,
)

NOW = datetime(2025, 8, 21, 12, 40, 0, tzinfo=UTC).timestamp()


def anthropic_body(error_type: str, message: str) -> bytes:
    return json.dumps(
        {
            "type": "error",
            "error": {"type": error_type, "message": message},
            "request_id": "req_011CSLsW7mFqvHHnzrKdKjAE",
        }
    ).encode()


# (name, status, body, headers, expected gw code, expected retry_after)
RECORDED: list[tuple[str, int, bytes, dict[str, str], str, float | None]] = [
    (
        "400 invalid",
        400,
        anthropic_body("invalid_request_error", "messages: at least one message is required"),
        {},
        "invalid_request",
        None,
    ),
    (
        "400 prompt too long",
        400,
        anthropic_body(
            "invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"
        ),
        {},
        "context_length_exceeded",
        None,
    ),
    (
        "400 input and max_tokens exceed",
        400,
        anthropic_body(
            "invalid_request_error",
            "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease input length or `max_tokens` and try again",
        ),
        {},
        "context_length_exceeded",
        None,
    ),
    (
        "400 spend limit",
        400,
        anthropic_body(
            "invalid_request_error", "You have reached your specified API usage limits."
        ),
        {},
        "invalid_request",
        None,
    ),
    (
        "401",
        401,
        anthropic_body("authentication_error", "invalid x-api-key"),
        {},
        "upstream_auth_failed",
        None,
    ),
    (
        "402",
        402,
        anthropic_body(
            "billing_error", "Your credit balance is too low to access the Anthropic API."
        ),
        {},
        "rate_limited",
        None,
    ),
    (
        "403",
        403,
        anthropic_body(
            "permission_error",
            "Your API key does not have permission to use the specified resource.",
        ),
        {},
        "upstream_auth_failed",
        None,
    ),
    (
        "404",
        404,
        anthropic_body("not_found_error", "model: claude-3-opus-2099"),
        {},
        "upstream_error",
        None,
    ),
    (
        "413 json",
        413,
        anthropic_body("request_too_large", "Request exceeds the maximum allowed number of bytes."),
        {},
        "request_too_large",
        None,
    ),
    (
        "413 cloudflare html",
        413,
        b"<html><body>413 Request Entity Too Large</body></html>",
        {},
        "request_too_large",
        None,
    ),
    (
        "429 retry-after",
        429,
        anthropic_body(
            "rate_limit_error", "This request would exceed the rate limit for your organization."
        ),
        {"retry-after": "17", "anthropic-ratelimit-requests-remaining": "0"},
        "rate_limited",
        17.0,
    ),
    (
        "429 reset headers only",
        429,
        anthropic_body("rate_limit_error", "rate limited"),
        {
            "Anthropic-Ratelimit-Input-Tokens-Remaining": "0",
            "anthropic-ratelimit-input-tokens-reset": "2025-08-21T12:40:30Z",
            "anthropic-ratelimit-output-tokens-remaining": "0",
            "anthropic-ratelimit-output-tokens-reset": "2025-08-21T12:41:00+00:00",
            "anthropic-ratelimit-requests-remaining": "3",
            "anthropic-ratelimit-requests-reset": "2025-08-21T13:00:00Z",
        },
        "rate_limited",
        60.0,
    ),
    (
        "429 spend cap, no headers",
        429,
        anthropic_body("rate_limit_error", "monthly spend cap"),
        {},
        "rate_limited",
        None,
    ),
    ("500", 500, anthropic_body("api_error", "Internal server error"), {}, "upstream_error", None),
    ("502 html", 502, b"<html>Bad gateway</html>", {}, "upstream_error", None),
    ("504", 504, anthropic_body("timeout_error", "Request timeout"), {}, "upstream_timeout", None),
    ("529", 529, anthropic_body("overloaded_error", "Overloaded"), {}, "overloaded", None),
    (
        "529 retry-after",
        529,
        anthropic_body("overloaded_error", "Overloaded"),
        {"retry-after": "4"},
        "overloaded",
        4.0,
    ),
    (
        "418 unknown type",
        418,
        anthropic_body("teapot_error", "short and stout"),
        {},
        "invalid_request",
        None,
    ),
    ("599 not json", 599, b"", {}, "upstream_error", None),
]


@pytest.mark.parametrize(
    ("status", "body", "headers", "code", "retry_after"),
    [case[1:] for case in RECORDED],
    ids=[case[0] for case in RECORDED],
)
def test_recorded_answers(
    status: int, body: bytes, headers: dict[str, str], code: str, retry_after: float | None
) -> None:
    error = error_from_upstream(status, body, headers, now=NOW)
    assert error.code == code
    assert error.blame == "upstream"
    assert error.upstream_status == status
    assert error.retry_after == retry_after
    assert f"upstream answered {status}" in error.message


def test_every_documented_error_type_is_mapped() -> None:
    # anthropic.types.ErrorType lists the error.type values of the API (the SDK in .venv),
    # plus 413's, which Cloudflare sends.
    documented = set(get_args(ErrorType)) | {"request_too_large"}
    assert documented <= set(ERROR_TYPE_TABLE)


def test_every_table_entry_is_a_gw_error() -> None:
    classes = [*ERROR_TYPE_TABLE.values(), *STATUS_TABLE.values(), *STATUS_CLASS_TABLE.values()]
    classes += [cls for _, _, cls in MESSAGE_PREFIX_TABLE]
    assert set(classes) <= {*ALL_ERRORS, PersistentUpstreamError}
    assert set(STATUS_CLASS_TABLE) == {1, 2, 3, 4, 5}


@pytest.mark.parametrize("status", range(100, 600))
def test_every_status_maps_without_a_body(status: int) -> None:
    assert isinstance(error_from_upstream(status, b"", {}), GatewayError)


def test_prefixes_match_at_the_start_only_and_ignore_case() -> None:
    quoted = anthropic_body(
        "invalid_request_error", "messages.0: 'prompt is too long' is not a tool"
    )
    assert error_from_upstream(400, quoted, {}).code == "invalid_request"
    shouted = anthropic_body("invalid_request_error", "  Prompt is too long: 5 tokens > 4 maximum")
    assert type(error_from_upstream(400, shouted, {})) is ContextLengthExceededError
    other_type = anthropic_body("api_error", "prompt is too long")
    assert error_from_upstream(500, other_type, {}).code == "upstream_error"


def test_upstream_text_is_kept_apart_and_shortened() -> None:
    error = error_from_upstream(
        400, anthropic_body("invalid_request_error", "bad\n  field " + "x" * 500), {}
    )
    assert error.upstream_message is not None
    assert error.upstream_message.startswith("bad field x")
    assert len(error.upstream_message) == 200
    assert "bad" not in error.message


def test_auth_error_text_is_never_copied() -> None:
    error = error_from_upstream(
        401, anthropic_body("authentication_error", "key sk-ant-api03-abc is revoked"), {}
    )
    assert error.upstream_message is None
    assert "sk-ant" not in str(error)


def test_reset_headers_need_now_and_a_spent_limit() -> None:
    headers = {
        "anthropic-ratelimit-tokens-remaining": "0",
        "anthropic-ratelimit-tokens-reset": "2025-08-21T12:40:10Z",
    }
    body = anthropic_body("rate_limit_error", "limited")
    assert error_from_upstream(429, body, headers).retry_after is None
    assert error_from_upstream(429, body, headers, now=NOW).retry_after == 10.0
    past = {**headers, "anthropic-ratelimit-tokens-reset": "2025-08-21T12:00:00Z"}
    assert error_from_upstream(429, body, past, now=NOW).retry_after == 0.0
    unreadable = {**headers, "anthropic-ratelimit-tokens-reset": "soon"}
    assert error_from_upstream(429, body, unreadable, now=NOW).retry_after is None
    naive = {**headers, "anthropic-ratelimit-tokens-reset": "2025-08-21T12:40:10"}
    assert error_from_upstream(429, body, naive, now=NOW).retry_after is None


def test_retry_after_ms_wins() -> None:
    headers = {"retry-after-ms": "250", "retry-after": "3"}
    assert error_from_upstream(529, b"", headers).retry_after == 0.25


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ({"type": "overloaded_error", "message": "Overloaded"}, "overloaded"),
        ({"type": "rate_limit_error", "message": "slow down"}, "rate_limited"),
        (
            {"type": "invalid_request_error", "message": "prompt is too long: 9 > 8"},
            "context_length_exceeded",
        ),
        ({"type": "api_error", "message": "Internal server error"}, "upstream_error"),
        ({"message": "no type"}, "upstream_error"),
        ("just text", "upstream_error"),
        (None, "upstream_error"),
    ],
)
def test_stream_error_payloads(payload: object, code: str) -> None:
    error = error_from_payload(payload)
    assert error.code == code
    assert error.upstream_status == 200
    assert error.blame == "upstream"

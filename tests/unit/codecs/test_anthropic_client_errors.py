"""Anthropic client errors: the documented error shape, a type for every gw error code."""

from __future__ import annotations

import json

import anthropic
import httpx2
import pytest

from gw.codecs.anthropic_messages.client_errors import (
    ERROR_TYPES,
    encode_error,
    encode_stream_error,
)
from gw.errors import (
    ERRORS_BY_CODE,
    GatewayError,
    InvalidRequestError,
    OverloadedError,
    RateLimitedError,
    UpstreamError,
)

# The error types Anthropic documents (platform.claude.com/docs/en/api/errors).
DOCUMENTED_TYPES = {
    "invalid_request_error",
    "authentication_error",
    "billing_error",
    "permission_error",
    "not_found_error",
    "request_too_large",
    "rate_limit_error",
    "api_error",
    "timeout_error",
    "overloaded_error",
}


def test_every_gw_error_code_has_an_anthropic_type() -> None:
    assert set(ERRORS_BY_CODE) <= set(ERROR_TYPES)


def test_every_type_is_a_documented_one() -> None:
    assert set(ERROR_TYPES.values()) <= DOCUMENTED_TYPES


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("invalid_request", "invalid_request_error"),
        ("native_feature_unsupported", "invalid_request_error"),
        ("authentication_failed", "authentication_error"),
        ("budget_exceeded", "billing_error"),
        ("permission_denied", "permission_error"),
        ("model_not_found", "not_found_error"),
        ("request_too_large", "request_too_large"),
        ("rate_limited", "rate_limit_error"),
        ("internal_error", "api_error"),
        ("upstream_timeout", "timeout_error"),
        ("overloaded", "overloaded_error"),
    ],
)
def test_types_follow_the_documented_statuses(code: str, expected: str) -> None:
    assert ERROR_TYPES[code] == expected


@pytest.mark.parametrize("cls", list(ERRORS_BY_CODE.values()), ids=lambda cls: cls.code)
def test_error_body_shape(cls: type[GatewayError]) -> None:
    raw = encode_error(cls("went wrong"), gw_block={"code": cls.code, "request_id": "r1"})
    assert json.loads(raw) == {
        "type": "error",
        "error": {"type": ERROR_TYPES[cls.code], "message": "went wrong"},
        "gw": {"code": cls.code, "request_id": "r1"},
    }


def test_message_is_the_client_message() -> None:
    error = UpstreamError("upstream failed", upstream_message="model is busy")
    body = json.loads(encode_error(error, gw_block={}))
    assert body["error"]["message"] == "upstream failed: model is busy"


def test_unknown_code_falls_back_by_status() -> None:
    class TeapotError(GatewayError):
        code = "teapot"
        status = 418

    class MeltdownError(GatewayError):
        code = "meltdown"
        status = 507

    assert json.loads(encode_error(TeapotError("x"), gw_block={}))["error"]["type"] == (
        "invalid_request_error"
    )
    assert json.loads(encode_error(MeltdownError("x"), gw_block={}))["error"]["type"] == (
        "api_error"
    )


def test_retry_after_is_not_part_of_the_body() -> None:
    raw = encode_error(RateLimitedError("slow down", retry_after=3), gw_block={})
    assert "retry" not in raw.decode()


def test_stream_error_frame() -> None:
    frame = encode_stream_error(code="overloaded", status=503, message="busy")
    head, data = frame.removesuffix(b"\n\n").split(b"\n")
    assert head == b"event: error"
    assert json.loads(data.removeprefix(b"data: ")) == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "busy"},
        "gw": {"code": "overloaded"},
    }


@pytest.mark.parametrize(
    ("error", "status", "sdk_error"),
    [
        (InvalidRequestError("bad `model`", param="model"), 400, anthropic.BadRequestError),
        (OverloadedError("busy"), 503, anthropic.InternalServerError),
    ],
)
def test_sdk_raises_with_type_and_gw_block(
    error: GatewayError, status: int, sdk_error: type[anthropic.APIStatusError]
) -> None:
    raw = encode_error(error, gw_block={"code": error.code})

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(status, content=raw, headers={"content-type": "application/json"})

    client = anthropic.Anthropic(
        api_key="x",
        base_url="http://gw.test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    with pytest.raises(sdk_error) as caught:
        client.messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}]
        )
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["error"]["type"] == ERROR_TYPES[error.code]
    assert caught.value.body["gw"] == {"code": error.code}

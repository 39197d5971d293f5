"""Gemini client errors: Google's shape for every gw error code, read by google-genai."""

from __future__ import annotations

import json

import pytest
from google.genai import errors
from unit.codecs.gemini_sdk import answer

from gw.codecs.gemini.client_errors import STATUSES, encode_error, encode_stream_error
from gw.errors import (
    ERRORS_BY_CODE,
    GatewayError,
    InvalidRequestError,
    ModelNotFoundError,
    RateLimitedError,
    UpstreamError,
)

# google.rpc.Code names (googleapis/google/rpc/code.proto).
RPC_CODES = {
    "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
    "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
    "UNAUTHENTICATED",
}  # fmt: skip


def test_every_gw_error_code_has_a_status() -> None:
    assert set(ERRORS_BY_CODE) <= set(STATUSES)
    assert set(STATUSES.values()) <= RPC_CODES


def test_the_body_is_googles_with_the_gw_block_beside_it() -> None:
    error = InvalidRequestError(
        "`generationConfig.topK` must be an integer", param="generationConfig.topK"
    )
    body = json.loads(encode_error(error, gw_block={"code": error.code, "request_id": "req_1"}))
    assert list(body) == ["error", "gw"]
    assert body["error"]["code"] == 400
    assert body["error"]["status"] == "INVALID_ARGUMENT"
    assert body["error"]["message"] == error.message
    assert body["error"]["details"] == [
        {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "INVALID_REQUEST",
            "domain": "gw",
        },
        {
            "@type": "type.googleapis.com/google.rpc.BadRequest",
            "fieldViolations": [{"field": "generationConfig.topK", "description": error.message}],
        },
    ]
    assert body["gw"]["request_id"] == "req_1"


def test_a_retry_delay_goes_in_retry_info() -> None:
    body = json.loads(encode_error(RateLimitedError("slow down", retry_after=2.4), gw_block={}))
    assert body["error"]["status"] == "RESOURCE_EXHAUSTED"
    assert {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2s"} in body[
        "error"
    ]["details"]


@pytest.mark.parametrize(
    ("error", "raised", "status"),
    [
        (ModelNotFoundError("no such model"), errors.ClientError, "NOT_FOUND"),
        (UpstreamError("upstream failed"), errors.ServerError, "UNAVAILABLE"),
    ],
)
def test_the_sdk_raises_by_status(
    error: GatewayError, raised: type[Exception], status: str
) -> None:
    sdk = answer(encode_error(error, gw_block={"code": error.code}), status=error.status)
    with pytest.raises(raised) as caught:
        sdk.client.models.generate_content(model="m", contents="hi")
    assert isinstance(caught.value, errors.APIError)
    assert (caught.value.code, caught.value.status) == (error.status, status)
    assert caught.value.message == error.message


def test_a_stream_error_starts_as_the_sdks_check_expects() -> None:
    body = encode_stream_error(code="internal_error", status=500, message="boom")
    assert body.startswith(b'{"error":')
    assert json.loads(body)["gw"] == {"code": "internal_error"}

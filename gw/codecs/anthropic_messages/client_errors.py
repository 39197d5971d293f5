"""gw errors in Anthropic's error shape, for clients of ``POST /v1/messages``.

Anthropic's body is ``{"type": "error", "error": {"type", "message"}}``; it has no slot for a
code or a field path, so gw's stable code travels in the ``gw`` block beside it (DESIGN.md),
and the field path is already part of the message. The Anthropic SDK picks its exception
class by HTTP status, so ``error.type`` is for people and logs; it still follows the
documented list (platform.claude.com/docs/en/api/errors): 400 invalid_request_error (also
"other 4XX"), 401 authentication_error, 402 billing_error, 403 permission_error,
404 not_found_error, 413 request_too_large, 429 rate_limit_error, 500 api_error,
504 timeout_error, 529 overloaded_error.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from gw.errors import GatewayError

# gw code -> Anthropic ``error.type``. One row per code in gw.errors.ERRORS_BY_CODE (a test
# checks); a code missing here falls back by HTTP status class.
ERROR_TYPES: dict[str, str] = {
    "invalid_request": "invalid_request_error",
    "context_length_exceeded": "invalid_request_error",
    "content_blocked": "invalid_request_error",
    "native_feature_unsupported": "invalid_request_error",
    "authentication_failed": "authentication_error",
    "budget_exceeded": "billing_error",
    "permission_denied": "permission_error",
    "model_not_found": "not_found_error",
    "endpoint_not_found": "not_found_error",
    "response_not_found": "not_found_error",
    "method_not_allowed": "invalid_request_error",
    # 408 is the client being slow to send; Anthropic's timeout_error is its own 504.
    "request_timeout": "invalid_request_error",
    "idempotency_key_in_use": "invalid_request_error",
    "idempotency_key_reused": "invalid_request_error",
    "request_too_large": "request_too_large",
    "rate_limited": "rate_limit_error",
    "concurrency_limited": "rate_limit_error",
    "client_aborted": "invalid_request_error",
    "internal_error": "api_error",
    "no_route": "api_error",
    "overloaded": "overloaded_error",
    "upstream_error": "api_error",
    "upstream_auth_failed": "api_error",
    "upstream_timeout": "timeout_error",
}


class ErrorObject(msgspec.Struct):
    type: str
    message: str


class _ErrorEnvelope(msgspec.Struct, kw_only=True):
    type: Literal["error"] = "error"
    error: ErrorObject
    gw: dict[str, object]


_ENCODER = msgspec.json.Encoder()


def error_type(code: str, status: int) -> str:
    """The Anthropic ``error.type`` for a gw error code."""
    found = ERROR_TYPES.get(code)
    if found is not None:
        return found
    return "api_error" if status >= 500 else "invalid_request_error"


def encode_error(error: GatewayError, *, gw_block: dict[str, object]) -> bytes:
    """``{"type": "error", "error": {"type", "message"}, "gw": gw_block}`` as JSON bytes.

    The message is ``error.client_message``; the caller puts ``"code"`` into ``gw_block``.
    """
    body = ErrorObject(type=error_type(error.code, error.status), message=error.client_message)
    return _ENCODER.encode(_ErrorEnvelope(error=body, gw=gw_block))


def encode_stream_error(*, code: str, status: int, message: str) -> bytes:
    """The ``event: error`` frame that ends a committed stream.

    The same envelope as a JSON error, with ``gw`` holding only the code: the request id and
    route already went out in the response headers.
    """
    body = ErrorObject(type=error_type(code, status), message=message)
    data = _ENCODER.encode(_ErrorEnvelope(error=body, gw={"code": code}))
    return b"event: error\ndata: " + data + b"\n\n"

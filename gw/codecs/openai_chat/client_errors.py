"""gw errors in OpenAI's error shape, for clients of the OpenAI routes."""

from __future__ import annotations

import msgspec

from gw.errors import GatewayError

# gw code -> OpenAI ``error.type``. One row per code in gw.errors.ALL_ERRORS (a test checks);
# a code missing here falls back by HTTP status class.
ERROR_TYPES: dict[str, str] = {
    "invalid_request": "invalid_request_error",
    "context_length_exceeded": "invalid_request_error",
    "content_blocked": "invalid_request_error",
    "native_feature_unsupported": "invalid_request_error",
    "authentication_failed": "authentication_error",
    "budget_exceeded": "insufficient_quota",
    "permission_denied": "permission_error",
    "model_not_found": "not_found_error",
    "endpoint_not_found": "not_found_error",
    "response_not_found": "not_found_error",
    "method_not_allowed": "invalid_request_error",
    "request_timeout": "invalid_request_error",
    "idempotency_key_in_use": "invalid_request_error",
    "idempotency_key_reused": "invalid_request_error",
    "request_too_large": "invalid_request_error",
    "rate_limited": "rate_limit_error",
    "concurrency_limited": "rate_limit_error",
    "client_aborted": "invalid_request_error",
    "internal_error": "server_error",
    "no_route": "server_error",
    "overloaded": "server_error",
    "upstream_error": "server_error",
    "upstream_auth_failed": "server_error",
    "upstream_timeout": "server_error",
}


class ErrorBody(msgspec.Struct):
    """OpenAI's ``error`` object; all four keys are always present."""

    message: str
    type: str
    code: str
    param: str | None = None


class _ErrorEnvelope(msgspec.Struct):
    error: ErrorBody
    gw: dict[str, object]


_ENCODER = msgspec.json.Encoder()


def error_type(code: str, status: int) -> str:
    """The OpenAI ``error.type`` for a gw error code."""
    found = ERROR_TYPES.get(code)
    if found is not None:
        return found
    return "server_error" if status >= 500 else "invalid_request_error"


def error_body(error: GatewayError) -> ErrorBody:
    return ErrorBody(
        message=error.client_message,
        type=error_type(error.code, error.status),
        code=error.code,
        param=error.param,
    )


def encode_error(error: GatewayError, *, gw_block: dict[str, object]) -> bytes:
    """``{"error": {"message", "type", "code", "param"}, "gw": gw_block}`` as JSON bytes."""
    return _ENCODER.encode(_ErrorEnvelope(error=error_body(error), gw=gw_block))

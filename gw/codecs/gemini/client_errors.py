"""gw errors in Google's error shape, for clients of the Gemini API routes (``/v1beta``).

Google's body is ``{"error": {"code": <HTTP status>, "message", "status": <google.rpc
code name>, "details": [...]}}``; gw's ``gw`` block goes beside it (DESIGN.md), and gw's
stable code is also in the details, as a ``google.rpc.ErrorInfo`` reason in upper case
(``MODEL_NOT_FOUND``, domain ``gw``). A field path goes in a ``google.rpc.BadRequest``
field violation, a retry delay in a ``google.rpc.RetryInfo`` (which Gemini CLI reads to
time its retry). The SDKs pick their exception class by HTTP status; ``status`` follows
google.rpc's table of codes to HTTP statuses (400 INVALID_ARGUMENT, 401 UNAUTHENTICATED,
403 PERMISSION_DENIED, 404 NOT_FOUND, 429 RESOURCE_EXHAUSTED, 499 CANCELLED, 500 INTERNAL,
503 UNAVAILABLE, 504 DEADLINE_EXCEEDED).

A committed stream that fails ends with one ``data: {"error": {...}}`` frame: google-genai
raises on a chunk whose JSON starts with ``{"error":``, so ``error`` is the first key.
"""

from __future__ import annotations

from typing import Any

import msgspec

from gw.errors import GatewayError

# gw code -> google.rpc status name. One row per code in gw.errors.ERRORS_BY_CODE (a test
# checks); a code missing here falls back by HTTP status (``status_name``).
STATUSES: dict[str, str] = {
    "invalid_request": "INVALID_ARGUMENT",
    "context_length_exceeded": "INVALID_ARGUMENT",
    "content_blocked": "INVALID_ARGUMENT",
    "native_feature_unsupported": "INVALID_ARGUMENT",
    "authentication_failed": "UNAUTHENTICATED",
    "budget_exceeded": "RESOURCE_EXHAUSTED",
    "permission_denied": "PERMISSION_DENIED",
    "model_not_found": "NOT_FOUND",
    "endpoint_not_found": "NOT_FOUND",
    "response_not_found": "NOT_FOUND",
    "method_not_allowed": "INVALID_ARGUMENT",
    "request_timeout": "DEADLINE_EXCEEDED",
    "idempotency_key_in_use": "ABORTED",
    "idempotency_key_reused": "INVALID_ARGUMENT",
    "request_too_large": "INVALID_ARGUMENT",
    "rate_limited": "RESOURCE_EXHAUSTED",
    "concurrency_limited": "RESOURCE_EXHAUSTED",
    "client_aborted": "CANCELLED",
    "internal_error": "INTERNAL",
    "no_route": "UNAVAILABLE",
    "overloaded": "UNAVAILABLE",
    "upstream_error": "UNAVAILABLE",
    "upstream_auth_failed": "INTERNAL",
    "upstream_timeout": "DEADLINE_EXCEEDED",
}
_BY_HTTP_STATUS: dict[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    412: "FAILED_PRECONDITION",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_TYPE = "type.googleapis.com/google.rpc."
_ENCODER = msgspec.json.Encoder()


class ErrorObject(msgspec.Struct):
    code: int
    message: str
    status: str
    details: list[dict[str, Any]]


class _ErrorEnvelope(msgspec.Struct):
    error: ErrorObject  # first: the SDKs recognise an error chunk by its opening key
    gw: dict[str, object]


def status_name(code: str, status: int) -> str:
    """The google.rpc status name for a gw error code answered with HTTP ``status``."""
    found = STATUSES.get(code)
    if found is not None:
        return found
    return _BY_HTTP_STATUS.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")


def error_object(
    *,
    code: str,
    status: int,
    message: str,
    param: str | None = None,
    retry_after: float | None = None,
) -> ErrorObject:
    """Google's ``error`` object for a gw error (see the module docstring for details)."""
    details: list[dict[str, Any]] = [
        {"@type": _TYPE + "ErrorInfo", "reason": code.upper(), "domain": "gw"}
    ]
    if param is not None:
        violation = {"field": param, "description": message}
        details.append({"@type": _TYPE + "BadRequest", "fieldViolations": [violation]})
    if retry_after is not None and status in (429, 503):
        details.append(
            {"@type": _TYPE + "RetryInfo", "retryDelay": f"{max(1, round(retry_after))}s"}
        )
    return ErrorObject(
        code=status, message=message, status=status_name(code, status), details=details
    )


def encode_error(error: GatewayError, *, gw_block: dict[str, object]) -> bytes:
    """``{"error": {...}, "gw": gw_block}`` as JSON bytes; the message is
    ``error.client_message``, and the caller puts ``"code"`` into ``gw_block``."""
    body = error_object(
        code=error.code,
        status=error.status,
        message=error.client_message,
        param=error.param,
        retry_after=error.retry_after,
    )
    return _ENCODER.encode(_ErrorEnvelope(body, gw_block))


def encode_stream_error(*, code: str, status: int, message: str) -> bytes:
    """The error object that ends a committed stream, as JSON (the caller frames it).

    The ``gw`` block holds only the code: the request id and route already went out in
    the response headers.
    """
    body = error_object(code=code, status=status, message=message)
    return _ENCODER.encode(_ErrorEnvelope(body, {"code": code}))

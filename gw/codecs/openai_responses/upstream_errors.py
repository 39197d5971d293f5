"""A Responses upstream's error answer -> the gw error it means, by table.

HTTP error bodies are OpenAI's (``{"error": {"message", "type", "param", "code"}}``), read
with the Chat Completions tables (gw/codecs/openai_chat/upstream_errors.py) plus the codes
only Responses sends (``RESPONSE_CODE_TABLE``). A failure inside a 200 stream comes two
ways: a ``response.failed`` event, whose ``response.error`` is ``{code, message}``, and an
``error`` event, documented flat (``{"type": "error", "code", "message", "param"}``) and
also seen nested (``{"type": "error", "error": {"type", "code", "message"}}``): both are
read. Such an error has no HTTP status of its own, so one whose code is not in the tables
is an ``UpstreamError`` (retryable, falls back), as a 500 would be.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from gw.codecs.openai_chat.upstream_errors import (
    CODE_TABLE,
    ErrorDetail,
    build_error,
    error_detail,
)
from gw.codecs.upstream_failure import parse_retry_after
from gw.errors import (
    ContentBlockedError,
    GatewayError,
    InvalidRequestError,
    RateLimitedError,
    UpstreamError,
    UpstreamTimeoutError,
)

# ResponseError.code values (openai.types.responses.ResponseError) and the stream error
# codes seen from the Responses API -> class; they win over the status tables.
RESPONSE_CODE_TABLE: dict[str, type[GatewayError]] = {
    "server_error": UpstreamError,
    "too_many_requests": RateLimitedError,
    "invalid_prompt": InvalidRequestError,
    "bio_policy": ContentBlockedError,
    "misalignment_policy_violation": ContentBlockedError,
    "image_content_policy_violation": ContentBlockedError,
    "vector_store_timeout": UpstreamTimeoutError,
    # The account's project is pinned to another region: another target may serve it.
    "data_residency_mismatch": UpstreamError,
    "invalid_image": InvalidRequestError,
    "invalid_image_format": InvalidRequestError,
    "invalid_base64_image": InvalidRequestError,
    "invalid_image_url": InvalidRequestError,
    "image_too_large": InvalidRequestError,
    "image_too_small": InvalidRequestError,
    "image_parse_error": InvalidRequestError,
    "invalid_image_mode": InvalidRequestError,
    "image_file_too_large": InvalidRequestError,
    "unsupported_image_media_type": InvalidRequestError,
    "empty_image_file": InvalidRequestError,
    "failed_to_download_image": InvalidRequestError,
    "image_file_not_found": InvalidRequestError,
}
CODES: dict[str, type[GatewayError]] = {**CODE_TABLE, **RESPONSE_CODE_TABLE}


class _StreamError(msgspec.Struct):
    """An ``error`` event: flat fields, or an ``error`` object (both seen on the wire)."""

    code: str | int | None = None
    message: str | None = None
    type: str | None = None
    error: ErrorDetail | None = None


_STREAM_ERROR = msgspec.json.Decoder(_StreamError)


def error_from_upstream(
    status: int, body: bytes, headers: Mapping[str, str], *, now: float | None = None
) -> GatewayError:
    """Map an HTTP error answer; ``now`` (epoch seconds) enables HTTP-date retry-after."""
    return build_error(
        status,
        error_detail(body),
        lead=f"upstream answered {status}",
        upstream_status=status,
        retry_after=parse_retry_after(headers, now=now),
        codes=CODES,
    )


def error_from_response_error(error: object) -> GatewayError:
    """Map a failed response's ``error`` (``{code, message}``, from ``response.failed``
    or a non-streamed body with ``status: failed``)."""
    try:
        detail = msgspec.convert(error, ErrorDetail) if error is not None else None
    except msgspec.ValidationError:
        detail = None
    return build_error(
        500, detail, lead="upstream's response failed", upstream_status=200, codes=CODES
    )


def error_from_stream_event(data: bytes | str) -> GatewayError:
    """Map the data of an ``error`` stream event, flat or nested."""
    try:
        event = _STREAM_ERROR.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        event = _StreamError()
    detail = event.error or ErrorDetail(message=event.message, code=event.code)
    return build_error(
        500, detail, lead="upstream sent an error event", upstream_status=200, codes=CODES
    )

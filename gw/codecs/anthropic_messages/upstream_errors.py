"""An Anthropic error answer (``{"type": "error", "error": {"type", "message"}}``) -> gw error.

Anthropic documents one ``error.type`` per HTTP status (platform.claude.com/docs/en/api/errors),
so the body's type picks the class first and the status is the fallback for bodies that are
not Anthropic's (a proxy's HTML page, Cloudflare's 413). Every error built here has
``blame="upstream"`` and ``upstream_status``.

Choices where the docs leave room:

- ``not_found_error`` (404) -> ``UpstreamError``: the client named a gw route or target, so an
  upstream that does not know the model is gateway configuration; it falls back.
- ``billing_error`` (402) -> ``RateLimitedError``, like OpenAI's ``insufficient_quota``: the
  account is spent, another target should serve.
- A real HTTP 5xx whose body names a client-side type (``invalid_request_error``) stays a
  server-side error by its status (``kept_server_side``): it is retried and falls back.
- A context overflow is an ``invalid_request_error`` whose only mark is the start of its
  message (Anthropic has no structured code for it), so ``MESSAGE_PREFIX_TABLE`` matches
  documented message prefixes, case-insensitively, at the start only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime

import msgspec

from gw.codecs.upstream_failure import kept_server_side, parse_retry_after, upstream_failure
from gw.errors import (
    ContextLengthExceededError,
    GatewayError,
    InvalidRequestError,
    OverloadedError,
    PersistentUpstreamError,
    RateLimitedError,
    RequestTooLargeError,
    UpstreamAuthFailedError,
    UpstreamError,
    UpstreamTimeoutError,
)

# error.type in the body -> class; wins over the status tables.
ERROR_TYPE_TABLE: dict[str, type[GatewayError]] = {
    "invalid_request_error": InvalidRequestError,
    "authentication_error": UpstreamAuthFailedError,
    "billing_error": RateLimitedError,
    "permission_error": UpstreamAuthFailedError,
    "not_found_error": PersistentUpstreamError,  # would repeat: fall back, do not retry
    "request_too_large": RequestTooLargeError,
    "rate_limit_error": RateLimitedError,
    "api_error": UpstreamError,
    "timeout_error": UpstreamTimeoutError,
    "overloaded_error": OverloadedError,
    # Resource conflicts of other endpoints; the memory ones are the request's own state.
    "conflict_error": UpstreamError,
    "memory_precondition_failed_error": InvalidRequestError,
    "memory_path_conflict_error": InvalidRequestError,
}

# HTTP status -> class, for bodies without a known error.type.
STATUS_TABLE: dict[int, type[GatewayError]] = {
    400: InvalidRequestError,
    401: UpstreamAuthFailedError,
    402: RateLimitedError,
    403: UpstreamAuthFailedError,
    404: PersistentUpstreamError,
    405: PersistentUpstreamError,
    410: PersistentUpstreamError,
    408: UpstreamTimeoutError,
    409: UpstreamError,
    413: RequestTooLargeError,
    429: RateLimitedError,
    500: UpstreamError,
    501: PersistentUpstreamError,
    502: UpstreamError,
    503: UpstreamError,
    504: UpstreamTimeoutError,
    529: OverloadedError,
}

# First digit of the status -> class, for statuses not listed above. Anthropic: "we may
# also use invalid_request_error for other 4XX status codes".
STATUS_CLASS_TABLE: dict[int, type[GatewayError]] = {
    1: UpstreamError,
    2: UpstreamError,
    3: UpstreamError,
    4: InvalidRequestError,
    5: UpstreamError,
}

# (error.type, lower-case message prefix) -> class, refining ERROR_TYPE_TABLE.
MESSAGE_PREFIX_TABLE: tuple[tuple[str, str, type[GatewayError]], ...] = (
    # "prompt is too long: 208310 tokens > 200000 maximum"
    ("invalid_request_error", "prompt is too long", ContextLengthExceededError),
    # "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, ..."
    ("invalid_request_error", "input length and `max_tokens` exceed", ContextLengthExceededError),
)

# Rate-limit families whose ``-reset`` (RFC 3339) tells when a spent limit refills.
RATE_LIMIT_FAMILIES = ("requests", "tokens", "input-tokens", "output-tokens")

_STATUS_HINTS: dict[int, str] = {404: "the upstream does not know this model or endpoint"}


class ErrorDetail(msgspec.Struct):
    """The ``error`` object of an Anthropic error body; every field optional."""

    type: str | None = None
    message: str | None = None


class _ErrorEnvelope(msgspec.Struct):
    error: ErrorDetail | None = None


_ENVELOPE = msgspec.json.Decoder(_ErrorEnvelope)


def error_from_upstream(
    status: int, body: bytes, headers: Mapping[str, str], *, now: float | None = None
) -> GatewayError:
    """Map an error answer. ``retry_after`` comes from ``retry-after-ms`` / ``retry-after``,
    else (given ``now``, epoch seconds) from the latest ``anthropic-ratelimit-*-reset`` of a
    limit whose ``-remaining`` is 0.
    """
    retry_after = parse_retry_after(headers, now=now)
    if retry_after is None and now is not None:
        retry_after = _rate_limit_reset(headers, now)
    return _build(
        status,
        _detail(body),
        lead=f"upstream answered {status}",
        upstream_status=status,
        retry_after=retry_after,
    )


def error_from_payload(payload: object) -> GatewayError:
    """Map the ``error`` object of an ``event: error`` sent inside a 200 stream."""
    try:
        detail: ErrorDetail | None = msgspec.convert(payload, ErrorDetail)
    except msgspec.ValidationError:
        detail = None
    return _build(500, detail, lead="upstream sent an error", upstream_status=200)


def error_class(status: int, detail: ErrorDetail | None) -> type[GatewayError]:
    """The class for a status and error object, by the tables above."""
    cls = STATUS_TABLE.get(status) or STATUS_CLASS_TABLE.get(status // 100, UpstreamError)
    if detail is None or detail.type is None:
        return cls
    cls = ERROR_TYPE_TABLE.get(detail.type, cls)
    message = (detail.message or "").lstrip().lower()
    for error_type, prefix, refined in MESSAGE_PREFIX_TABLE:
        if detail.type == error_type and message.startswith(prefix):
            return refined
    return cls


def _build(
    status: int,
    detail: ErrorDetail | None,
    *,
    lead: str,
    upstream_status: int,
    retry_after: float | None = None,
) -> GatewayError:
    by_status = STATUS_TABLE.get(status) or STATUS_CLASS_TABLE.get(status // 100, UpstreamError)
    cls = kept_server_side(upstream_status, error_class(status, detail), by_status)
    return upstream_failure(
        cls,
        lead,
        hint=_STATUS_HINTS.get(status),
        upstream_text=detail.message if detail is not None else None,
        upstream_status=upstream_status,
        retry_after=retry_after,
    )


def _detail(body: bytes) -> ErrorDetail | None:
    try:
        return _ENVELOPE.decode(body).error
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def _rate_limit_reset(headers: Mapping[str, str], now: float) -> float | None:
    lowered = {name.lower(): value for name, value in headers.items()}
    waits: list[float] = []
    for family in RATE_LIMIT_FAMILIES:
        prefix = f"anthropic-ratelimit-{family}"
        if lowered.get(f"{prefix}-remaining", "").strip() != "0":
            continue
        reset = _timestamp(lowered.get(f"{prefix}-reset"))
        if reset is not None:
            waits.append(max(0.0, reset - now))
    return max(waits) if waits else None


def _timestamp(value: str | None) -> float | None:
    """Epoch seconds of an RFC 3339 time (``2025-08-21T12:40:59Z``); None when unreadable."""
    if not value:
        return None
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if when.tzinfo is None:  # RFC 3339 always has an offset; treat a bare time as unreadable
        return None
    stamp = when.timestamp()
    return stamp if math.isfinite(stamp) else None

"""A Gemini error answer -> the gw error it means, by tables.

Google's error body is ``{"error": {"code", "message", "status", "details": [...]}}``
(``status`` a google.rpc code name, ``details`` typed objects such as ``ErrorInfo`` and
``RetryInfo``). The class is picked by the most specific table that knows the answer:

1. ``REASON_TABLE``: ``ErrorInfo.reason`` (an invalid API key is a 400 INVALID_ARGUMENT
   whose reason alone says it is a credential problem);
2. ``MESSAGE_TABLE``: the one case Google marks only in words: the input token limit
   (400 INVALID_ARGUMENT, "The input token count (N) exceeds the maximum number of tokens
   allowed (M)."). It is an anchored pattern on Google's fixed sentence, not a search;
3. ``GOOGLE_STATUS_TABLE``: ``error.status``;
4. ``STATUS_TABLE``: the HTTP status, then its class (4xx / 5xx).

Choices where the docs leave room:

- FAILED_PRECONDITION (free tier not offered in the caller's region, billing not enabled)
  is ``upstream_auth_failed``: the account cannot serve any request, so another target
  should; the request itself is fine.
- NOT_FOUND (an unknown model, mostly) is ``upstream_error``: the target's model name is
  gateway configuration, so the engine may fall back, as for OpenAI's 404.
- UNAVAILABLE (503, "The model is overloaded") is ``overloaded``; DEADLINE_EXCEEDED (504)
  is ``upstream_timeout``; INTERNAL (500) is ``upstream_error``.
- ``retry_after``: the ``retry-after`` header when sent, else ``RetryInfo.retryDelay``
  ("2s", "0.5s") from ``details``, which Gemini's 429 answers carry.

Every error has ``blame="upstream"`` and ``upstream_status``; an auth error's text is never
copied (it may quote the key).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import msgspec

from gw.codecs.upstream_failure import kept_server_side, parse_retry_after, upstream_failure
from gw.errors import (
    ContextLengthExceededError,
    GatewayError,
    InvalidRequestError,
    OverloadedError,
    PersistentUpstreamError,
    RateLimitedError,
    UpstreamAuthFailedError,
    UpstreamError,
    UpstreamTimeoutError,
)

STATUS_TABLE: dict[int, type[GatewayError]] = {
    400: InvalidRequestError,
    401: UpstreamAuthFailedError,
    403: UpstreamAuthFailedError,
    404: PersistentUpstreamError,
    405: PersistentUpstreamError,
    410: PersistentUpstreamError,
    408: UpstreamTimeoutError,
    409: UpstreamError,
    413: InvalidRequestError,
    429: RateLimitedError,
    499: UpstreamError,
    500: UpstreamError,
    501: PersistentUpstreamError,
    502: UpstreamError,
    503: OverloadedError,
    504: UpstreamTimeoutError,
}

STATUS_CLASS_TABLE: dict[int, type[GatewayError]] = {
    1: UpstreamError,
    2: UpstreamError,
    3: UpstreamError,
    4: InvalidRequestError,
    5: UpstreamError,
}

# google.rpc.Code names (error.status) -> class; wins over the HTTP status.
GOOGLE_STATUS_TABLE: dict[str, type[GatewayError]] = {
    "INVALID_ARGUMENT": InvalidRequestError,
    "OUT_OF_RANGE": InvalidRequestError,
    "FAILED_PRECONDITION": UpstreamAuthFailedError,
    "UNAUTHENTICATED": UpstreamAuthFailedError,
    "PERMISSION_DENIED": UpstreamAuthFailedError,
    "NOT_FOUND": PersistentUpstreamError,  # would repeat: fall back, do not retry
    "RESOURCE_EXHAUSTED": RateLimitedError,
    "ABORTED": UpstreamError,
    "CANCELLED": UpstreamError,
    "UNKNOWN": UpstreamError,
    "INTERNAL": UpstreamError,
    "UNIMPLEMENTED": PersistentUpstreamError,
    "DATA_LOSS": UpstreamError,
    "UNAVAILABLE": OverloadedError,
    "DEADLINE_EXCEEDED": UpstreamTimeoutError,
}

# google.rpc.ErrorInfo.reason -> class; wins over every status.
REASON_TABLE: dict[str, type[GatewayError]] = {
    "API_KEY_INVALID": UpstreamAuthFailedError,
    "API_KEY_EXPIRED": UpstreamAuthFailedError,
    "API_KEY_SERVICE_BLOCKED": UpstreamAuthFailedError,
    "API_KEY_HTTP_REFERRER_BLOCKED": UpstreamAuthFailedError,
    "API_KEY_IP_ADDRESS_BLOCKED": UpstreamAuthFailedError,
    "SERVICE_DISABLED": UpstreamAuthFailedError,
    "CONSUMER_SUSPENDED": UpstreamAuthFailedError,
    "BILLING_DISABLED": UpstreamAuthFailedError,
    "ACCESS_TOKEN_EXPIRED": UpstreamAuthFailedError,
    "RATE_LIMIT_EXCEEDED": RateLimitedError,
}

# (error.status, anchored pattern on error.message) -> class, for facts Google gives in words only.
MESSAGE_TABLE: tuple[tuple[str, re.Pattern[str], type[GatewayError]], ...] = (
    (
        "INVALID_ARGUMENT",
        re.compile(r"The input token count \(\d+\) exceeds the maximum number of tokens allowed"),
        ContextLengthExceededError,
    ),
)

_HINTS: dict[str, str] = {
    "NOT_FOUND": "the upstream does not know this model or endpoint",
    "FAILED_PRECONDITION": "the upstream account cannot use this API (billing or region)",
}


class GoogleError(msgspec.Struct):
    """The ``error`` object of a Google API error body; every field optional."""

    code: int | None = None
    message: str | None = None
    status: str | None = None
    details: list[dict[str, Any]] | None = None


class _Envelope(msgspec.Struct):
    error: GoogleError | None = None


# streamGenerateContent without alt=sse answers errors as a one-element JSON array.
_ENVELOPE = msgspec.json.Decoder(_Envelope | list[_Envelope])


def error_from_upstream(
    status: int, body: bytes, headers: Mapping[str, str], *, now: float | None = None
) -> GatewayError:
    """Map a non-200 answer; ``now`` (epoch seconds) enables an HTTP-date retry-after."""
    error = _error(body)
    retry_after = parse_retry_after(headers, now=now)
    if retry_after is None and error is not None:
        retry_after = _retry_delay(error)
    return _build(status, error, upstream_status=status, retry_after=retry_after)


def error_from_payload(error: GoogleError) -> GatewayError:
    """Map an ``error`` object sent inside a 200 answer (mid-stream); its ``code`` is the status."""
    status = error.code if error.code is not None else 500
    return _build(status, error, upstream_status=200, retry_after=_retry_delay(error))


def classify(status: int, error: GoogleError | None) -> type[GatewayError]:
    """The gw error class for an answer, by the tables above (most specific first)."""
    if error is not None:
        for detail in error.details or ():
            reason = detail.get("reason")
            if isinstance(reason, str) and reason in REASON_TABLE:
                return REASON_TABLE[reason]
        for google_status, pattern, cls in MESSAGE_TABLE:
            if error.status == google_status and error.message and pattern.match(error.message):
                return cls
        if error.status in GOOGLE_STATUS_TABLE:
            return GOOGLE_STATUS_TABLE[error.status]
    return STATUS_TABLE.get(status) or STATUS_CLASS_TABLE.get(status // 100, UpstreamError)


def _build(
    status: int, error: GoogleError | None, *, upstream_status: int, retry_after: float | None
) -> GatewayError:
    by_status = STATUS_TABLE.get(status) or STATUS_CLASS_TABLE.get(status // 100, UpstreamError)
    cls = kept_server_side(upstream_status, classify(status, error), by_status)
    google_status = error.status if error is not None else None
    message = f"upstream answered {status}" if upstream_status != 200 else "upstream sent an error"
    if google_status:
        message += f" {google_status}"
    return upstream_failure(
        cls,
        message,
        hint=_HINTS.get(google_status or ""),
        upstream_text=error.message if error is not None else None,
        upstream_status=upstream_status,
        retry_after=retry_after,
    )


def _error(body: bytes) -> GoogleError | None:
    try:
        envelope = _ENVELOPE.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if isinstance(envelope, list):
        return envelope[0].error if envelope else None
    return envelope.error


def _retry_delay(error: GoogleError) -> float | None:
    """``RetryInfo.retryDelay`` in seconds: a protobuf Duration in JSON ("20s", "1.5s")."""
    for detail in error.details or ():
        kind = detail.get("@type")
        delay = detail.get("retryDelay")
        if (
            isinstance(kind, str)
            and kind.endswith("google.rpc.RetryInfo")
            and isinstance(delay, str)
        ):
            try:
                seconds = float(delay.removesuffix("s"))
            except ValueError:
                return None
            return seconds if math.isfinite(seconds) and seconds >= 0 else None
    return None

"""An OpenAI-compatible upstream's error answer -> the gw error it means, by table.

Two tables, no string search: the HTTP status picks the class (exact status first, then
the status class), then the body's ``error.code`` (or, failing that, ``error.type``)
refines it. Every error built here has ``blame="upstream"`` and ``upstream_status``, so a
provider's ``rate_limited`` is told apart from a tenant limit in traces.

``insufficient_quota`` maps to ``RateLimitedError``: the account is spent, so the engine
should fall back to another target like on a rate limit. It stays a retryable class; the
same target will keep refusing until the quota is raised, which bounded retries absorb.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from gw.codecs.upstream_failure import kept_server_side, parse_retry_after, upstream_failure
from gw.errors import (
    ContentBlockedError,
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
    402: RateLimitedError,  # payment required: the account is out of credit, like quota
    403: UpstreamAuthFailedError,
    # The target's model or endpoint is unknown upstream: gateway config; it would repeat,
    # so it is not retried there, but fallen back from.
    404: PersistentUpstreamError,
    405: PersistentUpstreamError,
    410: PersistentUpstreamError,
    408: UpstreamTimeoutError,
    409: UpstreamError,
    413: InvalidRequestError,
    422: InvalidRequestError,
    429: RateLimitedError,
    500: UpstreamError,
    501: PersistentUpstreamError,
    502: UpstreamError,
    503: UpstreamError,
    504: UpstreamError,
    529: OverloadedError,
}

# First digit of the status -> class, for statuses not listed above. 1xx-3xx never reach
# here from a sane client, but a redirect the transport did not follow still needs a home.
STATUS_CLASS_TABLE: dict[int, type[GatewayError]] = {
    1: UpstreamError,
    2: UpstreamError,
    3: UpstreamError,
    4: InvalidRequestError,
    5: UpstreamError,
}

# error.code (or error.type) in the body -> class; wins over the status tables.
CODE_TABLE: dict[str, type[GatewayError]] = {
    "context_length_exceeded": ContextLengthExceededError,
    "rate_limit_exceeded": RateLimitedError,
    "insufficient_quota": RateLimitedError,
    "content_filter": ContentBlockedError,
    "content_policy_violation": ContentBlockedError,
    "invalid_api_key": UpstreamAuthFailedError,
    "engine_overloaded": OverloadedError,
    "overloaded_error": OverloadedError,
}

# Text added after the status, where the status alone misleads the reader.
_STATUS_HINTS: dict[int, str] = {404: "the upstream does not know this model or endpoint"}


class ErrorDetail(msgspec.Struct):
    """The ``error`` object of an OpenAI-style error body; every field optional."""

    message: str | None = None
    type: str | None = None
    # OpenAI sends a string; vLLM and others send the HTTP status as an integer.
    code: str | int | None = None


class _ErrorEnvelope(msgspec.Struct):
    error: ErrorDetail | str | None = None


_ENVELOPE = msgspec.json.Decoder(_ErrorEnvelope)


def error_from_upstream(
    status: int, body: bytes, headers: Mapping[str, str], *, now: float | None = None
) -> GatewayError:
    """Map an upstream error answer; ``now`` (epoch seconds) enables HTTP-date retry-after."""
    return build_error(
        status,
        error_detail(body),
        lead=f"upstream answered {status}",
        upstream_status=status,
        retry_after=parse_retry_after(headers, now=now),
    )


def error_from_payload(payload: object) -> GatewayError:
    """Map the ``error`` value of an error object sent with status 200 (in a stream or body).

    vLLM and others put the HTTP status they meant in ``error.code``; it picks the class.
    """
    try:
        detail: ErrorDetail | None = msgspec.convert(payload, ErrorDetail)
    except msgspec.ValidationError:
        detail = ErrorDetail(message=payload) if isinstance(payload, str) else None
    status = detail.code if detail is not None and isinstance(detail.code, int) else 500
    return build_error(status, detail, lead="upstream sent an error", upstream_status=200)


def build_error(
    status: int,
    detail: ErrorDetail | None,
    *,
    lead: str,
    upstream_status: int,
    retry_after: float | None = None,
    codes: Mapping[str, type[GatewayError]] = CODE_TABLE,
) -> GatewayError:
    """The gw error for an OpenAI-shaped error: by ``status``, refined by the body's code
    or type in ``codes`` (the Responses codec adds its own), 5xx kept server-side."""
    by_status = STATUS_TABLE.get(status) or STATUS_CLASS_TABLE.get(status // 100, UpstreamError)
    cls = by_status
    if detail is not None:
        for key in (detail.code, detail.type):
            if isinstance(key, str) and key in codes:
                cls = codes[key]
                break
    cls = kept_server_side(upstream_status, cls, by_status)
    return upstream_failure(
        cls,
        lead,
        hint=_STATUS_HINTS.get(status),
        upstream_text=detail.message if detail is not None else None,
        upstream_status=upstream_status,
        retry_after=retry_after,
    )


def error_detail(body: bytes) -> ErrorDetail | None:
    """The ``error`` object of an OpenAI-shaped error body; None when it has none."""
    try:
        envelope = _ENVELOPE.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if isinstance(envelope.error, str):  # some servers send {"error": "text"}
        return ErrorDetail(message=envelope.error)
    return envelope.error

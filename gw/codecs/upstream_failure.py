"""What every upstream codec does with an error answer, whatever its shape.

``upstream_failure`` builds the gw error: gw's own words in ``message`` (what traces and
logs keep), the upstream's text trimmed into ``upstream_message`` (for the client only,
since an upstream may echo the request), with every credential gw sent masked
(``gw.secret_text``), and never an auth error's text (it may quote part of the key).
``parse_retry_after`` reads the standard headers.
"""

from __future__ import annotations

import email.utils
import math
from collections.abc import Mapping
from datetime import UTC

from gw.codecs.context_window import refine_context_window
from gw.errors import (
    GatewayError,
    OverloadedError,
    UpstreamAuthFailedError,
    UpstreamError,
    UpstreamTimeoutError,
)
from gw.secret_text import scrub

MESSAGE_LIMIT = 200  # characters of upstream text passed on
SERVER_SIDE = (UpstreamError, UpstreamTimeoutError, OverloadedError)


def kept_server_side(
    upstream_status: int, cls: type[GatewayError], by_status: type[GatewayError]
) -> type[GatewayError]:
    """``cls`` (from an error body), unless the upstream answered a real HTTP 5xx and the
    body names a client-side error: then ``by_status``. A body the client would be blamed
    for must not stop the retry and fallback a 5xx gets."""
    if upstream_status >= 500 and not issubclass(cls, SERVER_SIDE):
        return by_status
    return cls


def upstream_failure(
    cls: type[GatewayError],
    message: str,
    *,
    hint: str | None = None,
    upstream_text: str | None,
    upstream_status: int,
    retry_after: float | None,
) -> GatewayError:
    """``hint``, when given, is what to do about it, added to ``message`` in parentheses.
    A request error worded as a too-long prompt becomes ``context_length_exceeded``."""
    cls = refine_context_window(cls, upstream_text)
    if hint:
        message += f" ({hint})"
    text: str | None = None
    if upstream_text and cls is not UpstreamAuthFailedError:
        text = " ".join(scrub(upstream_text).split())
        if len(text) > MESSAGE_LIMIT:
            text = text[: MESSAGE_LIMIT - 1] + "…"
    return cls(
        message,
        retry_after=retry_after,
        upstream_status=upstream_status,
        upstream_message=text,
        blame="upstream",
    )


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or HTTP-date).

    An HTTP-date needs ``now``; without it the date is ignored. Header names match in any case.
    """
    lowered = {name.lower(): value for name, value in headers.items()}
    millis = _number(lowered.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    value = lowered.get("retry-after")
    if value is None:
        return None
    seconds = _number(value)
    if seconds is not None:
        return seconds
    if now is None:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # HTTP-dates are GMT; do not let the local zone in
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now)


def _number(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None

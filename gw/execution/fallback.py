"""Which errors move a request on to the next target of its chain."""

from __future__ import annotations

from gw.config.schema import FallbackConfig
from gw.errors import GatewayError

# Errors the upstream or the path to it caused. An error the request itself caused
# (invalid_request, context_length_exceeded, content_blocked) would fail anywhere.
DEFAULT_FALLBACK_CODES = frozenset(
    {"upstream_error", "upstream_timeout", "upstream_auth_failed", "rate_limited", "overloaded"}
)


def may_fall_back(error: GatewayError, fallback: FallbackConfig) -> bool:
    """``on_error_codes``, when listed, is exhaustive (invariant 5)."""
    if not fallback.enabled:
        return False
    codes = (
        DEFAULT_FALLBACK_CODES
        if fallback.on_error_codes is None
        else frozenset(fallback.on_error_codes)
    )
    return error.code in codes

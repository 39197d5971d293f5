"""When to call the same target again: exponential backoff, deterministic jitter, retry-after."""

from __future__ import annotations

import hashlib

from gw.config.schema import RetryConfig


def jitter_factor(request_id: str, retry_number: int) -> float:
    """A factor in [0.5, 1.0) derived from the request id, so a replay waits the same."""
    digest = hashlib.sha256(f"{request_id}:{retry_number}".encode()).digest()
    return 0.5 + int.from_bytes(digest[:8], "big") / 2**64 / 2


def backoff_delay(
    retry: RetryConfig, retry_number: int, request_id: str, retry_after: float | None
) -> float | None:
    """Seconds to wait before retry ``retry_number`` (1 = the first retry).

    A ``retry_after`` from the upstream is a floor, not a suggestion: gw never calls back
    sooner. One beyond ``retry.max_retry_after`` means "not this target for a while", so the
    answer is ``None``: do not retry here, fall back instead.
    """
    base = retry.initial_backoff.seconds * retry.multiplier ** (retry_number - 1)
    delay = min(base, retry.max_backoff.seconds) * jitter_factor(request_id, retry_number)
    if retry_after is None:
        return delay
    if retry_after > retry.max_retry_after.seconds:
        return None
    return max(delay, retry_after)

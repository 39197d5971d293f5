"""The load-time check of the response cache's settings (``cache:`` and
``policies[].cache``), which gw/config/validate.py runs with the others."""

from __future__ import annotations

from collections.abc import Iterator

from gw.config.schema import Config

MAX_CACHE_TTL_S = 7 * 86400.0  # a week: an answer kept longer is a stale one


def cache_problems(config: Config) -> Iterator[tuple[str, str]]:
    bounds = config.cache
    if bounds.max_bytes.bytes < 1:
        yield "cache.max_bytes", "must be at least 1 byte"
    if not 1 <= bounds.max_entry_bytes.bytes <= bounds.max_bytes.bytes:
        yield "cache.max_entry_bytes", "must be at least 1 byte and at most cache.max_bytes"
    for index, policy in enumerate(config.policies):
        if not 0 < policy.cache.ttl.seconds <= MAX_CACHE_TTL_S:
            yield (
                f"policies[{index}].cache.ttl",
                f"must be longer than 0s and at most {MAX_CACHE_TTL_S / 86400:g} days",
            )

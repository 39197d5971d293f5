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
    routes = {route.name for route in config.routes}
    for index, policy in enumerate(config.policies):
        here = f"policies[{index}].cache"
        if not 0 < policy.cache.ttl.seconds <= MAX_CACHE_TTL_S:
            yield (
                f"{here}.ttl",
                f"must be longer than 0s and at most {MAX_CACHE_TTL_S / 86400:g} days",
            )
        semantic = policy.cache.semantic
        if semantic is None:
            continue
        if semantic.route not in routes:
            known = ", ".join(sorted(routes)) or "none"
            yield (
                f"{here}.semantic.route",
                f"unknown route {semantic.route!r}: name a route whose targets make "
                f"embeddings; routes: {known}",
            )
        if not 0 < semantic.threshold <= 1:
            yield f"{here}.semantic.threshold", "must be above 0 and at most 1 (cosine similarity)"

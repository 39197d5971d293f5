"""The response cache a starting gateway serves from: in memory, and sealed at rest in
the store, whose kept keys are read back now (gw/execution/answers_at_rest.py)."""

from __future__ import annotations

from gw.execution.answers_at_rest import AnswersAtRest
from gw.execution.response_cache import ResponseCache
from gw.startup.plan import ServePlan, SystemClock
from gw.store.port import StateStore
from gw.vault.content_seal import ContentSeal


async def response_cache(
    plan: ServePlan, store: StateStore, seal: ContentSeal, clock: SystemClock
) -> tuple[ResponseCache, AnswersAtRest]:
    bounds = plan.config.cache
    at_rest = AnswersAtRest(store.cached_answers(), seal)
    await at_rest.start(wall=clock.time())
    return ResponseCache(bounds.max_bytes.bytes, bounds.max_entry_bytes.bytes), at_rest

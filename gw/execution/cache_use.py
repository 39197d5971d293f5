"""How one request uses the response cache (gw/execution/response_cache.py): whether it
may, under which key, whether an entry serves it, and what is kept of its answer.

A request uses the cache when its policy turns it on (``policies[].cache.enabled``), it
is a chat request (OpenAI Chat Completions, Anthropic Messages, Gemini generateContent;
the Responses API keeps state of its own and is left out) and the client has not said
``Cache-Control: no-store`` (or ``x-gw-cache: off``). ``no-cache`` (or
``x-gw-cache: refresh``) skips the lookup and keeps the new answer. A kept answer is
one an upstream finished (not cut by a failure or a content filter) that passed the
policy's output guardrails.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import NamedTuple

import msgspec

from gw.config.schema import PolicyConfig
from gw.errors import GatewayError
from gw.execution.answers_at_rest import AnswersAtRest
from gw.execution.cache_keys import answer_size, cache_key
from gw.execution.cost import cost_usd
from gw.execution.execution_plan import ExecutionPlan
from gw.execution.request_context import Embedded, RequestContext, RequestFailedError
from gw.execution.response_cache import (
    UNCACHED_FINISHES,
    CachedAnswer,
    CacheMode,
    ResponseCache,
)
from gw.execution.semantic_cache import Probe, question_and_frame, unit_vector
from gw.ir import ChatRequest, ChatResponse, EmbeddingRequest, Usage
from gw.ports import Clock
from gw.record import CacheOutcome
from gw.routing.decision import RouteDecision, TargetRef

CACHE_HEADER = "x-gw-cache"
CACHED_ENDPOINTS = frozenset(
    {"chat.completions", "messages", "gemini.generateContent", "gemini.streamGenerateContent"}
)


class CacheHitFound(Exception):  # noqa: N818 - not an error: how planning hands a hit back
    """Planning found a cached answer for the request: it is answered from it, and no
    upstream is called, no limit taken and nothing charged."""

    def __init__(self, entry: CachedAnswer, decision: RouteDecision) -> None:
        super().__init__(entry.request_id)
        self.entry = entry
        self.decision = decision


def cache_mode(headers: Mapping[str, str]) -> CacheMode:
    """What the client's ``Cache-Control`` and ``x-gw-cache`` allow."""
    ours = headers.get(CACHE_HEADER, "").strip().lower()
    if ours in ("off", "bypass", "no-store"):
        return "off"
    directives = {word.strip() for word in headers.get("cache-control", "").lower().split(",")}
    if "no-store" in directives:
        return "off"
    if ours in ("refresh", "no-cache") or "no-cache" in directives:
        return "refresh"
    return "use"


def request_key(
    request: ChatRequest,
    policy: PolicyConfig,
    *,
    endpoint: str,
    tenant: str | None,
    mode: CacheMode,
) -> str | None:
    """The key the request looks up and keeps its answer under; None when it does not use
    the cache. The scope is the tenant's (open mode: one), or everyone's when shared."""
    if not policy.cache.enabled or mode == "off" or endpoint not in CACHED_ENDPOINTS:
        return None
    return cache_key(request, cache_scope(policy, tenant))


def cache_scope(policy: PolicyConfig, tenant: str | None) -> str:
    """Whose answers a request may be served: its policy's (so its guardrails, limits
    and model choices held when the answer was made), its tenant's unless shared."""
    who = "*" if policy.cache.shared else f"tenant:{tenant or ''}"
    return f"policy:{policy.name}\x00{who}"


def carried(accept: Callable[[ChatResponse], None] | None, response: ChatResponse) -> bool:
    """Whether the client's format can carry a cached answer (its ``check_response``)."""
    if accept is None:
        return True
    try:
        accept(response)
    except GatewayError:
        return False
    return True


def may_serve(entry: CachedAnswer, request: ChatRequest, decision: RouteDecision) -> bool:
    """Whether ``entry`` answers ``request`` as routed now: within its max_tokens, and
    from a target the decision would call (not one since switched off, blocked,
    unhealthy, or excluded by the client's routing hints)."""
    return entry.serves(request.max_tokens) and entry.target in decision.chain


def hit_note(entry: CachedAnswer, *, now: float, ttl: float) -> str:
    age = max(0.0, now - (entry.expires_at - ttl))
    saved = "" if entry.cost_usd is None else f", saving ${entry.cost_usd:.6f}"
    return (
        f"response cache hit: the answer {entry.target.key} gave request {entry.request_id} "
        f"{age:.0f}s ago{saved}"
    )


def lookup_outcome(policy: PolicyConfig, endpoint: str, mode: CacheMode) -> CacheOutcome | None:
    """What a request the cache did not answer says of it: ``miss`` (looked up),
    ``bypass`` (the client said no-cache or no-store); None where it has no cache."""
    if not policy.cache.enabled or endpoint not in CACHED_ENDPOINTS:
        return None
    return "miss" if mode == "use" else "bypass"


def keep_answer(
    cache: ResponseCache,
    key: str,
    *,
    request: ChatRequest,
    response: ChatResponse,
    request_id: str,
    target: TargetRef,
    ttl: float,
    now: float,
    cost_usd: float | None,
    probe: Probe | None = None,
) -> CachedAnswer | None:
    """Keep ``response`` under ``key`` if it may be kept: the entry, or None when it is
    not (its finish, or its size)."""
    if response.finish_reason in UNCACHED_FINISHES:
        return None
    entry = CachedAnswer(
        response=response,
        request_id=request_id,
        target=target,
        expires_at=now + ttl,
        size=answer_size(response) + (len(probe.vector) if probe is not None else 0),
        max_tokens=request.max_tokens,
        cost_usd=cost_usd,
        probe=probe,
    )
    return entry if cache.put(key, entry) else None


async def cached_or_key(
    cache: ResponseCache,
    ctx: RequestContext,
    request: ChatRequest,
    policy: PolicyConfig,
    decision: RouteDecision,
    *,
    clock: Clock,
    at_rest: AnswersAtRest | None = None,
) -> str | None:
    """The key the request's answer is kept under (None: it does not use the cache);
    raises ``CacheHitFound`` when an entry answers it: in memory, or kept at rest before
    a restart (then held in memory again)."""
    mode = ctx.cache_mode
    key = request_key(request, policy, endpoint=ctx.endpoint, tenant=ctx.tenant, mode=mode)
    if key is None or mode != "use":
        return key
    now = clock.monotonic()
    entry = cache.get(key, now=now)
    if entry is None and at_rest is not None and at_rest.holds(key, wall=clock.time()):
        entry = await at_rest.fetch(key, wall=clock.time(), mono=now)
        if entry is not None:
            cache.put(key, entry)
    if entry is not None and may_serve(entry, request, decision):
        note = hit_note(entry, now=now, ttl=policy.cache.ttl.seconds)
        raise CacheHitFound(entry, msgspec.structs.replace(decision, notes=(*decision.notes, note)))
    return key


class Answered(NamedTuple):
    """A whole answer, what gave it and what it used."""

    response: ChatResponse
    target: TargetRef
    usage: Usage


def kept(
    cache: ResponseCache | None,
    ctx: RequestContext,
    plan: ExecutionPlan[ChatRequest],
    answered: Answered,
    decision: RouteDecision,
    *,
    clock: Clock,
    at_rest: AnswersAtRest | None = None,
) -> RouteDecision:
    """The decision once the answer is kept (in memory, and sealed at rest) where the
    request may be; it says so."""
    if plan.cache_key is None or cache is None:
        return decision
    bounds = ctx.snapshot.config.cache  # a reload may have changed them
    if (bounds.max_bytes.bytes, bounds.max_entry_bytes.bytes) != cache.bounds:
        cache.reconfigure(bounds.max_bytes.bytes, bounds.max_entry_bytes.bytes)
    target, ttl = answered.target, plan.policy.cache.ttl.seconds
    price = ctx.snapshot.catalog.get((target.provider, target.model))
    entry = keep_answer(
        cache,
        plan.cache_key,
        request=plan.request,
        response=answered.response,
        request_id=ctx.request_id,
        target=target,
        ttl=ttl,
        now=clock.monotonic(),
        cost_usd=cost_usd(price, answered.usage),
        probe=plan.probe,
    )
    if entry is None:
        return decision
    if at_rest is not None:
        at_rest.keep(
            plan.cache_key, entry, expires=clock.time() + ttl, max_bytes=bounds.max_bytes.bytes
        )
    note = f"response cache: answer kept for {ttl:g}s"
    return msgspec.structs.replace(decision, notes=(*decision.notes, note))


Embed = Callable[[RequestContext, EmbeddingRequest], Awaitable[Embedded]]


async def semantic_probe(
    cache: ResponseCache,
    ctx: RequestContext,
    request: ChatRequest,
    policy: PolicyConfig,
    decision: RouteDecision,
    *,
    embed: Embed,
    now: Callable[[], float],
) -> tuple[Probe | None, RouteDecision]:
    """The request's question embedded by the policy's embeddings route (traced and
    billed as its own request, ``<id>-q``), and the decision noting it; raises
    ``CacheHitFound`` when a kept answer of the same frame is similar enough. No probe
    when the last message is not a user's text, or the embedding failed (noted: the
    exact level still applies)."""
    semantic = policy.cache.semantic
    if semantic is None:
        return None, decision
    # The embeddings route is part of the frame: vectors of two models never compare.
    split = question_and_frame(request, f"{cache_scope(policy, ctx.tenant)}\x00{semantic.route}")
    if split is None:
        return None, decision
    question, frame = split
    asked = msgspec.structs.replace(
        ctx, request_id=f"{ctx.request_id}-q", endpoint="embeddings", hints=None, pin=None
    )
    try:
        embedded = await embed(asked, EmbeddingRequest(model=semantic.route, inputs=(question,)))
    except RequestFailedError as failed:
        note = (
            f"semantic cache: the question could not be embedded by route {semantic.route!r} "
            f"({failed.error.code}, request {asked.request_id}): exact matches only"
        )
        return None, msgspec.structs.replace(decision, notes=(*decision.notes, note))
    probe = Probe(frame=frame, vector=unit_vector(embedded.response.vectors[0]))
    if ctx.cache_mode != "use":
        return probe, decision
    found = cache.similar(probe, threshold=semantic.threshold, now=now())
    if found is not None and may_serve(found[0], request, decision):
        entry, score = found
        note = (
            f"semantic cache hit: similarity {score:.3f} (threshold {semantic.threshold:g}) "
            f"with the question of request {entry.request_id}, embedded as {asked.request_id}"
        )
        raise CacheHitFound(entry, msgspec.structs.replace(decision, notes=(*decision.notes, note)))
    return probe, decision

"""decide(): one request and one snapshot in, one RouteDecision out. Pure, no I/O.

A chat request and an embeddings request are routed alike: routing reads of either the
same few things (model, needs, streaming, output limit, input estimates). An embeddings
request needs the ``embeddings`` capability, never streams and produces no output tokens
(its max output is 0), and each of its inputs must fit the context window on its own.

The steps, each recorded in the decision so ``gw explain`` can replay the reasoning:

1. resolve the client's ``model`` to a route (or a direct ``provider/model``) and its
   ``RoutePlan``, the part of the work that depends only on the snapshot and the route
   (``plan.route_plan``, computed once per route and snapshot);
2. pick the governing policy (``policy.first_matching`` among the plan's policies, the
   same choice as ``policy.resolve_policy``) and the strategy (the policy's, else the
   route's); a deny rule ends here, with no chain;
3. settle max output tokens: never invented, clamped to the policy ceiling with a note;
4. screen the targets (``filters.screen_targets``), relaxing the cost ceiling if it alone
   would leave nothing;
5. order the survivors (``strategies.rank``) into the chain.

An empty chain is still a decision; ``no_candidate_error`` turns it into the error a
client sees. ``candidates`` lists the chain first, in rank order, then every rejected
target in config order.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from gw.config.schema import PolicyConfig, RequestKind, Strategy
from gw.config.snapshot import Snapshot
from gw.errors import (
    ContextLengthExceededError,
    GatewayError,
    InvalidRequestError,
    ModelNotFoundError,
    NativeFeatureUnsupportedError,
    NoRouteError,
    PermissionDeniedError,
)
from gw.ir.embeddings import EmbeddingRequest
from gw.ir.request import ChatRequest
from gw.routing.decision import Candidate, RouteDecision, TargetRef
from gw.routing.estimate import estimate_input_tokens
from gw.routing.filters import format_usd, screen_targets
from gw.routing.health import HealthView
from gw.routing.hints import RoutingHints
from gw.routing.inputs import RoutingInputs, routing_inputs
from gw.routing.model_block import without_blocked_models
from gw.routing.needs import required_capabilities
from gw.routing.plan import PlannedTarget, RoutePlan, route_plan
from gw.routing.policy import first_matching
from gw.routing.strategies import Ranking, rank


def decide(
    request: ChatRequest | EmbeddingRequest,
    snapshot: Snapshot,
    *,
    request_id: str,
    tenant: str | None = None,
    api_key_id: str | None = None,
    latency_ms: Mapping[str, float] | None = None,
    hints: RoutingHints | None = None,
    health: HealthView | None = None,
    kind: RequestKind | None = None,
) -> tuple[RouteDecision, PolicyConfig]:
    """Route ``request`` against ``snapshot``; raises ``ModelNotFoundError`` for an unknown model.

    ``request_id`` seeds the weighted strategy, so the same id always gets the same
    order. ``latency_ms`` is the observed latency per ``provider/model``, if any.
    ``hints`` (request headers) narrow the decision; each one used is noted. ``health``
    holds a verdict for each target that is not healthy (gw/routing/health.py). ``kind``
    is what policies match on (``kind_of_endpoint``); None: chat, or embeddings for an
    ``EmbeddingRequest``. A deny rule's decision has no chain and says why in its notes.
    """
    inputs = routing_inputs(request, kind=kind, hints=hints)
    return decide_inputs(
        request.model,
        inputs,
        snapshot,
        request_id=request_id,
        tenant=tenant,
        api_key_id=api_key_id,
        latency_ms=latency_ms,
        health=health,
    )


def decide_inputs(
    model: str,
    inputs: RoutingInputs,
    snapshot: Snapshot,
    *,
    request_id: str,
    tenant: str | None = None,
    api_key_id: str | None = None,
    latency_ms: Mapping[str, float] | None = None,
    health: HealthView | None = None,
) -> tuple[RouteDecision, PolicyConfig]:
    """``decide`` for a request already read into ``inputs`` (gw/routing/inputs.py),
    addressed to ``model``: how ``gw replay`` routes a recorded request again."""
    # Kept in locals: this runs on every request.
    needs, streaming, max_tokens = inputs.needs, inputs.stream, inputs.max_tokens
    input_tokens, window_tokens, hints = inputs.input_tokens, inputs.window_tokens, inputs.hints
    native_tools = inputs.native_blocks()
    kind = inputs.kind
    plan = route_plan(snapshot, model)
    route = plan.route
    if snapshot.switches.routes_off:
        refuse_switched_off_route(snapshot, route.name)
    policy = first_matching(
        plan.policies,
        streaming=streaming,
        tenant=tenant,
        api_key_id=api_key_id,
        capabilities=needs,
        kind=kind,
        prompt_tokens=input_tokens,
    )
    if policy.deny:
        return denied_decision(plan, policy, input_tokens, inputs), policy
    strategy = policy.strategy or route.strategy
    max_cost = policy.limits.max_cost_per_request_usd
    targets = plan.targets
    hint_notes: tuple[str, ...] = ()
    if hints is not None:
        strategy, max_cost, targets, hint_notes = apply_hints(
            hints, strategy=strategy, max_cost=max_cost, targets=targets, route=route.name
        )
    max_output, clamp_notes = clamp_max_tokens(max_tokens, policy.limits.max_output_tokens)
    # The common case, priority over the route's own targets, is ranked while screening.
    by_priority = strategy == "priority" and targets is plan.targets
    screening = screen_targets(
        targets,
        needs=needs,
        input_tokens=input_tokens,
        max_output_tokens=max_output,
        max_cost_usd=max_cost,
        window_tokens=window_tokens,
        health=health,
        priority_ranks=plan.priority_ranks if by_priority else None,
        native_tools=native_tools,
        unpriced_allowed=policy.limits.unpriced == "allow",
    )
    kept_all = len(screening.kept) == len(targets) and not screening.degraded_reasons
    if by_priority and kept_all:  # every target passed as it is: the plan's chain
        kept = screening.kept
        ranking = Ranking(ranked=tuple([kept[index] for index in plan.priority_order]))
        chain = tuple([plan.refs[index] for index in plan.priority_order])
    else:
        ranking = rank(
            strategy,
            screening.kept,
            request_id=request_id,
            quality=plan.quality,
            latency_ms=latency_ms,
        )
        chain = ()
    ranked = ranking.ranked
    if health:
        ranked = _unhealthy_last(ranked, health)
        chain = ()  # perhaps reordered
    rejected = _in_config_order(screening.rejected + ranking.rejected, plan.position)
    decision = RouteDecision(
        route=route.name,
        direct=plan.direct,
        policy=policy.name,
        strategy=strategy,
        chain=chain or tuple([TargetRef(provider=c.provider, model=c.model) for c in ranked]),
        candidates=ranked + rejected,
        estimated_input_tokens=input_tokens,
        max_output_tokens=max_output,
        degraded=bool(screening.degraded_reasons),
        degraded_reasons=screening.degraded_reasons,
        notes=hint_notes + clamp_notes + screening.notes + ranking.notes,
        warnings=clamp_notes,
        inputs=inputs,
    )
    guards = snapshot.guardrails.for_policy(policy.name)
    if guards is not None and guards.models:
        decision = without_blocked_models(decision, guards)
    return decision, policy


def refuse_switched_off_route(snapshot: Snapshot, route: str) -> None:
    """503 ``no_route`` for a route an operator switched off, saying who, when and why."""
    why = snapshot.switches.routes_off.get(route)
    if why is not None:
        raise NoRouteError(f"{why}; `gw switch list` shows the switches, `gw switch on` ends one")


def governing_policy(
    request: ChatRequest,
    snapshot: Snapshot,
    *,
    kind: RequestKind,
    tenant: str | None,
    api_key_id: str | None,
) -> PolicyConfig | None:
    """The policy a request that is never routed (count_tokens) falls under, for its deny
    rules; None when its model names no route or target (gw estimates tokens anyway)."""
    try:
        plan = route_plan(snapshot, request.model)
    except ModelNotFoundError:
        return None
    return first_matching(
        plan.policies,
        streaming=request.stream,
        tenant=tenant,
        api_key_id=api_key_id,
        capabilities=required_capabilities(request),
        kind=kind,
        prompt_tokens=estimate_input_tokens(request),
    )


def denied_decision(
    plan: RoutePlan,
    policy: PolicyConfig,
    input_tokens: int,
    inputs: RoutingInputs | None = None,
) -> RouteDecision:
    """A deny rule's decision: nothing to try, and the rule's reason in the notes."""
    return RouteDecision(
        route=plan.route.name,
        direct=plan.direct,
        policy=policy.name,
        strategy=policy.strategy or plan.route.strategy,
        chain=(),
        candidates=(),
        estimated_input_tokens=input_tokens,
        max_output_tokens=None,
        notes=(f"denied by policy {policy.name}: {deny_reason(policy)}",),
        inputs=inputs,
    )


def denied_error(policy: PolicyConfig) -> PermissionDeniedError:
    """What the client of a deny rule's request is told: the rule's reason, and its name."""
    return PermissionDeniedError(f"{deny_reason(policy)} (policy {policy.name!r})")


def deny_reason(policy: PolicyConfig) -> str:
    return policy.deny_reason or f"requests matching policy {policy.name!r} are denied"


def apply_hints(
    hints: RoutingHints,
    *,
    strategy: Strategy,
    max_cost: float | None,
    targets: tuple[PlannedTarget, ...],
    route: str,
) -> tuple[Strategy, float | None, tuple[PlannedTarget, ...], tuple[str, ...]]:
    """The strategy, cost ceiling and targets after ``hints``, and a note for each hint."""
    notes: list[str] = []
    if hints.strategy is not None and hints.strategy != strategy:
        notes.append(f"x-gw-strategy: {hints.strategy} instead of {strategy}")
        strategy = hints.strategy
    if hints.max_cost_usd is not None and (max_cost is None or hints.max_cost_usd < max_cost):
        notes.append(f"x-gw-max-cost-usd: cost ceiling {format_usd(hints.max_cost_usd)}")
        max_cost = hints.max_cost_usd
    if hints.provider is not None:
        pinned = tuple(t for t in targets if t.target.provider == hints.provider)
        if not pinned:
            raise InvalidRequestError(
                f"x-gw-provider: route {route} has no target on provider {hints.provider}",
                param="x-gw-provider",
            )
        notes.append(f"x-gw-provider: only targets on {hints.provider}")
        targets = pinned
    return strategy, max_cost, targets, tuple(notes)


def _unhealthy_last(ranked: tuple[Candidate, ...], health: HealthView) -> tuple[Candidate, ...]:
    """Degraded (and relaxed unhealthy) targets after the others, each group in the
    strategy's order (a stable partition); ``rank`` is renumbered to match. A half-open
    trial keeps its place: live traffic must reach it for the breaker to close."""

    def demoted(c: Candidate) -> bool:
        verdict = health.get(f"{c.provider}/{c.model}")
        return verdict is not None and verdict.status != "trial"

    healthy = [c for c in ranked if not demoted(c)]
    if len(healthy) == len(ranked):
        return ranked
    others = [c for c in ranked if demoted(c)]
    return tuple(
        msgspec.structs.replace(c, rank=position) for position, c in enumerate(healthy + others)
    )


def clamp_max_tokens(
    requested: int | None, ceiling: int | None
) -> tuple[int | None, tuple[str, ...]]:
    """Invariant 7: keep the client's limit (or its absence); clamp it to the ceiling."""
    if requested is None or ceiling is None or requested <= ceiling:
        return requested, ()
    return ceiling, (f"max_tokens {requested} clamped to policy ceiling {ceiling}",)


def no_candidate_error(decision: RouteDecision, *, input_param: str = "messages") -> GatewayError:
    """The client-facing error for a decision whose chain is empty.

    Only missing capabilities: ``native_feature_unsupported``; so too when targets could
    not run the request's provider-side tools (``native_tools``) or lack a capability, and
    the message says to add a target that can. Context windows and no capability problem:
    ``context_length_exceeded`` (its ``param`` is ``input_param``, the field that holds the
    input). Anything else: ``no_route``.
    """
    rejected = [c for c in decision.candidates if c.rejected is not None]
    reasons = {c.rejected for c in rejected}
    listing = "; ".join(f"{c.provider}/{c.model} {c.detail}" for c in rejected)
    if "native_tools" in reasons and reasons <= {"native_tools", "missing_capability"}:
        return NativeFeatureUnsupportedError(
            f"no target of {decision.route!r} can serve this request: it uses tools that only "
            "one kind of provider runs; add a target of that kind to the route (kind: "
            "anthropic for Anthropic's server tools, kind: openai_responses for OpenAI's "
            "built-in tools, kind: gemini for Gemini's), offer them beside a function tool, "
            f"or leave them out: {listing}",
            param="tools",
        )
    if rejected and reasons == {"missing_capability"}:
        return NativeFeatureUnsupportedError(
            f"no target of {decision.route!r} supports a feature this request uses: {listing}"
        )
    if "context_window" in reasons and "missing_capability" not in reasons:
        output = decision.max_output_tokens
        wanted = f"about {decision.estimated_input_tokens} input tokens" + (
            f" + {output} output tokens" if output else ""
        )
        return ContextLengthExceededError(
            f"this request needs {wanted}, more than the context window of every target "
            f"of {decision.route!r}: {listing}",
            param=input_param,
        )
    return NoRouteError(
        f"no target of {decision.route!r} can serve this request: {listing or 'it has none'}"
    )


def _in_config_order(
    candidates: tuple[Candidate, ...], position: Mapping[tuple[str, str], int]
) -> tuple[Candidate, ...]:
    if len(candidates) < 2:  # the common case; no sort to set up
        return candidates
    return tuple(sorted(candidates, key=lambda c: position[(c.provider, c.model)]))

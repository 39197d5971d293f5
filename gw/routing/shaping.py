"""Prompt shaping: what a policy's ``shaping.mode`` does with a conversation too long for
a target's context window, and how the decision says so. Pure, like the router.

Shaping starts from the decision routing made for the request as it came, and acts only
when a target was rejected for its window (``context_window``); otherwise, and under
``mode: none``, the request and its decision pass unchanged. The *first choice* is the
target routing picks for the request trimmed as far as the rule allows
(``trim.shortest_form``): the target it would have had, had its length not mattered.

- ``larger_window``: routing already moves a request to a target whose window fits;
  when that moved it off the first choice, the decision says so (a warning, sent as
  ``x-gw-warning``). Nothing is trimmed.
- ``trim``: the conversation is trimmed (``gw/routing/trim.py``) to fit the first choice's
  window, less the request's ``max_tokens``, so it stays on that target.
- ``larger_window_then_trim``: a target whose window fits, as ``larger_window``; when none
  does, the conversation is trimmed to fit the largest window among the targets that can
  take its shortest form, so as little as possible is dropped.

A trimmed request is routed again from the start (``decide``), so it meets every filter
(cost ceiling, capabilities, health) as any request does, and the policy that matches its
new size governs it; the new decision carries the shaping note as a warning. When even the
shortest form fits no window the decision is left with its empty chain and a note, and
the request fails as any too-long request does: 400 ``context_length_exceeded`` naming
each window and the estimate, before any upstream call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypedDict, Unpack, overload

import msgspec

from gw.config.schema import ModelEntry, PolicyConfig, RequestKind
from gw.config.snapshot import Snapshot
from gw.ir.embeddings import EmbeddingRequest
from gw.ir.request import ChatRequest
from gw.routing.decision import RouteDecision, TargetRef
from gw.routing.health import HealthView
from gw.routing.hints import RoutingHints
from gw.routing.router import decide
from gw.routing.trim import shortest_form, trim_to_fit

Route = Callable[[ChatRequest], tuple[RouteDecision, PolicyConfig]]
Catalog = Mapping[tuple[str, str], ModelEntry]


class RoutingInputs(TypedDict, total=False):
    """``decide``'s keyword arguments (``request_id`` is required), passed through."""

    request_id: str
    tenant: str | None
    api_key_id: str | None
    latency_ms: Mapping[str, float] | None
    hints: RoutingHints | None
    health: HealthView | None
    kind: RequestKind | None


@overload
def decide_shaped(
    request: ChatRequest, snapshot: Snapshot, **inputs: Unpack[RoutingInputs]
) -> tuple[ChatRequest, RouteDecision, PolicyConfig]: ...
@overload
def decide_shaped(
    request: EmbeddingRequest, snapshot: Snapshot, **inputs: Unpack[RoutingInputs]
) -> tuple[EmbeddingRequest, RouteDecision, PolicyConfig]: ...
def decide_shaped(
    request: ChatRequest | EmbeddingRequest, snapshot: Snapshot, **inputs: Unpack[RoutingInputs]
) -> tuple[ChatRequest | EmbeddingRequest, RouteDecision, PolicyConfig]:
    """``decide``, then shaping: the request as its policy's ``shaping`` lets it go
    upstream, its decision (noting what shaping did, or why it could not) and the policy
    that governs it. An embeddings request, or a policy with ``mode: none``, is decided
    as ``decide`` does and passes unchanged."""
    decision, policy = decide(request, snapshot, **inputs)
    if policy.shaping.mode == "none" or not isinstance(request, ChatRequest):
        return request, decision, policy

    def route(changed: ChatRequest) -> tuple[RouteDecision, PolicyConfig]:
        return decide(changed, snapshot, **inputs)

    return shape_prompt(request, decision, policy, route=route, catalog=snapshot.catalog)


def shape_prompt(
    request: ChatRequest,
    decision: RouteDecision,
    policy: PolicyConfig,
    *,
    route: Route,
    catalog: Catalog,
) -> tuple[ChatRequest, RouteDecision, PolicyConfig]:
    """Shaping after ``decision`` (see the module docstring for the modes); ``route``
    decides for a changed request exactly as for the original (same snapshot, request
    id, tenant, hints, health)."""
    mode = policy.shaping.mode
    if mode == "none" or not any(c.rejected == "context_window" for c in decision.candidates):
        return request, decision, policy
    shortest = shortest_form(request)
    floor = decision if shortest is request else route(shortest)[0]
    if decision.chain and mode != "trim":
        return request, _moved(decision, floor.chosen, catalog, mode), policy
    if mode == "larger_window":  # and nothing fits: the error says it all
        return request, decision, policy
    target = _trim_target(floor, mode == "trim", catalog)
    if target is None:
        return request, _noted(decision, _cannot_trim(policy, floor), warn=False), policy
    window = _window(catalog, target)
    needed = decision.estimated_input_tokens + (decision.max_output_tokens or 0)
    if window is None or needed <= window:  # the first choice takes it as it is
        return request, decision, policy
    trimmed = trim_to_fit(request, window - (floor.max_output_tokens or 0))
    shaped, shaped_policy = route(trimmed.request)
    note = (
        f"shaped: dropped {trimmed.dropped} of {trimmed.total} messages (oldest turns) to "
        f"fit {target.key}'s {window}-token window (about {decision.estimated_input_tokens} "
        f"-> {trimmed.tokens} input tokens; policy {policy.name}, shaping.mode {mode})"
    )
    return trimmed.request, _noted(shaped, note, warn=True), shaped_policy


def _trim_target(floor: RouteDecision, first: bool, catalog: Catalog) -> TargetRef | None:
    """The target to trim for: the first choice, or the largest window of those that take
    the shortest form (the first of them on a tie; an unknown window counts as none)."""
    if first or not floor.chain:
        return floor.chosen
    return max(floor.chain, key=lambda target: _window(catalog, target) or 0)


def _moved(
    decision: RouteDecision, first: TargetRef | None, catalog: Catalog, mode: str
) -> RouteDecision:
    """``decision`` with a warning when its length moved it off the first choice."""
    chosen = decision.chosen
    if first is None or chosen is None or first == chosen:
        return decision
    rejected = next(
        (c for c in decision.candidates if (c.provider, c.model) == (first.provider, first.model)),
        None,
    )
    if rejected is None or rejected.rejected != "context_window":
        return decision  # moved for another reason (its price): no shaping to report
    window = _window(catalog, chosen)
    has = f"{window}-token window" if window is not None else "window, unknown to the catalog"
    note = (
        f"shaped: routed to {chosen.key} ({has}) instead of {first.key}: about "
        f"{decision.estimated_input_tokens} input tokens"
        + (f" + {decision.max_output_tokens} output" if decision.max_output_tokens else "")
        + f" exceed its {_window(catalog, first)}-token window (shaping.mode {mode})"
    )
    return _noted(decision, note, warn=True)


def _cannot_trim(policy: PolicyConfig, floor: RouteDecision) -> str:
    output = f" + {floor.max_output_tokens} output" if floor.max_output_tokens else ""
    return (
        f"shaping ({policy.shaping.mode}, policy {policy.name}) could not help: the system "
        f"messages and the current turn alone are about {floor.estimated_input_tokens} "
        f"input{output} tokens, and no target can take them"
    )


def _window(catalog: Catalog, target: TargetRef) -> int | None:
    entry = catalog.get((target.provider, target.model))
    return None if entry is None else entry.context_window


def _noted(decision: RouteDecision, note: str, *, warn: bool) -> RouteDecision:
    return msgspec.structs.replace(
        decision,
        notes=(*decision.notes, note),
        warnings=(*decision.warnings, note) if warn else decision.warnings,
    )

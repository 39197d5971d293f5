"""A policy's model blocklist (guardrails with ``models:``) applied to a decision.

A listed target is a rejected candidate (``blocked_model``, naming the rule), never
relaxed back; when the blocklist leaves no target the request is refused with 403
``permission_denied`` naming the rule, since retrying cannot help.
"""

from __future__ import annotations

import msgspec

from gw.config.guardrails import PolicyGuards
from gw.errors import PermissionDeniedError
from gw.routing.decision import Candidate, RouteDecision, TargetRef


def without_blocked_models(decision: RouteDecision, guards: PolicyGuards) -> RouteDecision:
    """``decision`` with the targets the policy's model rules list taken out."""
    blocked: dict[str, str] = {}  # provider/model -> rule
    for candidate in decision.candidates:
        rule = guards.blocked_by(candidate.provider, candidate.model)
        if rule is not None and candidate.rejected is None:
            blocked[f"{candidate.provider}/{candidate.model}"] = rule
    if not blocked:
        return decision
    chain = tuple(target for target in decision.chain if target.key not in blocked)
    if decision.chain and not chain:
        rules = ", ".join(repr(rule) for rule in dict.fromkeys(blocked.values()))
        raise PermissionDeniedError(
            f"model {decision.route!r}: every target it may use is on the model blocklist "
            f"of guardrail {rules} (policy {decision.policy}); use another model, or ask the "
            "operator about the rule"
        )
    candidates = tuple(
        _rejected(candidate, blocked[key]) if (key := _key(candidate)) in blocked else candidate
        for candidate in decision.candidates
    )
    return msgspec.structs.replace(decision, chain=chain, candidates=candidates)


def _key(candidate: Candidate) -> str:
    return TargetRef(provider=candidate.provider, model=candidate.model).key


def _rejected(candidate: Candidate, rule: str) -> Candidate:
    return msgspec.structs.replace(
        candidate,
        rejected="blocked_model",
        detail=f"on the model blocklist of guardrail {rule!r}",
        score=None,
        rank=None,
    )

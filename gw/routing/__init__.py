"""Routing: a pure function from (request, snapshot, observed state) to a RouteDecision."""

from gw.routing.decision import Candidate, RejectReason, RouteDecision, TargetRef
from gw.routing.estimate import estimate_input_tokens
from gw.routing.needs import required_capabilities
from gw.routing.policy import DEFAULT_POLICY, resolve_policy
from gw.routing.router import decide, no_candidate_error

__all__ = [
    "DEFAULT_POLICY",
    "Candidate",
    "RejectReason",
    "RouteDecision",
    "TargetRef",
    "decide",
    "estimate_input_tokens",
    "no_candidate_error",
    "required_capabilities",
    "resolve_policy",
]

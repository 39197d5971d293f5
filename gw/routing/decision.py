"""RouteDecision: what routing decided for one request, and why. Stored in every trace."""

from __future__ import annotations

from typing import Literal

import msgspec

from gw.config.schema import Strategy
from gw.routing.inputs import RoutingInputs

RejectReason = Literal[
    "missing_capability",  # the request needs tools/vision/json_schema the model lacks
    "context_window",  # estimated input + max output exceed the model's window
    "cost_ceiling",  # projected cost above limits.max_cost_per_request_usd
    "zero_weight",  # weighted strategy and weight 0
    "unhealthy",  # its circuit breaker is open (see gw/routing/health.py)
    "native_tools",  # the request has provider-side tools only another kind of provider runs
    "switched_off",  # an operator's switch (gw/config/switches.py): never relaxed
    "blocked_model",  # on the policy's model blocklist (gw/config/guardrails.py)
]


class DecisionStruct(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Base of decision values: immutable; unknown fields tolerated so old readers of a
    trace survive newer writers. Untracked by the cyclic GC (gc=False): a decision is a
    tree of strings and numbers, never a cycle, and a routing decision makes ~30 of them
    (106 -> 100 k instructions per decision, callgrind)."""


class TargetRef(DecisionStruct, frozen=True, kw_only=True):
    provider: str
    model: str

    @property
    def key(self) -> str:
        return f"{self.provider}/{self.model}"


class Candidate(DecisionStruct, frozen=True, kw_only=True):
    """One route target as routing saw it: kept (with rank and score) or rejected (reason)."""

    provider: str
    model: str
    priority: int
    weight: float
    estimated_cost_usd: float | None = None
    score: float | None = None
    rank: int | None = None
    rejected: RejectReason | None = None
    detail: str | None = None
    relaxed: bool = False


class RouteDecision(DecisionStruct, frozen=True, kw_only=True):
    """The decision: ``chain`` is the order targets will be tried in, ``chain[0]`` first.

    ``degraded`` is set when a filter had to be relaxed to leave any candidate
    (invariant 11); ``notes`` say what else was adjusted (max_tokens clamped, ...).
    """

    route: str
    direct: bool
    policy: str
    strategy: Strategy
    chain: tuple[TargetRef, ...]
    candidates: tuple[Candidate, ...]
    estimated_input_tokens: int
    max_output_tokens: int | None
    degraded: bool = False
    degraded_reasons: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    # Non-blocking warnings the client is sent (``x-gw-warning``): a clamp applied, a
    # budget nearly spent. Each is also among ``notes``.
    warnings: tuple[str, ...] = ()
    # What the request was routed on (gw/routing/inputs.py), for ``gw replay``; None in
    # traces written before gw kept them.
    inputs: RoutingInputs | None = None

    @property
    def chosen(self) -> TargetRef | None:
        return self.chain[0] if self.chain else None

"""Routing a recorded request again under another config: one trace in, one comparison out.

Pure, like routing: ``replay_trace`` takes a trace and a candidate ``Snapshot`` and
returns what the recorded decision chose and what the candidate's would, with the cost
of each. No upstream is called, nothing is written. ``gw replay`` and
``POST /admin/v1/config/replay`` aggregate these (gw/execution/replay_report.py).

What it assumes, stated wherever the comparison is shown (``ASSUMPTIONS``):

- the inputs are the recorded ones (``RouteDecision.inputs``, gw/routing/inputs.py): the
  model the request named, its tenant and key, its token estimate, needs and hints. A
  trace written before gw kept them is replayed from its decision's token estimate,
  output limit and stream flag, with no capabilities needed and no hints: ``inputs_known``
  says which;
- every target is healthy (breakers closed, as after a restart) and no latency is known:
  the candidate is judged on its config alone. The recorded decision was made with the
  health of its moment; ``breaker_shaped`` marks one that a breaker changed;
- the same request id, so a weighted choice picks as it did (invariant 4);
- deny rules and a tenant's ``allowed_routes`` are checked; rate limits, budgets and
  plugins (state of the moment, or code) are not;
- cost before is what was recorded; cost after is the candidate's first choice's catalog
  price on the recorded token usage (as if it answered with the same tokens). A request
  the candidate refuses costs nothing after.
"""

from __future__ import annotations

import msgspec

from gw.config.snapshot import Snapshot
from gw.errors import GatewayError
from gw.execution.cost import cost_usd
from gw.execution.tenant_admission import check_tenant_route
from gw.record import TraceRecord
from gw.routing.decision import RouteDecision
from gw.routing.inputs import RoutingInputs
from gw.routing.needs import EMBEDDING_NEEDS, NO_NEEDS
from gw.routing.policy import kind_of_endpoint
from gw.routing.router import decide_inputs, denied_error, no_candidate_error

ASSUMPTIONS: tuple[str, ...] = (
    "every target healthy (breakers closed) and no latency observed: the candidate is "
    "judged on its config alone; recorded decisions kept the health of their moment",
    "each request routed on its recorded inputs (model, tenant, key, token estimate, "
    "capabilities, hints) with its own request id, so weighted choices pick as before",
    "deny rules and tenants' allowed_routes checked; rate limits, budgets and plugins not",
    "cost before: as recorded; cost after: the candidate's first choice at its catalog "
    "price on the recorded token usage; a request the candidate refuses costs nothing",
    "response cache hits (no upstream call) are counted apart, not replayed; sticky "
    "sessions and prompt shaping are not replayed: each request is routed on its own",
)


class Outcome(msgspec.Struct, frozen=True, kw_only=True):
    """What routing made of a request: a first choice, or a refusal (code and reason)."""

    target: str | None = None  # provider/model tried first
    code: str | None = None  # the error a refused request gets
    reason: str | None = None
    degraded_reasons: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return self.target or f"refused: {self.code}"


class Replayed(msgspec.Struct, frozen=True, kw_only=True):
    """One recorded request, as recorded (``before``) and under the candidate (``after``)."""

    request_id: str
    time: float
    route: str  # the recorded decision's route
    tenant: str | None
    before: Outcome
    after: Outcome
    before_usd: float  # as recorded (0 when nothing was spent)
    after_usd: float | None  # None: the candidate's choice has no catalog price
    inputs_known: bool  # False: a trace from before gw kept routing inputs
    breaker_shaped: bool  # the recorded chain was changed by health (a breaker, ...)

    @property
    def changed(self) -> bool:
        return (self.before.target, self.before.code) != (self.after.target, self.after.code)


def replay_trace(trace: TraceRecord, candidate: Snapshot) -> Replayed | None:
    """``trace`` routed again under ``candidate``; None when it was never routed (refused
    before routing: authentication, a bad body, an unknown model, an admin call)."""
    decision = trace.decision
    if decision is None:
        return None
    inputs = decision.inputs or inputs_of_old_trace(trace, decision)
    after = candidate_outcome(trace, inputs, candidate)
    after_usd: float | None = 0.0
    if after.target is not None:
        provider, _, model = after.target.partition("/")
        after_usd = cost_usd(candidate.catalog.get((provider, model)), trace.usage)
        if after_usd is None and trace.usage is None:
            after_usd = 0.0  # nothing was used, nothing to price
    return Replayed(
        request_id=trace.request_id,
        time=trace.time,
        route=decision.route,
        tenant=trace.tenant,
        before=recorded_outcome(trace, decision),
        after=after,
        before_usd=trace.cost_usd or 0.0,
        after_usd=after_usd,
        inputs_known=decision.inputs is not None,
        breaker_shaped=breaker_shaped(decision),
    )


def candidate_outcome(trace: TraceRecord, inputs: RoutingInputs, candidate: Snapshot) -> Outcome:
    """Where ``candidate`` would send the request, or why it would refuse it."""
    try:
        decision, policy = decide_inputs(
            trace.requested_model,
            inputs,
            candidate,
            request_id=trace.request_id,
            tenant=trace.tenant,
            api_key_id=trace.key_id,
        )
        if policy.deny:
            raise denied_error(policy)
        if not decision.chain:
            raise no_candidate_error(decision)
        if trace.tenant is not None:
            check_tenant_route(candidate, trace.tenant, decision)
    except GatewayError as refused:
        return Outcome(code=refused.code, reason=refused.message)
    chosen = decision.chain[0].key
    return Outcome(target=chosen, degraded_reasons=decision.degraded_reasons)


def recorded_outcome(trace: TraceRecord, decision: RouteDecision) -> Outcome:
    """What the recorded decision chose; a refusal when it left nothing to try."""
    if decision.chosen is not None:
        return Outcome(target=decision.chosen.key, degraded_reasons=decision.degraded_reasons)
    return Outcome(code=trace.error_code or "no_route", reason=trace.error_message)


def inputs_of_old_trace(trace: TraceRecord, decision: RouteDecision) -> RoutingInputs:
    """The inputs a trace written before gw kept them implies: its decision's estimate and
    (clamped) output limit, its stream flag; capabilities and hints unknown (none)."""
    kind = kind_of_endpoint(trace.endpoint)
    return RoutingInputs(
        kind=kind,
        stream=trace.stream,
        max_tokens=decision.max_output_tokens,
        needs=EMBEDDING_NEEDS if kind == "embeddings" else NO_NEEDS,
        input_tokens=decision.estimated_input_tokens,
        window_tokens=decision.estimated_input_tokens,
    )


def breaker_shaped(decision: RouteDecision) -> bool:
    """Whether health changed the recorded decision: a target rejected as unhealthy, or a
    ranked target missing from the chain (its breaker was open, or an account pin)."""
    ranked = {f"{c.provider}/{c.model}" for c in decision.candidates if c.rank is not None}
    chained = {target.key for target in decision.chain}
    return bool(ranked - chained) or any(c.rejected == "unhealthy" for c in decision.candidates)

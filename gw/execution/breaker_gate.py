"""Which targets of a routed chain may be called now, as their circuit breakers say.

Routing keeps unhealthy targets when nothing else is left (invariant 11: the decision is
marked degraded, never emptied). The breaker still decides whether such a target is
called: a target whose breaker is open and cooling down is not; a half-open one takes
one trial request at a time, the others skip it. So when every target of a route has
failed, one request per cooldown tries the upstream and the rest are answered at once
(503 ``no_route``) with the earliest recovery as ``Retry-After``, instead of each
hammering an upstream that is down. In a fleet (state.redis_url) that one trial is one
for all the gateways (gw/execution/health.py). Targets unhealthy for another reason
(every account locked) are still tried, the freed-first account first.
"""

from __future__ import annotations

import msgspec

from gw.errors import NoRouteError
from gw.execution.health import HealthBook, TargetHealth
from gw.routing.decision import RouteDecision, TargetRef
from gw.routing.health import TargetVerdict


class Gated(msgspec.Struct, frozen=True):
    decision: RouteDecision  # the chain without the targets that may not be called now
    trials: frozenset[str]  # the half-open trials this request holds
    recovery: float | None  # when a skipped target may next be called (monotonic)


def gate_breakers(
    decision: RouteDecision, view: dict[str, TargetVerdict], health: HealthBook, *, now: float
) -> Gated:
    """Claim the half-open trial of each chain target that offers one; a target whose
    breaker is open, or whose trial another request holds, leaves the chain."""
    chain: list[TargetRef] = []
    trials: set[str] = set()
    notes: list[str] = []
    recoveries: list[float] = []
    for target in decision.chain:
        verdict = view.get(target.key)
        if verdict is None or verdict.status == "degraded":
            chain.append(target)
        elif verdict.status == "trial" and health.claim_trial(target.key, now=now):
            chain.append(target)
            trials.add(target.key)
            notes.append(f"{target.key}: this request is its half-open trial")
        else:
            state = health.state(target.key, now=now)
            if state.breaker == "closed":  # unhealthy for its accounts: tried anyway
                chain.append(target)
                continue
            if state.breaker == "open" and state.cooldown_until is not None:
                recoveries.append(state.cooldown_until)
                notes.append(f"{target.key}: skipped, its breaker is open")
            else:
                recoveries.append(state.trial_until or now + 1.0)
                notes.append(f"{target.key}: skipped, {_trial_holder(state)}")
    if not notes:
        return Gated(decision, frozenset(), None)
    gated = msgspec.structs.replace(
        decision, chain=tuple(chain), notes=decision.notes + tuple(notes)
    )
    return Gated(gated, frozenset(trials), min(recoveries, default=None))


def _trial_holder(state: TargetHealth) -> str:
    """Who holds a half-open target's trial, in words."""
    if state.trial_holder is not None:
        return f"gateway {state.trial_holder} is sending the fleet's half-open trial"
    if state.trial_until is None:  # asked the fleet (state.redis_url); no answer yet
        return "the fleet is choosing the gateway that sends its half-open trial"
    return "another request is its half-open trial"


def breakers_open_error(decision: RouteDecision, recovery: float, *, now: float) -> NoRouteError:
    """Every target of the chain is held back by its breaker: answer at once."""
    wait = max(1.0, recovery - now)
    return NoRouteError(
        f"every target of {decision.route!r} is failing and its circuit breaker is open, so "
        f"gw is not calling it; the earliest may be tried again in {wait:.0f}s "
        "(gw health shows why; add another target to the route to fail over)",
        retry_after=wait,
    )

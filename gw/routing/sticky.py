"""Sticky sessions in routing: a pinned conversation's target goes first. Pure, no I/O.

The gateway finds the pin (gw/execution/sticky_sessions.py) and hands it here with the
decision routing made and the health view it made it with. The pin is kept only while
its target is fully healthy and still a candidate of this request:

- in the chain with no health verdict: it moves to the front ("kept on X");
- in the chain with a verdict (breaker open and relaxed, recent failures, a breaker
  trial): the chain stays as routing ordered it ("moved from X: unhealthy ...");
- rejected by routing (switched off, unhealthy, over the cost ceiling, ...), or no
  longer among the route's targets (a reload removed it): likewise moved.

A moved session is pinned again to whatever answers it, so it stays there next time.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from gw.routing.decision import RouteDecision, TargetRef
from gw.routing.health import HealthView


class SessionPin(msgspec.Struct, frozen=True, kw_only=True):
    """Where a session was last answered: a target and, when known, the account."""

    provider: str
    model: str
    account: str | None = None

    @property
    def key(self) -> str:
        return f"{self.provider}/{self.model}"


StickyOutcome = Literal["new", "kept", "moved"]


def stuck_decision(
    decision: RouteDecision, pin: SessionPin | None, health: HealthView, *, source: str
) -> tuple[RouteDecision, StickyOutcome]:
    """``decision`` with the pinned target first when the pin holds, and a note saying
    what became of the session (``source``: where its key came from)."""
    label = f"sticky session ({source})"
    if pin is None:
        note = f"{label}: new, pinned to the target that answers"
        return _noted(decision, note), "new"
    target = TargetRef(provider=pin.provider, model=pin.model)
    why = _why_moved(decision, target, health)
    if why is not None:
        return _noted(decision, f"{label}: moved from {pin.key}: {why}"), "moved"
    chain = (target, *(t for t in decision.chain if t != target))
    account = f" (account {pin.account})" if pin.account else ""
    note = f"{label}: kept on {pin.key}{account}"
    return msgspec.structs.replace(decision, chain=chain, notes=(*decision.notes, note)), "kept"


def _why_moved(decision: RouteDecision, target: TargetRef, health: HealthView) -> str | None:
    """Why the pinned ``target`` cannot keep the session, or None when it can."""
    if target in decision.chain:
        verdict = health.get(target.key)
        if verdict is None:
            return None
        return f"{verdict.status}: {verdict.reason}"
    for candidate in decision.candidates:
        if candidate.provider == target.provider and candidate.model == target.model:
            detail = f" ({candidate.detail})" if candidate.detail else ""
            return f"rejected by routing: {candidate.rejected}{detail}"
    return f"no longer a target of route {decision.route!r} for this request"


def _noted(decision: RouteDecision, note: str) -> RouteDecision:
    return msgspec.structs.replace(decision, notes=(*decision.notes, note))

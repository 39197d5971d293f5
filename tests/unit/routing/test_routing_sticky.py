"""The pinned target goes first while it is a healthy candidate, and the notes say why it
moved when it is not (gw/routing/sticky.py)."""

from __future__ import annotations

from gw.routing.decision import Candidate, RouteDecision, TargetRef
from gw.routing.health import TargetVerdict
from gw.routing.sticky import SessionPin, stuck_decision

A = TargetRef(provider="a", model="m-a")
B = TargetRef(provider="b", model="m-b")
C = TargetRef(provider="c", model="m-c")


def decision(*chain: TargetRef, rejected: TargetRef | None = None) -> RouteDecision:
    candidates = [
        Candidate(provider=t.provider, model=t.model, priority=1, weight=1.0) for t in chain
    ]
    if rejected is not None:
        candidates.append(
            Candidate(
                provider=rejected.provider, model=rejected.model, priority=1, weight=1.0,
                rejected="switched_off", detail="switched off by ops",
            )
        )  # fmt: skip
    return RouteDecision(
        route="chat", direct=False, policy="p", strategy="weighted", chain=chain,
        candidates=tuple(candidates), estimated_input_tokens=1, max_output_tokens=None,
    )  # fmt: skip


def test_a_new_session_keeps_routing_order_and_says_so() -> None:
    decided, outcome = stuck_decision(decision(A, B), None, {}, source="header")
    assert outcome == "new"
    assert decided.chain == (A, B)
    assert decided.notes == ("sticky session (header): new, pinned to the target that answers",)


def test_a_healthy_pinned_target_goes_first_the_rest_in_order() -> None:
    pin = SessionPin(provider="c", model="m-c", account="k2")
    decided, outcome = stuck_decision(decision(A, B, C), pin, {}, source="user")
    assert outcome == "kept"
    assert decided.chain == (C, A, B)
    assert decided.notes == ("sticky session (user): kept on c/m-c (account k2)",)


def test_a_pinned_target_with_a_health_verdict_moves() -> None:
    pin = SessionPin(provider="a", model="m-a")
    health = {"a/m-a": TargetVerdict(status="unhealthy", reason="breaker opened")}
    decided, outcome = stuck_decision(decision(B, A), pin, health, source="header")
    assert outcome == "moved"
    assert decided.chain == (B, A)  # relaxed and last, as routing left it
    assert decided.notes == (
        "sticky session (header): moved from a/m-a: unhealthy: breaker opened",
    )
    trial = {"a/m-a": TargetVerdict(status="trial", reason="cooldown lapsed")}
    assert stuck_decision(decision(A, B), pin, trial, source="header")[1] == "moved"


def test_a_rejected_or_removed_target_moves() -> None:
    pin = SessionPin(provider="c", model="m-c")
    decided, outcome = stuck_decision(decision(A, B, rejected=C), pin, {}, source="header")
    assert outcome == "moved"
    assert decided.chain == (A, B)
    assert decided.notes[-1] == (
        "sticky session (header): moved from c/m-c: rejected by routing: switched_off "
        "(switched off by ops)"
    )
    decided, outcome = stuck_decision(decision(A, B), pin, {}, source="header")
    assert outcome == "moved"
    assert decided.notes[-1] == (
        "sticky session (header): moved from c/m-c: no longer a target of route 'chat' "
        "for this request"
    )

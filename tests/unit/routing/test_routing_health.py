"""Routing with a health view: unhealthy out (relaxed when nothing else is left), degraded
last, a half-open trial in its usual place."""

from __future__ import annotations

from gw.config import compile_snapshot, load_config
from gw.ir import ChatRequest, TextPart, UserMessage
from gw.routing import RouteDecision, decide
from gw.routing.health import TargetVerdict

CONFIG = """
providers:
  - {name: a, kind: openai}
  - {name: b, kind: openai}
  - {name: c, kind: openai}
routes:
  - name: chat
    targets:
      - {provider: a, model: m, priority: 1}
      - {provider: b, model: m, priority: 2}
      - {provider: c, model: m, priority: 3}
"""
SNAPSHOT = compile_snapshot(load_config(CONFIG, "t.yaml"), revision=1, source="t")
REQUEST = ChatRequest(model="chat", messages=(UserMessage(content=(TextPart(text="hi"),)),))
OPEN = TargetVerdict(status="unhealthy", reason="breaker opened: 9 consecutive failures")
SHAKY = TargetVerdict(status="degraded", reason="degraded: 3 consecutive failures")
TRIAL = TargetVerdict(status="trial", reason="half-open")


def route(health: dict[str, TargetVerdict]) -> RouteDecision:
    return decide(REQUEST, SNAPSHOT, request_id="req_x", health=health)[0]


def keys(decision: RouteDecision) -> list[str]:
    return [target.key for target in decision.chain]


def test_unhealthy_targets_are_rejected_with_the_reason() -> None:
    decision = route({"a/m": OPEN})
    assert keys(decision) == ["b/m", "c/m"]
    rejected = next(c for c in decision.candidates if c.provider == "a")
    assert (rejected.rejected, rejected.detail) == ("unhealthy", OPEN.reason)
    assert not decision.degraded


def test_degraded_targets_go_last_and_a_trial_keeps_its_place() -> None:
    decision = route({"a/m": SHAKY, "b/m": TRIAL})
    assert keys(decision) == ["b/m", "c/m", "a/m"]
    assert [c.rank for c in decision.candidates] == [0, 1, 2]
    assert f"a/m ordered last: {SHAKY.reason}" in decision.notes


def test_when_every_target_is_unhealthy_they_are_tried_anyway_and_marked_degraded() -> None:
    decision = route({"a/m": OPEN, "b/m": OPEN, "c/m": OPEN})
    assert keys(decision) == ["a/m", "b/m", "c/m"]
    assert decision.degraded
    assert decision.degraded_reasons == (
        "every eligible target is unhealthy: kept, as its breaker allows",
    )
    assert all(c.relaxed for c in decision.candidates)


def test_an_empty_view_changes_nothing() -> None:
    assert keys(route({})) == ["a/m", "b/m", "c/m"]

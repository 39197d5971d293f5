"""decide(): filters, relaxation, clamping, direct addressing, and the empty-chain errors."""

from __future__ import annotations

import pytest

from gw.config import Snapshot, compile_snapshot, load_config
from gw.errors import (
    ContextLengthExceededError,
    ModelNotFoundError,
    NativeFeatureUnsupportedError,
    NoRouteError,
)
from gw.ir import ChatRequest, ImagePart, ResponseFormat, TextPart, ToolDefinition, UserMessage
from gw.routing import RouteDecision, decide, no_candidate_error
from gw.routing.decision import Candidate, TargetRef
from gw.routing.filters import format_usd, projected_cost_usd

CATALOG = """
providers:
  - {name: openai, kind: openai}
  - {name: claude, kind: anthropic}
  - {name: local, kind: openai_compatible, base_url: "http://127.0.0.1:11434/v1"}
models:
  - {provider: openai, model: mini, input_per_mtok: 0.15, output_per_mtok: 0.60,
     context_window: 128000, capabilities: [tools, vision, json_schema, json_object],
     quality: 0.7}
  - {provider: openai, model: big, input_per_mtok: 2.5, output_per_mtok: 10.0,
     context_window: 128000, capabilities: [tools, vision, json_schema, json_object],
     quality: 0.9}
  - {provider: claude, model: haiku, input_per_mtok: 0.8, output_per_mtok: 4.0,
     context_window: 200000, capabilities: [tools, vision]}
  - {provider: local, model: tiny, context_window: 8000}
"""

ROUTES = """
routes:
  - name: chat
    targets:
      - {provider: openai, model: mini, priority: 1}
      - {provider: claude, model: haiku, priority: 2}
      - {provider: local, model: tiny, priority: 3}
"""


def snapshot(extra: str = ROUTES) -> Snapshot:
    config = load_config(CATALOG + extra, "test.yaml")
    return compile_snapshot(config, revision=1, source="t")


def ask(
    model: str = "chat",
    text: str = "hello",
    *,
    image: bool = False,
    max_tokens: int | None = None,
    tools: bool = False,
    schema: bool = False,
) -> ChatRequest:
    parts: tuple[TextPart | ImagePart, ...] = (TextPart(text=text),)
    if image:
        parts += (ImagePart(url="https://example.com/cat.png"),)
    return ChatRequest(
        model=model,
        messages=(UserMessage(content=parts),),
        max_tokens=max_tokens,
        tools=(ToolDefinition(name="f"),) if tools else (),
        response_format=ResponseFormat(type="json_schema", name="s") if schema else None,
    )


def route(
    request: ChatRequest,
    snap: Snapshot | None = None,
    latency_ms: dict[str, float] | None = None,
) -> RouteDecision:
    decision, _ = decide(request, snap or snapshot(), request_id="req-1", latency_ms=latency_ms)
    return decision


def chain(decision: RouteDecision) -> list[str]:
    return [target.key for target in decision.chain]


def by_key(decision: RouteDecision) -> dict[str, Candidate]:
    return {f"{c.provider}/{c.model}": c for c in decision.candidates}


def test_a_plain_request_gets_every_target_by_priority() -> None:
    decision, policy = decide(ask(), snapshot(), request_id="req-1")
    assert chain(decision) == ["openai/mini", "claude/haiku", "local/tiny"]
    assert decision.chosen == TargetRef(provider="openai", model="mini")
    assert decision.route == "chat"
    assert decision.direct is False
    assert decision.policy == policy.name == "default"
    assert decision.strategy == "priority"
    assert decision.estimated_input_tokens > 0
    assert decision.max_output_tokens is None
    assert decision.degraded is False
    assert [c.rank for c in decision.candidates] == [0, 1, 2]


def test_missing_capability_rejects_catalogued_targets_only() -> None:
    snap = snapshot(ROUTES.replace("model: tiny", "model: mystery"))
    decision = route(ask(schema=True, image=True), snap)
    assert chain(decision) == ["openai/mini", "local/mystery"]
    rejected = by_key(decision)["claude/haiku"]
    assert rejected.rejected == "missing_capability"
    assert rejected.detail == "lacks json_schema"
    assert rejected.rank is None
    assert "no catalog entry for local/mystery; capabilities and price unknown" in decision.notes
    bare = by_key(route(ask(tools=True, image=True)))["local/tiny"]
    assert bare.detail == "lacks tools, vision"


def test_context_window_uses_estimate_plus_max_output() -> None:
    decision = route(ask(text="x" * 40_000, max_tokens=4000))  # ~10k input tokens
    assert chain(decision) == ["openai/mini", "claude/haiku"]
    tiny = by_key(decision)["local/tiny"]
    assert tiny.rejected == "context_window"
    assert tiny.detail is not None
    assert "8000-token context window" in tiny.detail
    assert "4000 output" in tiny.detail


def test_a_target_without_catalog_entry_is_never_filtered() -> None:
    snap = snapshot(
        "routes:\n  - name: chat\n    targets: [{provider: openai, model: unknown-model}]\n"
    )
    decision = route(ask(text="x" * 1_000_000, image=True, tools=True), snap)
    assert chain(decision) == ["openai/unknown-model"]
    assert decision.candidates[0].estimated_cost_usd is None


def test_cost_ceiling_rejects_expensive_targets() -> None:
    snap = snapshot(
        ROUTES.replace("local, model: tiny", "openai, model: big")
        + "policies:\n  - {name: cheap, limits: {max_cost_per_request_usd: 0.005}}\n"
    )
    decision = route(ask(), snap)
    assert chain(decision) == ["openai/mini", "claude/haiku"]
    big = by_key(decision)["openai/big"]
    assert big.rejected == "cost_ceiling"
    assert big.detail == (
        f"projected {format_usd(big.estimated_cost_usd or 0)} is above the $0.005 ceiling"
    )
    assert decision.degraded is False


@pytest.mark.parametrize("unpriced", ["exclude", "allow"])
def test_a_cost_ceiling_meets_an_unpriced_target_with_its_stated_rule(unpriced: str) -> None:
    snap = snapshot(
        "routes:\n  - name: chat\n    targets:\n"
        "      - {provider: openai, model: unknown-model}\n"
        "      - {provider: openai, model: mini, priority: 2}\n"
        "policies:\n  - {name: capped, limits: {max_cost_per_request_usd: 0.01, "
        f"unpriced: {unpriced}}}}}\n"
    )
    decision = route(ask(), snap)
    unknown = by_key(decision)["openai/unknown-model"]
    if unpriced == "exclude":
        assert chain(decision) == ["openai/mini"]
        assert unknown.rejected == "cost_ceiling"
        assert unknown.detail is not None
        assert unknown.detail.startswith("no known price, so the $0.01 ceiling cannot hold it")
    else:
        assert chain(decision) == ["openai/unknown-model", "openai/mini"]
        assert "openai/unknown-model has no price: allowed by limits.unpriced: allow" in (
            decision.notes
        )


def test_projected_cost_assumes_1024_output_tokens_without_max_tokens() -> None:
    decision = route(ask())
    mini = by_key(decision)["openai/mini"]
    expected = decision.estimated_input_tokens * 0.15 / 1e6 + 1024 * 0.60 / 1e6
    assert mini.estimated_cost_usd == pytest.approx(expected)
    bounded = by_key(route(ask(max_tokens=10)))["openai/mini"]
    assert bounded.estimated_cost_usd == pytest.approx(
        decision.estimated_input_tokens * 0.15 / 1e6 + 10 * 0.60 / 1e6
    )
    assert projected_cost_usd(None, 100, 100) is None
    # Screening computes the cost inline; it must be exactly what projected_cost_usd says.
    entry = snapshot().catalog[("openai", "mini")]
    assert bounded.estimated_cost_usd == projected_cost_usd(
        entry, decision.estimated_input_tokens, 10
    )


def test_cost_ceiling_relaxes_when_nothing_fits() -> None:
    snap = snapshot(
        "routes:\n  - name: chat\n    targets:\n"
        "      - {provider: openai, model: big}\n"
        "      - {provider: claude, model: haiku, priority: 2}\n"
        "policies:\n  - {name: stingy, limits: {max_cost_per_request_usd: 0.0001}}\n"
    )
    decision = route(ask(), snap)
    assert chain(decision) == ["openai/big", "claude/haiku"]
    assert all(c.relaxed and c.rejected is None for c in decision.candidates)
    assert decision.degraded is True
    assert decision.degraded_reasons == ("cost ceiling $0.0001 relaxed: no target fits",)


def test_capability_rejections_are_never_relaxed() -> None:
    snap = snapshot(
        "routes:\n  - name: chat\n    targets:\n"
        "      - {provider: openai, model: big}\n"
        "      - {provider: claude, model: haiku}\n"
        "policies:\n  - {name: stingy, limits: {max_cost_per_request_usd: 0.0001}}\n"
    )
    decision = route(ask(schema=True), snap)
    assert chain(decision) == ["openai/big"]
    assert by_key(decision)["openai/big"].relaxed is True
    assert by_key(decision)["claude/haiku"].rejected == "missing_capability"
    assert decision.degraded is True


def test_max_tokens_is_never_invented() -> None:
    snap = snapshot(ROUTES + "policies:\n  - {name: capped, limits: {max_output_tokens: 32768}}\n")
    assert route(ask(), snap).max_output_tokens is None
    assert route(ask(max_tokens=100), snap).max_output_tokens == 100


def test_max_tokens_above_the_ceiling_is_clamped_with_a_note() -> None:
    snap = snapshot(ROUTES + "policies:\n  - {name: capped, limits: {max_output_tokens: 32768}}\n")
    decision = route(ask(max_tokens=50000), snap)
    assert decision.max_output_tokens == 32768
    assert "max_tokens 50000 clamped to policy ceiling 32768" in decision.notes


def test_direct_provider_model_is_marked_direct() -> None:
    decision = route(ask(model="claude/haiku"))
    assert decision.direct is True
    assert decision.route == "claude/haiku"
    assert chain(decision) == ["claude/haiku"]
    assert by_key(decision)["claude/haiku"].estimated_cost_usd is not None


def test_direct_address_still_checks_the_catalog() -> None:
    decision = route(ask(model="claude/haiku", schema=True))
    assert decision.chain == ()
    assert isinstance(no_candidate_error(decision), NativeFeatureUnsupportedError)


def test_unknown_model_is_model_not_found() -> None:
    with pytest.raises(ModelNotFoundError):
        route(ask(model="nope"))
    with pytest.raises(ModelNotFoundError):
        route(ask(model="unknown-provider/x"))


def test_the_policy_strategy_overrides_the_route() -> None:
    snap = snapshot(ROUTES + "policies:\n  - {name: thrifty, strategy: lowest_cost}\n")
    decision = route(ask(), snap)
    assert decision.strategy == "lowest_cost"
    assert chain(decision) == ["local/tiny", "openai/mini", "claude/haiku"]  # tiny is free


def test_highest_quality_reads_the_catalog() -> None:
    snap = snapshot(
        "routes:\n  - name: chat\n    strategy: highest_quality\n    targets:\n"
        "      - {provider: claude, model: haiku}\n"
        "      - {provider: openai, model: mini}\n"
        "      - {provider: openai, model: big}\n"
    )
    decision = route(ask(), snap)
    assert chain(decision) == ["openai/big", "openai/mini", "claude/haiku"]
    assert [c.score for c in decision.candidates] == [0.9, 0.7, None]


def test_lowest_latency_uses_the_view_and_notes_its_absence() -> None:
    snap = snapshot(ROUTES.replace("name: chat", "name: chat\n    strategy: lowest_latency"))
    empty = route(ask(), snap)
    assert chain(empty) == ["openai/mini", "claude/haiku", "local/tiny"]
    assert "no latency observed yet; ordered by priority" in empty.notes
    measured = route(
        ask(), snap, latency_ms={"local/tiny": 50.0, "claude/haiku": 300.0, "openai/mini": 900.0}
    )
    assert chain(measured) == ["local/tiny", "claude/haiku", "openai/mini"]


def test_weighted_rejects_zero_weight_and_lists_rejections_after_the_chain() -> None:
    snap = snapshot(
        "routes:\n  - name: chat\n    strategy: weighted\n    targets:\n"
        "      - {provider: claude, model: haiku, weight: 0}\n"
        "      - {provider: local, model: mystery, weight: 1}\n"
        "      - {provider: openai, model: mini, weight: 1}\n"
    )
    decision = route(ask(schema=True), snap)
    assert sorted(chain(decision)) == ["local/mystery", "openai/mini"]
    rejected = [(c.model, c.rejected) for c in decision.candidates[2:]]
    assert rejected == [("haiku", "missing_capability")]
    no_schema = route(ask(), snap)
    assert [(c.model, c.rejected) for c in no_schema.candidates[2:]] == [("haiku", "zero_weight")]


def test_policy_is_chosen_by_tenant() -> None:
    snap = snapshot(
        ROUTES + "policies:\n"
        "  - {name: everyone, match: {routes: ['*']}}\n"
        "  - {name: team-a, match: {tenants: [team-a]}, priority: 1}\n"
    )
    assert decide(ask(), snap, request_id="r", tenant="team-a")[1].name == "team-a"
    assert decide(ask(), snap, request_id="r", tenant="team-b")[1].name == "everyone"


def test_only_missing_capabilities_is_native_feature_unsupported() -> None:
    snap = snapshot("routes:\n  - name: chat\n    targets: [{provider: claude, model: haiku}]\n")
    decision = route(ask(schema=True), snap)
    error = no_candidate_error(decision)
    assert isinstance(error, NativeFeatureUnsupportedError)
    assert error.param is None
    assert "json_schema" in error.message
    assert "claude/haiku" in error.message


def test_only_context_windows_is_context_length_exceeded() -> None:
    snap = snapshot("routes:\n  - name: chat\n    targets: [{provider: local, model: tiny}]\n")
    decision = route(ask(text="x" * 40_000), snap)
    error = no_candidate_error(decision)
    assert isinstance(error, ContextLengthExceededError)
    assert str(decision.estimated_input_tokens) in error.message
    assert "8000" in error.message


def test_mixed_rejections_are_no_route() -> None:
    snap = snapshot(
        "routes:\n  - name: chat\n    targets:\n"
        "      - {provider: claude, model: haiku}\n"
        "      - {provider: openai, model: mini}\n"
    )
    # haiku lacks json_schema; mini's window is too small for this request.
    decision = route(ask(text="x" * 600_000, schema=True), snap)
    assert decision.chain == ()
    reasons = {c.rejected for c in decision.candidates}
    assert reasons == {"missing_capability", "context_window"}
    error = no_candidate_error(decision)
    assert isinstance(error, NoRouteError)
    assert "lacks json_schema" in error.message
    assert "context window" in error.message


def test_a_decision_with_no_candidates_is_no_route() -> None:
    empty = RouteDecision(
        route="chat",
        direct=False,
        policy="default",
        strategy="priority",
        chain=(),
        candidates=(),
        estimated_input_tokens=1,
        max_output_tokens=None,
    )
    assert isinstance(no_candidate_error(empty), NoRouteError)

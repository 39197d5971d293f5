"""Properties of routing over generated routes, policies and requests."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gw.config import Snapshot, compile_snapshot, load_config
from gw.ir import ChatRequest, ImagePart, ResponseFormat, TextPart, ToolDefinition, UserMessage
from gw.routing import decide, no_candidate_error
from gw.routing.decision import Candidate
from gw.routing.strategies import rank_by_weight

PROVIDERS = [
    {"name": "openai", "kind": "openai"},
    {"name": "claude", "kind": "anthropic"},
]
CATALOG = [
    {
        "provider": "openai",
        "model": "mini",
        "input_per_mtok": 0.15,
        "output_per_mtok": 0.6,
        "context_window": 16000,
        "capabilities": ["tools", "vision", "json_schema"],
        "quality": 0.7,
    },
    {
        "provider": "claude",
        "model": "haiku",
        "input_per_mtok": 0.8,
        "output_per_mtok": 4.0,
        "context_window": 200000,
        "capabilities": ["tools", "vision"],
    },
    {"provider": "openai", "model": "tiny", "context_window": 4000},
]
MODELS = [("openai", "mini"), ("claude", "haiku"), ("openai", "tiny"), ("claude", "mystery")]
STRATEGIES = ["priority", "weighted", "lowest_cost", "lowest_latency", "highest_quality"]

# (provider, model), priority, weight
targets = st.lists(
    st.tuples(st.sampled_from(MODELS), st.integers(0, 3), st.sampled_from([0.0, 0.5, 1.0, 3.0])),
    min_size=1,
    max_size=5,
)
limits = st.fixed_dictionaries(
    {},
    optional={
        "max_output_tokens": st.integers(1, 50_000),
        "max_cost_per_request_usd": st.sampled_from([0.0, 0.0001, 0.01, 1.0]),
    },
)


@st.composite
def snapshots(draw: st.DrawFn) -> Snapshot:
    strategy = draw(st.sampled_from(STRATEGIES))
    chosen = draw(targets)
    if strategy == "weighted" and not any(weight > 0 for _, _, weight in chosen):
        chosen[0] = (chosen[0][0], chosen[0][1], 1.0)  # validation demands a positive weight
    data: dict[str, Any] = {
        "providers": PROVIDERS,
        "models": CATALOG,
        "routes": [
            {
                "name": "chat",
                "strategy": strategy,
                "targets": [
                    {"provider": provider, "model": model, "priority": priority, "weight": weight}
                    for (provider, model), priority, weight in chosen
                ],
            }
        ],
        "policies": [{"name": "p", "limits": draw(limits)}],
    }
    config = load_config(json.dumps(data), "test.yaml")  # JSON is YAML
    return compile_snapshot(config, revision=1, source="t")


@st.composite
def requests(draw: st.DrawFn) -> ChatRequest:
    parts: tuple[TextPart | ImagePart, ...] = (TextPart(text="x" * draw(st.integers(0, 80_000))),)
    if draw(st.booleans()):
        parts += (ImagePart(url="https://example.com/a.png"),)
    return ChatRequest(
        model=draw(st.sampled_from(["chat", "openai/mini", "claude/mystery"])),
        messages=(UserMessage(content=parts),),
        tools=(ToolDefinition(name="f"),) if draw(st.booleans()) else (),
        response_format=draw(st.sampled_from([None, ResponseFormat(type="json_schema", name="s")])),
        max_tokens=draw(st.none() | st.integers(1, 100_000)),
        stream=draw(st.booleans()),
    )


request_ids = st.text(min_size=1, max_size=20)
latencies = st.none() | st.dictionaries(
    st.sampled_from([f"{p}/{m}" for p, m in MODELS]), st.floats(1, 5000)
)


@settings(max_examples=100, deadline=None)
@given(snapshots(), requests(), request_ids, latencies)
def test_decide_is_deterministic(
    snap: Snapshot, request: ChatRequest, request_id: str, latency: dict[str, float] | None
) -> None:
    first = decide(request, snap, request_id=request_id, latency_ms=latency)
    again = decide(request, snap, request_id=request_id, latency_ms=latency)
    recompiled = compile_snapshot(snap.config, revision=2, source="again")
    fresh = decide(request, recompiled, request_id=request_id, latency_ms=latency)
    assert first == again == fresh


@settings(max_examples=100, deadline=None)
@given(snapshots(), requests(), request_ids, latencies)
def test_chain_holds_only_kept_candidates_in_rank_order(
    snap: Snapshot, request: ChatRequest, request_id: str, latency: dict[str, float] | None
) -> None:
    decision, _ = decide(request, snap, request_id=request_id, latency_ms=latency)
    route = snap.resolve_model(request.model)
    assert len(decision.candidates) == len(route.targets)
    kept = [c for c in decision.candidates if c.rank is not None]
    assert [c.rank for c in kept] == list(range(len(decision.chain)))
    assert all(c.rejected is None for c in kept)
    assert all(c.rejected is not None for c in decision.candidates if c.rank is None)
    assert [(c.provider, c.model) for c in kept] == [(t.provider, t.model) for t in decision.chain]
    assert decision.degraded == any(c.relaxed for c in decision.candidates)
    if not decision.chain:
        error = no_candidate_error(decision)
        assert error.code in {"native_feature_unsupported", "context_length_exceeded", "no_route"}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.1, 1.0, 2.5, 10.0]), min_size=1, max_size=8), request_ids)
def test_weighted_order_is_a_permutation_of_positive_weights(
    weights: list[float], request_id: str
) -> None:
    candidates = [
        Candidate(provider="p", model=f"m{i}", priority=1, weight=w) for i, w in enumerate(weights)
    ]
    ranking = rank_by_weight(candidates, request_id=request_id)
    positive = {c.model for c in candidates if c.weight > 0}
    expected = positive or {c.model for c in candidates}
    ranked = [c.model for c in ranking.ranked]
    assert sorted(ranked) == sorted(expected)
    assert {c.model for c in ranking.rejected} == {c.model for c in candidates} - expected
    assert all(c.rejected == "zero_weight" and c.rank is None for c in ranking.rejected)
    assert rank_by_weight(candidates, request_id=request_id) == ranking

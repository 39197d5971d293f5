"""Request hints (x-gw-strategy, x-gw-max-cost-usd, x-gw-provider) only narrow routing."""

from __future__ import annotations

import pytest

from gw.config import compile_snapshot, load_config
from gw.errors import InvalidRequestError
from gw.ir import ChatRequest, TextPart, UserMessage
from gw.routing import decide
from gw.routing.hints import RoutingHints
from gw.server.inference.hints import parse_hints

CONFIG = """
providers:
  - {name: openai, kind: openai}
  - {name: claude, kind: anthropic}
models:
  - {provider: openai, model: big, input_per_mtok: 2.5, output_per_mtok: 10.0}
  - {provider: claude, model: haiku, input_per_mtok: 0.8, output_per_mtok: 4.0}
routes:
  - name: chat
    targets:
      - {provider: openai, model: big, priority: 1}
      - {provider: claude, model: haiku, priority: 2}
policies:
  - name: capped
    match: {routes: [chat]}
    limits: {max_cost_per_request_usd: 1.0}
"""
SNAPSHOT = compile_snapshot(load_config(CONFIG, "t.yaml"), revision=1, source="t")
REQUEST = ChatRequest(
    model="chat", messages=(UserMessage(content=(TextPart(text="hi"),)),), max_tokens=100
)


def chain(hints: RoutingHints | None) -> tuple[list[str], tuple[str, ...]]:
    decision, _ = decide(REQUEST, SNAPSHOT, request_id="req_h", hints=hints)
    return [target.key for target in decision.chain], decision.notes


def test_without_hints_priority_orders_the_route() -> None:
    assert chain(None)[0] == ["openai/big", "claude/haiku"]


def test_a_strategy_hint_reorders_the_same_candidates() -> None:
    keys, notes = chain(RoutingHints(strategy="lowest_cost"))
    assert keys == ["claude/haiku", "openai/big"]
    assert "x-gw-strategy: lowest_cost instead of priority" in notes


def test_a_cost_hint_lowers_the_ceiling_and_never_raises_it() -> None:
    # 100 output tokens: big ~ $0.001, haiku ~ $0.0004.
    keys, notes = chain(RoutingHints(max_cost_usd=0.0005))
    assert keys == ["claude/haiku"]
    assert any(note.startswith("x-gw-max-cost-usd: cost ceiling") for note in notes)
    keys, notes = chain(RoutingHints(max_cost_usd=50.0))  # above the policy's $1: ignored
    assert keys == ["openai/big", "claude/haiku"]
    assert not any(note.startswith("x-gw-max-cost-usd") for note in notes)


def test_a_provider_hint_keeps_only_that_providers_targets() -> None:
    keys, notes = chain(RoutingHints(provider="claude"))
    assert keys == ["claude/haiku"]
    assert "x-gw-provider: only targets on claude" in notes
    with pytest.raises(InvalidRequestError) as caught:
        chain(RoutingHints(provider="gemini"))
    assert caught.value.param == "x-gw-provider"


def test_headers_parse_into_hints_and_bad_values_name_the_header() -> None:
    assert parse_hints({}) is None
    assert parse_hints({"x-gw-strategy": "weighted", "x-gw-max-cost-usd": "0.25"}) == (
        RoutingHints(strategy="weighted", max_cost_usd=0.25)
    )
    assert parse_hints({"x-gw-provider": "claude"}) == RoutingHints(provider="claude")
    for header, value in (
        ("x-gw-strategy", "fastest"),
        ("x-gw-max-cost-usd", "cheap"),
        ("x-gw-max-cost-usd", "-1"),
        ("x-gw-max-cost-usd", "nan"),
    ):
        with pytest.raises(InvalidRequestError) as caught:
            parse_hints({header: value})
        assert caught.value.param == header


def test_a_session_header_is_a_hint_that_orders_nothing_by_itself() -> None:
    hints = parse_hints({"x-gw-session-id": " conv-1 "})
    assert hints == RoutingHints(session="conv-1")
    assert chain(hints)[0] == ["openai/big", "claude/haiku"]
    assert parse_hints({"x-gw-session-id": "  "}) == RoutingHints()

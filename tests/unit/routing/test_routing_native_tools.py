"""Routing and provider-side tools: a request that needs Anthropic's web search goes only
to Anthropic targets; with none left, the error names the tool and what to add. Adaptive
thinking needs the ``reasoning`` capability like any other reasoning."""

from __future__ import annotations

from gw.config import Snapshot, compile_snapshot, load_config
from gw.errors import NativeFeatureUnsupportedError
from gw.ir import ChatRequest, NativeBlock, Reasoning, TextPart, ToolDefinition, UserMessage
from gw.routing import RouteDecision, decide, no_candidate_error
from gw.routing.needs import required_capabilities

CONFIG = """
providers:
  - {name: openai, kind: openai}
  - {name: claude, kind: anthropic}
  - {name: gem, kind: gemini}
models:
  - {provider: openai, model: mini, input_per_mtok: 0.15, output_per_mtok: 0.60,
     context_window: 128000, capabilities: [tools]}
routes:
  - name: chat
    targets:
      - {provider: openai, model: mini, priority: 1}
      - {provider: gem, model: flash, priority: 2}
      - {provider: claude, model: haiku, priority: 3}
  - name: no-claude
    targets:
      - {provider: openai, model: mini}
      - {provider: gem, model: flash}
"""
SEARCH = NativeBlock(format="anthropic", data={"type": "web_search_20250305", "name": "web_search"})
HI = (UserMessage(content=(TextPart(text="hello"),)),)


def snapshot() -> Snapshot:
    return compile_snapshot(load_config(CONFIG, "test.yaml"), revision=1, source="t")


def route(request: ChatRequest) -> RouteDecision:
    decision, _ = decide(request, snapshot(), request_id="req-1")
    return decision


def test_a_server_tool_alone_goes_only_to_targets_that_run_it() -> None:
    decision = route(ChatRequest(model="chat", messages=HI, native_tools=(SEARCH,)))
    assert [ref.key for ref in decision.chain] == ["claude/haiku"]
    rejected = {c.provider: c for c in decision.candidates if c.rejected is not None}
    assert set(rejected) == {"openai", "gem"}
    for candidate in rejected.values():
        assert candidate.rejected == "native_tools"
        assert candidate.detail is not None
        assert "web_search_20250305" in candidate.detail
        assert "kind: anthropic" in candidate.detail


def test_with_no_target_left_the_error_names_the_tool_and_what_to_add() -> None:
    decision = route(ChatRequest(model="no-claude", messages=HI, native_tools=(SEARCH,)))
    assert decision.chain == ()
    error = no_candidate_error(decision)
    assert isinstance(error, NativeFeatureUnsupportedError)
    assert error.status == 400
    assert "web_search_20250305" in error.message
    assert "kind: anthropic for Anthropic's server tools" in error.message


def test_server_tools_beside_function_tools_narrow_nothing() -> None:
    """Offered beside the client's own tools they are optional (needs.py): any target."""
    request = ChatRequest(
        model="chat", messages=HI, tools=(ToolDefinition(name="f"),), native_tools=(SEARCH,)
    )
    assert [ref.key for ref in route(request).chain] == ["openai/mini", "gem/flash", "claude/haiku"]


def test_a_type_that_is_not_a_name_is_not_quoted() -> None:
    odd = NativeBlock(format="anthropic", data={"type": "say hello to everyone"})
    decision = route(ChatRequest(model="no-claude", messages=HI, native_tools=(odd,)))
    message = no_candidate_error(decision).message
    assert "say hello" not in message
    assert "a tool of format anthropic" in message


def test_adaptive_thinking_needs_reasoning() -> None:
    request = ChatRequest(model="chat", messages=HI, reasoning=Reasoning(adaptive=True))
    assert required_capabilities(request) == {"reasoning"}

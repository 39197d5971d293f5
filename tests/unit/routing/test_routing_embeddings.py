"""Routing an embeddings request: the ``embeddings`` capability, input-only estimates."""

from __future__ import annotations

import pytest

from gw.config import Snapshot, compile_snapshot, load_config
from gw.errors import ContextLengthExceededError, NativeFeatureUnsupportedError
from gw.ir import EmbeddingInput, EmbeddingRequest
from gw.routing import decide, no_candidate_error
from gw.routing.estimate import embedding_input_tokens, estimate_embedding_tokens
from gw.routing.inputs import routing_inputs

CONFIG = """
providers:
  - {name: openai, kind: openai}
  - {name: claude, kind: anthropic}
  - {name: local, kind: openai_compatible, base_url: "http://127.0.0.1:11434/v1"}
models:
  - {provider: openai, model: small, input_per_mtok: 0.02, output_per_mtok: 5.0,
     context_window: 8191, capabilities: [embeddings]}
  - {provider: openai, model: large, input_per_mtok: 0.13, context_window: 8191,
     capabilities: [embeddings]}
  - {provider: claude, model: haiku, input_per_mtok: 0.8, output_per_mtok: 4.0,
     context_window: 200000, capabilities: [tools, vision]}
  - {provider: local, model: nomic, context_window: 100, capabilities: [embeddings]}
routes:
  - name: embed
    targets:
      - {provider: claude, model: haiku, priority: 1}
      - {provider: openai, model: small, priority: 2}
      - {provider: openai, model: large, priority: 3}
  - name: chat-only
    targets: [{provider: claude, model: haiku}]
  - name: cheap
    strategy: lowest_cost
    targets:
      - {provider: openai, model: large}
      - {provider: openai, model: small}
  - name: tiny-window
    targets: [{provider: local, model: nomic}]
policies:
  - name: chat-default
    match: {routes: ["*"]}
  - name: for-embeddings
    match: {routes: ["*"], capabilities: [embeddings]}
    limits: {max_output_tokens: 100, max_cost_per_request_usd: 0.01}
"""


def snapshot() -> Snapshot:
    return compile_snapshot(load_config(CONFIG, "test.yaml"), revision=1, source="t")


def embed(model: str, *inputs: EmbeddingInput) -> EmbeddingRequest:
    return EmbeddingRequest(model=model, inputs=inputs or ("hello world",))


def test_targets_without_the_embeddings_capability_are_rejected() -> None:
    decision, _ = decide(embed("embed"), snapshot(), request_id="req-1")
    assert [target.key for target in decision.chain] == ["openai/small", "openai/large"]
    [rejected] = [c for c in decision.candidates if c.rejected]
    assert (rejected.provider, rejected.rejected) == ("claude", "missing_capability")
    assert rejected.detail == "lacks embeddings"


def test_a_route_with_no_embedding_model_is_native_feature_unsupported() -> None:
    decision, _ = decide(embed("chat-only"), snapshot(), request_id="req-1")
    assert decision.chain == ()
    error = no_candidate_error(decision, input_param="input")
    assert isinstance(error, NativeFeatureUnsupportedError)
    assert "lacks embeddings" in error.message


def test_no_output_tokens_are_projected_or_clamped() -> None:
    decision, policy = decide(embed("cheap", "x" * 400), snapshot(), request_id="req-1")
    assert policy.name == "for-embeddings"  # a policy may match on the capability
    assert decision.estimated_input_tokens == 100
    assert decision.max_output_tokens == 0
    assert decision.notes == ()
    # lowest_cost ranks by input price alone: small's high output price does not count.
    assert [target.key for target in decision.chain] == ["openai/small", "openai/large"]
    costs = {c.model: c.estimated_cost_usd for c in decision.candidates}
    assert costs == {
        "small": pytest.approx(100 * 0.02 / 1e6),
        "large": pytest.approx(100 * 0.13 / 1e6),
    }


def test_the_context_window_applies_to_each_input_not_their_sum() -> None:
    many = ("abc " * 16,) * 10  # 16 tokens each, 160 together
    decision, _ = decide(embed("tiny-window", *many), snapshot(), request_id="req-1")
    assert [target.key for target in decision.chain] == ["local/nomic"]
    assert decision.estimated_input_tokens == 160
    long = "word " * 100  # 125 tokens, over the 100-token window alone
    decision, _ = decide(embed("tiny-window", "short", long), snapshot(), request_id="req-1")
    assert decision.chain == ()
    assert decision.candidates[0].rejected == "context_window"
    assert "about 125 input tokens" in (decision.candidates[0].detail or "")
    error = no_candidate_error(decision, input_param="input")
    assert isinstance(error, ContextLengthExceededError)
    assert error.param == "input"


def test_direct_addressing_without_a_catalog_entry_is_allowed() -> None:
    decision, _ = decide(embed("local/unlisted"), snapshot(), request_id="req-1")
    assert [target.key for target in decision.chain] == ["local/unlisted"]
    assert decision.direct


def test_token_estimates() -> None:
    assert embedding_input_tokens("abcd") == 1
    assert embedding_input_tokens("abcde") == 2
    assert embedding_input_tokens((1, 2, 3)) == 3
    assert estimate_embedding_tokens(embed("m", "abcde", (1, 2, 3))) == 5
    # For cost all inputs count; for the context window the largest alone.
    inputs = routing_inputs(embed("m", "abcde", (1, 2, 3)))
    assert (inputs.input_tokens, inputs.window_tokens) == (5, 3)

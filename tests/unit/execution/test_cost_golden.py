"""Golden costs: a realistic upstream body of each provider, with cached and reasoning
tokens, decoded by that provider's codec and priced at the shipped catalog's entry.

Each expected number is worked out by hand in the test, so a change to the cost rule,
a codec's usage mapping or a catalog price shows up here as a reviewed diff.
"""

from __future__ import annotations

import json

import pytest

from gw.codecs.anthropic_messages.upstream_response import (
    decode_upstream_response as decode_anthropic,
)
from gw.codecs.gemini.upstream_response import decode_upstream_response as decode_gemini
from gw.codecs.openai_chat.upstream_response import decode_upstream_response as decode_openai
from gw.config.schema import ModelFacts, ProviderKind
from gw.execution.cost import cost_usd
from gw.ir import Usage
from gw.startup.checks import shipped_catalog

CATALOG = shipped_catalog()


def price(kind: ProviderKind, model: str) -> ModelFacts:
    return CATALOG[kind][model]


def body(data: object) -> bytes:
    return json.dumps(data).encode()


def test_openai_o4_mini_with_cached_and_reasoning_tokens() -> None:
    response = decode_openai(
        body(
            {
                "id": "chatcmpl-CXk2",
                "object": "chat.completion",
                "created": 1764547200,
                "model": "o4-mini-2025-04-16",
                "choices": [
                    {
                        "index": 0,
                        "message": {
                            "role": "assistant",
                            "content": "42",
                            "refusal": None,
                            "annotations": [],
                        },
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": 2400,
                    "completion_tokens": 900,
                    "total_tokens": 3300,
                    "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
                    "completion_tokens_details": {
                        "reasoning_tokens": 640,
                        "audio_tokens": 0,
                        "accepted_prediction_tokens": 0,
                        "rejected_prediction_tokens": 0,
                    },
                },
                "service_tier": "default",
                "system_fingerprint": None,
            }
        )
    )
    assert response.usage == Usage(
        input_tokens=2400, output_tokens=900, cached_input_tokens=1920, reasoning_tokens=640
    )
    # o4-mini: $1.10 in, $0.275 cached, $4.40 out; the 640 reasoning tokens are inside the
    # 900 completion tokens and billed once, at the output price.
    expected = (480 * 1.10 + 1920 * 0.275 + 900 * 4.40) / 1e6
    assert cost_usd(price("openai", "o4-mini"), response.usage) == 0.005016 == round(expected, 10)


def test_azure_openai_o3_deployment_with_cached_and_reasoning_tokens() -> None:
    response = decode_openai(
        body(
            {
                "id": "chatcmpl-AZ91",
                "object": "chat.completion",
                "created": 1764547200,
                "model": "o3-2025-04-16",
                "prompt_filter_results": [
                    {"prompt_index": 0, "content_filter_results": {"hate": {"filtered": False}}}
                ],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "Done."},
                        "finish_reason": "stop",
                        "content_filter_results": {"hate": {"filtered": False}},
                    }
                ],
                "usage": {
                    "prompt_tokens": 3000,
                    "completion_tokens": 1500,
                    "total_tokens": 4500,
                    "prompt_tokens_details": {"cached_tokens": 1024},
                    "completion_tokens_details": {"reasoning_tokens": 1200},
                },
            }
        )
    )
    assert response.usage == Usage(
        input_tokens=3000, output_tokens=1500, cached_input_tokens=1024, reasoning_tokens=1200
    )
    # An Azure deployment named o3 takes OpenAI's o3 entry: $2 in, $0.50 cached, $8 out.
    expected = (1976 * 2.00 + 1024 * 0.50 + 1500 * 8.00) / 1e6
    assert cost_usd(price("azure_openai", "o3"), response.usage) == 0.016464 == round(expected, 10)


def test_anthropic_sonnet_with_cache_reads_writes_and_thinking() -> None:
    response = decode_anthropic(
        body(
            {
                "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5-20250929",
                "content": [
                    {"type": "thinking", "thinking": "Let me see.", "signature": "EqQBCgIYAhIM"},
                    {"type": "text", "text": "Here it is."},
                ],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {
                    "input_tokens": 150,
                    "cache_creation_input_tokens": 2000,
                    "cache_read_input_tokens": 8000,
                    "cache_creation": {
                        "ephemeral_5m_input_tokens": 2000,
                        "ephemeral_1h_input_tokens": 0,
                    },
                    "output_tokens": 700,
                    "output_tokens_details": {"thinking_tokens": 450},
                    "service_tier": "standard",
                },
            }
        )
    )
    # Anthropic reports uncached, cache-read and cache-write input apart; the IR adds them.
    assert response.usage == Usage(
        input_tokens=10150,
        output_tokens=700,
        cached_input_tokens=8000,
        cache_write_tokens=2000,
        reasoning_tokens=450,
    )
    # Sonnet 4.5: $3 in, $0.30 cache reads, $3.75 5-minute cache writes, $15 out.
    expected = (150 * 3.00 + 8000 * 0.30 + 2000 * 3.75 + 700 * 15.00) / 1e6
    entry = price("anthropic", "claude-sonnet-4-5-20250929")
    assert cost_usd(entry, response.usage) == 0.02085 == round(expected, 10)


def test_gemini_flash_with_cached_content_and_thoughts() -> None:
    response = decode_gemini(
        body(
            {
                "candidates": [
                    {
                        "content": {
                            "parts": [
                                {"text": "Considering the options.", "thought": True},
                                {"text": "Use the second one."},
                            ],
                            "role": "model",
                        },
                        "finishReason": "STOP",
                        "index": 0,
                    }
                ],
                "usageMetadata": {
                    "promptTokenCount": 12000,
                    "candidatesTokenCount": 400,
                    "totalTokenCount": 13600,
                    "cachedContentTokenCount": 10000,
                    "thoughtsTokenCount": 1200,
                    "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 12000}],
                    "cacheTokensDetails": [{"modality": "TEXT", "tokenCount": 10000}],
                },
                "modelVersion": "gemini-2.5-flash",
                "responseId": "mAitaJ3bKqfHnvgPn8mxsQk",
            }
        ),
        model="gemini-2.5-flash",
    )
    # Gemini's candidatesTokenCount leaves the thoughts out; the IR's output counts them.
    assert response.usage == Usage(
        input_tokens=12000, output_tokens=1600, cached_input_tokens=10000, reasoning_tokens=1200
    )
    # 2.5 Flash: $0.30 in, $0.03 cached, $2.50 out (thinking included).
    expected = (2000 * 0.30 + 10000 * 0.03 + 1600 * 2.50) / 1e6
    assert cost_usd(price("gemini", "gemini-2.5-flash"), response.usage) == 0.0049
    assert round(expected, 10) == 0.0049


def test_each_token_kind_has_its_own_price_and_is_billed_once() -> None:
    entry = ModelFacts(
        input_per_mtok=1.0,
        cached_input_per_mtok=0.1,
        cache_write_per_mtok=1.25,
        output_per_mtok=10.0,
        reasoning_per_mtok=20.0,
    )
    usage = Usage(
        input_tokens=1_000_000,
        cached_input_tokens=500_000,
        cache_write_tokens=200_000,
        output_tokens=100_000,
        reasoning_tokens=40_000,
    )
    assert cost_usd(entry, usage) == 0.3 * 1.0 + 0.5 * 0.1 + 0.2 * 1.25 + 0.06 * 10 + 0.04 * 20


def test_unset_prices_fall_back_to_input_and_output() -> None:
    entry = ModelFacts(input_per_mtok=2.0, output_per_mtok=8.0)
    usage = Usage(
        input_tokens=1000,
        cached_input_tokens=300,
        cache_write_tokens=200,
        output_tokens=500,
        reasoning_tokens=400,
    )
    # Cache reads and writes at the input price, reasoning at the output price: the same
    # as billing the totals, so nothing is counted twice.
    assert cost_usd(entry, usage) == (1000 * 2.0 + 500 * 8.0) / 1e6


@pytest.mark.parametrize(
    "usage",
    [
        Usage(input_tokens=100, cached_input_tokens=500, output_tokens=10),
        Usage(input_tokens=100, cached_input_tokens=60, cache_write_tokens=60, output_tokens=10),
        Usage(input_tokens=100, output_tokens=10, reasoning_tokens=50),
        Usage(input_tokens=100, output_tokens=10, cached_input_tokens=-5, reasoning_tokens=-5),
    ],
)
def test_inconsistent_parts_are_clamped_to_their_whole(usage: Usage) -> None:
    entry = ModelFacts(
        input_per_mtok=1.0,
        cached_input_per_mtok=0.5,
        cache_write_per_mtok=2.0,
        output_per_mtok=4.0,
        reasoning_per_mtok=4.0,
    )
    cost = cost_usd(entry, usage)
    assert cost is not None
    assert 0 < cost <= (100 * 2.0 + 10 * 4.0) / 1e6


def test_unknown_price_or_usage_has_no_cost() -> None:
    assert cost_usd(None, Usage(input_tokens=1)) is None
    assert cost_usd(ModelFacts(input_per_mtok=1.0), None) is None

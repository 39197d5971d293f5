"""The shipped catalog (gw/catalog.yaml) and how a snapshot merges it under config."""

from __future__ import annotations

from typing import get_args

import pytest

from gw.config import ConfigError, compile_snapshot, load_config
from gw.config.catalog import parse_catalog, prices
from gw.config.schema import ProviderKind
from gw.ir import ChatRequest, TextPart, ToolDefinition, UserMessage
from gw.routing.router import decide
from gw.startup.checks import shipped_catalog

SHIPPED = shipped_catalog()

CONFIG = """
providers:
  - {name: openai-prod, kind: openai, api_key: env:K}
  - {name: openai-backup, kind: openai, api_key: env:K}
  - {name: claude, kind: anthropic, api_key: env:K}
  - {name: local, kind: openai_compatible, base_url: "http://127.0.0.1:9/v1"}
models:
  - {provider: openai-prod, model: gpt-4o-mini, input_per_mtok: 0.01, output_per_mtok: 0.02}
routes:
  - name: chat
    targets: [{provider: openai-prod, model: gpt-4o-mini}]
  - name: backup
    targets: [{provider: openai-backup, model: gpt-4o-mini}]
"""


def test_the_shipped_catalog_covers_each_hosted_provider_kind() -> None:
    assert set(SHIPPED) <= set(get_args(ProviderKind))
    for kind in ("openai", "azure_openai", "anthropic", "gemini"):
        assert SHIPPED[kind], kind
    for model in ("gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "o3", "o4-mini"):
        assert SHIPPED["openai"][model].input_per_mtok > 0, model
    for model in ("text-embedding-3-small", "text-embedding-3-large"):
        assert SHIPPED["openai"][model].capabilities == ("embeddings",)
    for model in ("gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite"):
        assert "reasoning" in SHIPPED["gemini"][model].capabilities
    assert SHIPPED["gemini"]["gemini-embedding-001"].capabilities == ("embeddings",)
    assert SHIPPED["azure_openai"] == SHIPPED["openai"]
    assert SHIPPED["openai_responses"] == SHIPPED["openai"]


def test_every_shipped_entry_is_complete_and_sane() -> None:
    for kind, models in SHIPPED.items():
        for model, facts in models.items():
            where = f"{kind}/{model}"
            assert facts.capabilities, where
            assert facts.context_window, where
            assert min(prices(facts)) >= 0, where
            chat = "embeddings" not in facts.capabilities
            if chat:
                assert facts.output_per_mtok > facts.input_per_mtok > 0, where
                assert facts.max_output_tokens is not None, where
                assert facts.max_output_tokens < facts.context_window, where
            cached = facts.cached_input_per_mtok
            assert cached is None or cached < facts.input_per_mtok, where


def test_anthropic_entries_price_cache_writes_above_input() -> None:
    for model, facts in SHIPPED["anthropic"].items():
        # The default 5-minute cache write costs 1.25x input (1-hour writes are not modelled).
        assert facts.cache_write_per_mtok == pytest.approx(1.25 * facts.input_per_mtok), model


def test_shipped_entries_apply_to_every_provider_of_their_kind() -> None:
    snapshot = compile_snapshot(
        load_config(CONFIG, "t.yaml"), revision=1, source="t", shipped=SHIPPED
    )
    backup = snapshot.catalog[("openai-backup", "gpt-4o-mini")]
    assert backup.input_per_mtok == SHIPPED["openai"]["gpt-4o-mini"].input_per_mtok
    assert backup.capabilities == SHIPPED["openai"]["gpt-4o-mini"].capabilities
    assert ("claude", "claude-haiku-4-5") in snapshot.catalog
    assert ("claude", "gpt-4o-mini") not in snapshot.catalog
    # openai_compatible hosts serve models of their own: nothing shipped applies.
    assert not any(provider == "local" for provider, _model in snapshot.catalog)


def test_a_config_entry_replaces_the_shipped_one_whole() -> None:
    snapshot = compile_snapshot(
        load_config(CONFIG, "t.yaml"), revision=1, source="t", shipped=SHIPPED
    )
    entry = snapshot.catalog[("openai-prod", "gpt-4o-mini")]
    assert (entry.input_per_mtok, entry.output_per_mtok) == (0.01, 0.02)
    # Not merged: the config entry lists no capabilities and no window, so it has none.
    assert entry.capabilities == ()
    assert entry.context_window is None


def test_routing_reads_capabilities_from_the_shipped_entry_and_the_override() -> None:
    snapshot = compile_snapshot(
        load_config(CONFIG, "t.yaml"), revision=1, source="t", shipped=SHIPPED
    )
    with_tools = ChatRequest(
        model="backup",
        messages=(UserMessage(content=(TextPart(text="hi"),)),),
        tools=(ToolDefinition(name="f", parameters={"type": "object"}),),
    )
    shipped_decision, _policy = decide(with_tools, snapshot, request_id="r1")
    assert [t.key for t in shipped_decision.chain] == ["openai-backup/gpt-4o-mini"]

    overridden = ChatRequest(model="chat", messages=with_tools.messages, tools=with_tools.tools)
    decision, _policy = decide(overridden, snapshot, request_id="r2")
    assert decision.chain == ()
    assert decision.candidates[0].rejected == "missing_capability"


def test_a_snapshot_without_the_shipped_catalog_has_config_entries_only() -> None:
    snapshot = compile_snapshot(load_config(CONFIG, "t.yaml"), revision=1, source="t")
    assert list(snapshot.catalog) == [("openai-prod", "gpt-4o-mini")]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("openai: {gpt-x: {input_per_mtok: -1}}\n", "prices must not be negative"),
        ("openai: {gpt-x: {input_per_mtok: '1'}}\n", "Expected `float`"),
        ("openai: {gpt-x: {price: 1}}\n", "unknown field `price`"),
        ("nokind: {gpt-x: {}}\n", "Invalid enum value 'nokind'"),
    ],
)
def test_a_broken_catalog_is_refused_with_its_reason(text: str, reason: str) -> None:
    with pytest.raises(ConfigError, match=reason):
        parse_catalog(text, "catalog.yaml")

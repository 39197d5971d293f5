"""Policy resolution: most specific match, then priority, then file order."""

from __future__ import annotations

from gw.config import compile_snapshot, load_config
from gw.config.schema import Capability, PolicyConfig, RequestKind
from gw.routing.policy import (
    DEFAULT_POLICY,
    kind_of_endpoint,
    match_specificity,
    matched_fields,
    resolve_policy,
)

PROVIDERS = """
providers:
  - {name: openai, kind: openai}
routes:
  - name: chat
    targets: [{provider: openai, model: gpt-4o-mini}]
"""


def policies(yaml_policies: str) -> tuple[PolicyConfig, ...]:
    config = load_config(PROVIDERS + "policies:\n" + yaml_policies, "test.yaml")
    return compile_snapshot(config, revision=1, source="t").policies


def resolve(
    found: tuple[PolicyConfig, ...],
    *,
    route: str = "chat",
    models: tuple[str, ...] = ("openai/gpt-4o-mini", "gpt-4o-mini"),
    streaming: bool = False,
    tenant: str | None = None,
    api_key_id: str | None = None,
    capabilities: frozenset[Capability] = frozenset(),
    kind: RequestKind = "chat",
    prompt_tokens: int = 0,
) -> str:
    return resolve_policy(
        found,
        route=route,
        models=models,
        streaming=streaming,
        tenant=tenant,
        api_key_id=api_key_id,
        capabilities=capabilities,
        kind=kind,
        prompt_tokens=prompt_tokens,
    ).name


def test_no_policies_gives_the_default() -> None:
    assert resolve(()) == "default"
    assert (
        resolve_policy(
            (),
            route="chat",
            models=(),
            streaming=False,
            tenant=None,
            api_key_id=None,
            capabilities=frozenset(),
        )
        is DEFAULT_POLICY
    )


def test_no_match_gives_the_default() -> None:
    found = policies("  - {name: other, match: {routes: [other]}}\n")
    assert resolve(found) == "default"


def test_an_empty_match_applies_to_everything() -> None:
    assert resolve(policies("  - {name: all}\n")) == "all"


def test_exact_route_beats_wildcard_whatever_the_file_order() -> None:
    found = policies(
        "  - {name: star, match: {routes: ['*']}, priority: 100}\n"
        "  - {name: exact, match: {routes: [chat]}}\n"
    )
    assert resolve(found) == "exact"
    assert resolve(found, route="other") == "star"


def test_more_fields_beat_fewer() -> None:
    found = policies(
        "  - {name: route, match: {routes: [chat]}}\n"
        "  - {name: route-and-tenant, match: {routes: [chat], tenants: ['team-*']}}\n"
    )
    assert resolve(found, tenant="team-a") == "route-and-tenant"
    assert resolve(found, tenant="ops") == "route"


def test_equal_specificity_goes_to_higher_priority_then_file_order() -> None:
    found = policies(
        "  - {name: first, match: {routes: [chat]}}\n"
        "  - {name: second, match: {streaming: true}}\n"
        "  - {name: urgent, match: {tenants: [a]}, priority: 5}\n"
    )
    assert resolve(found, streaming=True) == "first"
    assert resolve(found, streaming=True, tenant="a") == "urgent"


def test_models_match_provider_model_or_bare_name() -> None:
    found = policies(
        "  - {name: bare, match: {models: ['gpt-4o*']}}\n"
        "  - {name: qualified, match: {models: [openai/gpt-4o-mini]}}\n"
    )
    assert resolve(found) == "qualified"
    assert resolve(found, models=("azure/gpt-4o", "gpt-4o")) == "bare"
    assert resolve(found, models=("local/llama3",)) == "default"


def test_streaming_must_equal() -> None:
    found = policies("  - {name: streams, match: {streaming: true}}\n")
    assert resolve(found, streaming=True) == "streams"
    assert resolve(found, streaming=False) == "default"


def test_capabilities_match_when_all_are_needed() -> None:
    found = policies("  - {name: multimodal-tools, match: {capabilities: [vision, tools]}}\n")
    assert resolve(found, capabilities=frozenset({"vision", "tools", "json_object"})) == (
        "multimodal-tools"
    )
    assert resolve(found, capabilities=frozenset({"vision"})) == "default"


def test_missing_tenant_or_key_never_matches_a_listed_one() -> None:
    found = policies(
        "  - {name: tenants, match: {tenants: ['*']}}\n  - {name: keys, match: {api_keys: ['*']}}\n"
    )
    assert resolve(found) == "default"
    assert resolve(found, tenant="a") == "tenants"
    assert resolve(found, api_key_id="key_1") == "keys"


def test_globs_are_case_sensitive() -> None:
    found = policies("  - {name: chat, match: {routes: ['Chat*']}}\n")
    assert resolve(found) == "default"


def test_specificity_is_one_weight_per_field_kind_in_rank_order() -> None:
    (policy,) = policies(
        "  - {name: p, match: {routes: [chat], tenants: ['t?'], streaming: false}}\n"
    )
    specificity = match_specificity(
        policy.match,
        route="chat",
        models=(),
        streaming=False,
        tenant="t1",
        api_key_id=None,
        capabilities=frozenset(),
    )
    # api_keys, tenants (a glob), model (an exact route), capabilities, streaming, kinds, size
    assert specificity == (0, 1, 2, 0, 1, 0, 0)
    assert matched_fields(policy.match) == ("tenants", "model", "streaming")


def test_an_api_key_policy_beats_route_and_streaming() -> None:
    found = policies(
        "  - {name: chat-streams, match: {routes: [chat], streaming: true}, priority: 99}\n"
        "  - {name: one-key, match: {api_keys: [key_1]}}\n"
    )
    assert resolve(found, streaming=True, api_key_id="key_1") == "one-key"
    assert resolve(found, streaming=True, api_key_id="key_2") == "chat-streams"


def test_field_kinds_rank_key_tenant_model_capability_streaming_kind_size() -> None:
    ranked = [
        "{api_keys: ['key_*']}",
        "{tenants: ['team-*']}",
        "{models: ['gpt-*']}",
        "{capabilities: [tools]}",
        "{streaming: true}",
        "{kinds: [chat]}",
        "{min_prompt_tokens: 0}",
    ]
    lines = "".join(
        f"  - {{name: p{n}, match: {match}}}\n" for n, match in reversed(list(enumerate(ranked)))
    )
    found = policies(lines)
    needs: frozenset[Capability] = frozenset({"tools"})
    everything = {"streaming": True, "tenant": "team-a", "capabilities": needs}
    assert resolve(found, api_key_id="key_1", **everything) == "p0"  # type: ignore[arg-type]
    assert resolve(found, **everything) == "p1"  # type: ignore[arg-type]
    assert resolve(found, streaming=True, capabilities=needs) == "p2"
    assert resolve(found, models=("x",), streaming=True, capabilities=needs) == "p3"
    assert resolve(found, models=("x",), streaming=True) == "p4"
    assert resolve(found, models=("x",)) == "p5"
    assert resolve(found, models=("x",), kind="embeddings") == "p6"


def test_kinds_and_prompt_size_match() -> None:
    found = policies(
        "  - {name: embeddings, match: {kinds: [embeddings, count_tokens]}}\n"
        "  - {name: long, match: {min_prompt_tokens: 1000, max_prompt_tokens: 5000}}\n"
    )
    assert resolve(found, kind="embeddings") == "embeddings"
    assert resolve(found, kind="count_tokens", prompt_tokens=2000) == "embeddings"
    assert resolve(found, kind="responses", prompt_tokens=1000) == "long"
    assert resolve(found, prompt_tokens=5000) == "long"
    assert resolve(found, prompt_tokens=999) == "default"
    assert resolve(found, prompt_tokens=5001) == "default"


def test_endpoints_name_their_kind() -> None:
    assert kind_of_endpoint("chat.completions") == "chat"
    assert kind_of_endpoint("messages") == "chat"
    assert kind_of_endpoint("gemini.streamGenerateContent") == "chat"
    assert kind_of_endpoint("responses") == "responses"
    assert kind_of_endpoint("gemini.batchEmbedContents") == "embeddings"
    assert kind_of_endpoint("messages.count_tokens") == "count_tokens"
    assert kind_of_endpoint("gemini.countTokens") == "count_tokens"

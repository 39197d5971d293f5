"""The shipped model catalog: prices, context windows and capabilities by provider kind.

``gw/catalog.yaml`` maps each provider kind to ``{model name: ModelFacts}``. The catalog
of a snapshot gives every configured provider the shipped entries of its kind (so a
provider named ``openai-prod`` of kind ``openai`` knows ``gpt-4o-mini``), then lays the
config's ``models:`` entries over them: a config entry replaces the shipped one whole,
it is not merged field by field (an entry that lists no capabilities has none).

This module only parses text: the composition root reads the file (package data) and
hands the result to ``compile_snapshot``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import msgspec

from gw.config.problems import ConfigError
from gw.config.schema import ModelEntry, ModelFacts, ProviderConfig, ProviderKind
from gw.config.yamlmap import line_of, parse_yaml

ShippedCatalog = Mapping[ProviderKind, Mapping[str, ModelFacts]]
"""Provider kind -> model name -> facts."""

EMPTY_CATALOG: ShippedCatalog = {}


def parse_catalog(text: str, source: str) -> ShippedCatalog:
    """Parse catalog YAML; a wrong key, type or negative price raises ``ConfigError``."""
    data, lines = parse_yaml(text, source, own_file=True)
    try:
        catalog = msgspec.convert(
            data or {}, dict[ProviderKind, dict[str, ModelFacts]], strict=True
        )
    except msgspec.ValidationError as exc:
        raise ConfigError(source, "", str(exc)) from None
    for kind, models in catalog.items():
        for model, facts in models.items():
            if min(prices(facts)) < 0:
                path = f"{kind}.{model}"
                raise ConfigError(source, path, "prices must not be negative", line_of(lines, path))
    return catalog


def prices(facts: ModelFacts) -> tuple[float, ...]:
    """Every price ``facts`` sets (unset fallbacks left out)."""
    optional = (facts.cached_input_per_mtok, facts.cache_write_per_mtok, facts.reasoning_per_mtok)
    return (
        facts.input_per_mtok,
        facts.output_per_mtok,
        *(price for price in optional if price is not None),
    )


def catalog_entries(
    providers: Iterable[ProviderConfig], models: Iterable[ModelEntry], shipped: ShippedCatalog
) -> dict[tuple[str, str], ModelEntry]:
    """``(provider, model) -> entry``: shipped entries per provider kind, then config's."""
    catalog: dict[tuple[str, str], ModelEntry] = {}
    for provider in providers:
        for model, facts in shipped.get(provider.kind, {}).items():
            catalog[(provider.name, model)] = entry_for(provider.name, model, facts)
    catalog.update({(entry.provider, entry.model): entry for entry in models})
    return catalog


def entry_for(provider: str, model: str, facts: ModelFacts) -> ModelEntry:
    return ModelEntry(provider=provider, model=model, **msgspec.structs.asdict(facts))

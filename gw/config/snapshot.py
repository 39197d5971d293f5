"""Snapshot: one compiled, immutable config revision that a request pins for its lifetime."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import msgspec

from gw.config.catalog import EMPTY_CATALOG, ShippedCatalog, catalog_entries
from gw.config.control_schema import PluginConfig
from gw.config.guardrails import NO_GUARDRAILS, Guardrails, compile_guardrails
from gw.config.schema import (
    Config,
    ModelEntry,
    PolicyConfig,
    ProviderConfig,
    RouteConfig,
    TargetConfig,
    TenantConfig,
)
from gw.config.switches import NO_SWITCHES, Switchboard, compile_switches
from gw.config.units import encode_unit
from gw.errors import ModelNotFoundError, client_value

# The longest model a client may address directly (provider/model), and what a trace keeps
# of any requested model: real names are far shorter; longer text is a client's noise.
MODEL_NAME_MAX_CHARS = 1024

OPENAI_BASE_URL = "https://api.openai.com/v1"


DEFAULT_ACCOUNT = "default"


class ProviderAccount(msgspec.Struct, frozen=True, kw_only=True):
    """One account of a provider as an adapter sees it: ``provider`` carries the
    account's key, base URL and headers in place of the provider's (invariant 12)."""

    name: str
    provider: ProviderConfig


class LoadedPlugin(msgspec.Struct, frozen=True, kw_only=True):
    """A plugin of the config with its hooks, imported when the revision was loaded
    (gw/plugin_loader.py): hook name -> the object's async method."""

    config: PluginConfig
    hooks: Mapping[str, Callable[..., Awaitable[object]]]
    settings: Mapping[str, Any]  # config.settings, read-only as the plugin gets it


class Snapshot(msgspec.Struct, frozen=True, kw_only=True):
    """A config revision with its lookup tables built once; never mutated after compile."""

    revision: int
    source: str
    config_hash: str
    config: Config
    providers: dict[str, ProviderConfig]
    accounts: dict[str, tuple[ProviderAccount, ...]]  # by provider name, in config order
    catalog: dict[tuple[str, str], ModelEntry]
    routes: dict[str, RouteConfig]
    policies: tuple[PolicyConfig, ...]
    tenants: dict[str, TenantConfig]
    switches: Switchboard = NO_SWITCHES
    plugins: tuple[LoadedPlugin, ...] = ()  # in config order; empty costs a request nothing
    guardrails: Guardrails = NO_GUARDRAILS  # each policy's content rules and model blocklist
    # What routing derives from this snapshot once per client model name instead of once
    # per request (``gw.routing.plan``), filled on first use. Safe although it is filled
    # after compile: the rest of the snapshot never changes, each value is a pure function
    # of the snapshot and its key, and a reader that finds no entry computes the same value
    # itself. Bounded by the config: routing stores only route names and catalogued
    # ``provider/model`` names, never an arbitrary client string.
    derived: dict[str, object] = msgspec.field(default_factory=dict)

    def resolve_model(self, name: str) -> RouteConfig:
        """The route a client's ``model`` names: a route, or ``provider/model`` directly.

        A direct address becomes a one-target route named after it; raises
        ``model_not_found`` otherwise.
        """
        route = self.routes.get(name)
        if route is not None:
            return route
        provider, sep, model = name.partition("/")
        if sep and model and provider in self.providers:
            if len(model) > MODEL_NAME_MAX_CHARS:  # else sent upstream, traced and logged whole
                raise ModelNotFoundError(
                    f"model {client_value(name)} is longer than the {MODEL_NAME_MAX_CHARS} "
                    "characters gw passes to a provider",
                    param="model",
                )
            return direct_route(provider, model)
        routes = ", ".join(sorted(self.routes)) or "none"
        raise ModelNotFoundError(
            f"model {client_value(name)} is neither a route nor provider/model of a configured "
            f"provider; routes: {routes}",
            param="model",
        )


def direct_route(provider: str, model: str) -> RouteConfig:
    return RouteConfig(
        name=f"{provider}/{model}", targets=(TargetConfig(provider=provider, model=model),)
    )


def is_direct(route: RouteConfig) -> bool:
    return "/" in route.name


def provider_accounts(provider: ProviderConfig) -> tuple[ProviderAccount, ...]:
    """Each configured account merged over its provider; one ``default`` when none are."""
    if not provider.accounts:
        return (ProviderAccount(name=DEFAULT_ACCOUNT, provider=provider),)
    return tuple(
        ProviderAccount(
            name=account.name,
            provider=msgspec.structs.replace(
                provider,
                api_key=account.api_key or provider.api_key,
                base_url=account.base_url or provider.base_url,
                headers={**provider.headers, **account.headers},
                accounts=(),
            ),
        )
        for account in provider.accounts
    )


def config_hash(config: Config, overridden: Iterable[str] = ()) -> str:
    """A stable content hash of the resolved config (sha256 of its canonical JSON),
    leaving out the ``overridden`` dotted paths (``server.port``: a flag or GW_* variable
    of this process). Gateways of a fleet started from one file with their own ports
    thus share one hash, and so one revision, rather than each start recording its own."""
    tree = msgspec.to_builtins(config, enc_hook=encode_unit, order="sorted")
    for dotted in overridden:
        *parents, leaf = dotted.split(".")
        node = tree
        for name in parents:
            node = node.get(name) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(leaf, None)
    return hashlib.sha256(msgspec.json.encode(tree)).hexdigest()


def compile_snapshot(
    config: Config,
    *,
    revision: int,
    source: str,
    shipped: ShippedCatalog = EMPTY_CATALOG,
    digest: str | None = None,
    plugins: tuple[LoadedPlugin, ...] = (),
) -> Snapshot:
    """Build the lookup tables of ``config``.

    ``shipped`` is the catalog gw ships (``gw/catalog.yaml``, read by the composition
    root): its entries apply to every provider of their kind, under config's own
    ``models:`` entries. Leave it empty (the default) for a snapshot of config alone;
    a running gateway always passes it, reloads included. ``plugins``: the config's
    plugins, loaded by the caller (this layer imports no code). ``digest``: ``config_hash(config)``
    when the caller has it (a reload's child process computed it).
    """
    return Snapshot(
        revision=revision,
        source=source,
        config_hash=digest or config_hash(config),
        config=config,
        providers={provider.name: provider for provider in config.providers},
        accounts={provider.name: provider_accounts(provider) for provider in config.providers},
        catalog=catalog_entries(config.providers, config.models, shipped),
        routes={route.name: route for route in config.routes},
        policies=config.policies,
        tenants={tenant.name: tenant for tenant in config.tenants},
        switches=compile_switches(config.switches),
        plugins=plugins,
        guardrails=compile_guardrails(config),
    )

"""The checks ``gw serve`` makes before it opens anything: settings that would expose gw,
the vault and the admin key, proxy variables, OpenTelemetry headers, the shipped
catalog. Each refusal is a ``ServeError`` that says what to change."""

from __future__ import annotations

from collections.abc import Mapping

from gw.adapters.secrets import SecretResolver, vault_references
from gw.config import Config, ConfigError
from gw.config.catalog import ShippedCatalog
from gw.config.validate import SECRET_SCHEMES
from gw.environment import read_shipped_catalog
from gw.errors import GatewayError
from gw.server.auth import exposure_problem
from gw.server.edges import edge_problem
from gw.startup.plan import ServeError, ServePlan, reachable_as
from gw.telemetry.otel import OtelUnavailableError, require_otel
from gw.upstream_http.env_proxy import ProxySettingError, proxy_settings
from gw.vault import Vault, VaultError


def checked_start(
    plan: ServePlan,
) -> tuple[Mapping[str, str] | None, str | None, dict[str, str]]:
    """The vault, the admin key and the environment's proxy settings, once the settings
    that would expose gw, and proxy variables gw cannot use, are refused."""
    vault = load_vault(plan)
    admin_key = resolve_admin_key(plan.config, plan.environ, vault)
    check_edges(plan)
    proxies = checked_proxies(plan)
    check_exposure(plan, admin_key)
    return vault, admin_key, proxies


def load_vault(plan: ServePlan) -> Mapping[str, str] | None:
    """The vault's secrets, read once at start when the config refers to any (``vault:``);
    None when it refers to none, so such a gw never touches the vault or the keyring."""
    references = vault_references(plan.config)
    if not references:
        return None
    try:
        return Vault(plan.home, plan.environ).read()
    except VaultError as error:
        fields = ", ".join(f"{field} is vault:{name}" for field, name in references.items())
        raise ServeError(f"{fields}, but the vault cannot be opened: {error}") from None


def resolve_admin_key(
    config: Config, environ: Mapping[str, str], vault: Mapping[str, str] | None = None
) -> str | None:
    if config.auth.admin_key is None:
        return None
    try:
        return SecretResolver(environ, vault).resolve(config.auth.admin_key, field="auth.admin_key")
    except GatewayError as error:
        raise ServeError(error.message) from None


def check_edges(plan: ServePlan) -> None:
    """Refuse CORS and proxy settings that are unsafe or unreadable (gw/server/edges.py)."""
    server = plan.config.server
    problem = edge_problem(
        reachable_as(plan), server.cors_origins, server.trusted_proxies, plan.config.auth.mode
    )
    if problem is not None:
        raise ServeError(problem)


def checked_proxies(plan: ServePlan) -> dict[str, str]:
    """The environment's proxy settings (gw/upstream_http/env_proxy.py); a proxy variable
    (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY) gw cannot use is refused."""
    try:
        return proxy_settings(plan.environ)
    except ProxySettingError as error:
        raise ServeError(str(error)) from None


def check_exposure(plan: ServePlan, admin_key: str | None) -> None:
    """Refuse to start beyond loopback in open mode, or without a strong admin key."""
    problem = exposure_problem(plan.config.auth.mode, reachable_as(plan), admin_key)
    if problem is not None:
        raise ServeError(problem)


def check_otel(plan: ServePlan) -> dict[str, str]:
    """Refuse ``telemetry.otlp.enabled`` without the ``otel`` extra installed, or with a
    header whose ``env:``/``vault:`` reference does not resolve; the headers to send, with
    their references resolved (none when export is off). ``run`` calls it before anything
    is opened, so a refusal leaves nothing behind; the vault is read only when a header
    refers to it."""
    otlp = plan.config.telemetry.otlp
    if not otlp.enabled:
        return {}
    try:
        require_otel()
    except OtelUnavailableError as error:
        raise ServeError(str(error)) from None
    in_vault = any(field.startswith("telemetry.otlp.") for field in vault_references(plan.config))
    resolver = SecretResolver(plan.environ, load_vault(plan) if in_vault else None)
    headers: dict[str, str] = {}
    for name, value in otlp.headers.items():
        if not value.startswith(SECRET_SCHEMES):  # a literal, allowed where it is no credential
            headers[name] = value
            continue
        try:
            headers[name] = resolver.resolve(value, field=f"telemetry.otlp.headers.{name}")
        except GatewayError as error:
            raise ServeError(error.message) from None
    return headers


def shipped_catalog() -> ShippedCatalog:
    """The model catalog gw ships (``gw/catalog.yaml``, package data): prices, windows
    and capabilities by provider kind, under config's own ``models:`` entries."""
    try:
        return read_shipped_catalog()
    except ConfigError as error:  # pragma: no cover - a test parses the shipped file
        raise ServeError(f"the shipped model catalog is broken (a gw bug): {error}") from None

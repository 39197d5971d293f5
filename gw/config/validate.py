"""Cross-field rules the schema cannot express: names that must exist and be unique."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import PurePath
from typing import NamedTuple
from urllib.parse import urlsplit

from gw.config.budget_checks import policy_budget_problems
from gw.config.cache_checks import cache_problems
from gw.config.catalog import prices
from gw.config.guardrails import guardrail_problems
from gw.config.plugin_checks import plugin_problems
from gw.config.schema import (
    BackgroundConfig,
    Config,
    GlobalLimits,
    HealthConfig,
    OtlpConfig,
    PolicyConfig,
    ProviderConfig,
    ServerConfig,
    StateConfig,
    TenantBudget,
    TenantLimits,
)
from gw.config.state_url import redis_url_problem, state_url_problem
from gw.config.switches import switch_problems
from gw.config.upstream_host import HostFormError, HostKind, classify_host, refusal
from gw.errors import ERRORS_BY_CODE

Problem = tuple[str, str]  # (field path, reason)

SECRET_SCHEMES = ("env:", "vault:")
MIN_PROBE_INTERVAL_S = 0.1
MAX_DASHBOARD_LINK_TTL_S = 3600.0  # a login link is for the next minute, not for later
MAX_IDEMPOTENCY_TTL_S = 86400.0  # a retry comes within minutes; a day bounds what is held
NEEDS_BASE_URL = frozenset({"openai_compatible", "azure_openai"})


NO_PROVIDERS = (
    "the config defines no providers, so every request gets 404 model_not_found (with no "
    "file gw serves the built-in mock; a file replaces it): add providers and routes, as "
    "`gw init` writes them"
)


def config_warnings(config: Config) -> list[str]:
    """What loads but is almost certainly not meant: said at start and by validate."""
    return [] if config.providers else [NO_PROVIDERS]


def find_problems(config: Config) -> list[Problem]:
    """Every cross-field problem in ``config``, in file order."""
    providers = {provider.name for provider in config.providers}
    return [
        *_unique("providers", (p.name for p in config.providers)),
        *_provider_problems(config.providers),
        *_unique("routes", (r.name for r in config.routes)),
        *_route_problems(config, providers),
        *_model_problems(config, providers),
        *_unique("policies", (p.name for p in config.policies)),
        *_policy_problems(config.policies),
        *policy_budget_problems(config.policies),
        *_unique("tenants", (t.name for t in config.tenants)),
        *_tenant_problems(config),
        *_server_problems(config),
        *_health_problems(config.health),
        *_state_problems(config.state),
        *_otlp_problems(config.telemetry.otlp),
        *_background_problems(config.responses.background),
        *switch_problems(config, providers),
        *_unique("plugins", (p.name for p in config.plugins)),
        *plugin_problems(config.plugins),
        *guardrail_problems(config),
        *cache_problems(config),
    ]


# Names travel in response headers (x-gw-route), logs and terminal tables.
_UNPRINTABLE = "must not contain control or invisible characters (it is sent in headers and logs)"


def _unique(section: str, names: Iterable[str]) -> Iterator[Problem]:
    seen: set[str] = set()
    for index, name in enumerate(names):
        if not name.strip():
            yield f"{section}[{index}].name", "must not be empty"
        elif not name.isprintable():
            yield f"{section}[{index}].name", _UNPRINTABLE
        if name in seen:
            yield f"{section}[{index}].name", f"{name!r} is defined twice"
        seen.add(name)


def _provider_problems(providers: Iterable[ProviderConfig]) -> Iterator[Problem]:
    for index, provider in enumerate(providers):
        here = f"providers[{index}]"
        if "/" in provider.name:
            yield f"{here}.name", "must not contain '/', which separates provider and model"
        every_account_has_url = bool(provider.accounts) and all(
            account.base_url for account in provider.accounts
        )
        if provider.kind in NEEDS_BASE_URL and not provider.base_url and not every_account_has_url:
            yield f"{here}.base_url", f"required for kind {provider.kind}"
        yield from _base_url_problems(f"{here}.base_url", provider.base_url)
        yield from _header_problems(f"{here}.headers", provider.headers)
        yield from _secret_reference(f"{here}.api_key", provider.api_key)
        yield from _account_problems(here, provider)
        yield from _tls_problems(f"{here}.tls", provider)
        if provider.mock is not None and provider.kind != "mock":
            yield f"{here}.mock", "only a provider of kind mock takes mock options"
        if provider.mock is not None and not 0.0 <= provider.mock.failure_rate <= 1.0:
            yield f"{here}.mock.failure_rate", "must be between 0 and 1"


def _base_url_problems(field: str, url: str | None) -> Iterator[Problem]:
    if not url:
        return
    if not url.startswith(("http://", "https://")):
        yield field, "must start with http:// or https://"
    elif "@" in urlsplit(url).netloc:
        # It would be stored with the config and shown by `gw config show`.
        yield field, "must not hold credentials (user:password@); put the key in api_key"
    else:
        yield from _host_problems(field, url)


def _host_problems(field: str, url: str) -> Iterator[Problem]:
    """Where the key would go: never a link-local or metadata address (upstream_host)."""
    try:
        host = urlsplit(url).hostname
    except ValueError as error:  # an unclosed [ in the host
        yield field, f"is not a valid URL: {error}"
        return
    if not host:
        yield field, "has no host"
        return
    try:
        reason = refusal(classify_host(host))
    except HostFormError as error:
        yield field, str(error)
        return
    if reason is not None:
        yield field, f"{host} {reason}"


def local_upstreams(config: Config) -> list[LocalUpstream]:
    """Providers whose base URL is a loopback or private address (allowed: a local model
    server is a main use), for ``gw config validate`` to name."""
    found = []
    for provider in config.providers:
        urls = [provider.base_url, *(account.base_url for account in provider.accounts)]
        for url in dict.fromkeys(url for url in urls if url):
            host, kind = base_url_host_kind(url)
            if kind in ("loopback", "private"):
                found.append(LocalUpstream(provider=provider.name, host=host, kind=kind))
    return found


class LocalUpstream(NamedTuple):
    provider: str
    host: str
    kind: str  # loopback | private


def base_url_host_kind(url: str) -> tuple[str, HostKind | None]:
    """A base URL's host and the kind of place it is (None: unreadable, refused above)."""
    try:
        host = urlsplit(url).hostname or ""
        return host, classify_host(host) if host else None
    except ValueError:  # an unclosed [, or a HostFormError
        return "", None


def _secret_reference(field: str, key: str | None) -> Iterator[Problem]:
    if key is not None and not (key.startswith(SECRET_SCHEMES) and len(key.split(":", 1)[1])):
        yield (
            field,
            "must be a reference such as env:OPENAI_API_KEY or vault:NAME, never the key itself",
        )


def _account_problems(here: str, provider: ProviderConfig) -> Iterator[Problem]:
    yield from _unique(f"{here}.accounts", (account.name for account in provider.accounts))
    for index, account in enumerate(provider.accounts):
        there = f"{here}.accounts[{index}]"
        yield from _secret_reference(f"{there}.api_key", account.api_key)
        yield from _base_url_problems(f"{there}.base_url", account.base_url)
        yield from _header_problems(f"{there}.headers", account.headers)
    if provider.accounts and provider.kind == "mock":
        yield f"{here}.accounts", "a provider of kind mock has no accounts"
    if provider.probe is not None:
        if provider.probe.interval.seconds < MIN_PROBE_INTERVAL_S:
            yield (
                f"{here}.probe.interval",
                f"must be at least {MIN_PROBE_INTERVAL_S:g}s (each probe is a billed call)",
            )
        if provider.probe.timeout.seconds <= 0:
            yield f"{here}.probe.timeout", "must be longer than 0s"


def _tls_problems(here: str, provider: ProviderConfig) -> Iterator[Problem]:
    """What can be told without reading the files (gw/upstream_http/tls.py reads them)."""
    tls = provider.tls
    if tls is None:
        return
    if provider.kind == "mock":
        yield here, "a provider of kind mock makes no connection: remove tls"
    for field in ("ca_file", "client_cert", "client_key"):
        path = getattr(tls, field)
        if path is not None and not PurePath(path).is_absolute():
            # Relative to what? gw serve, reloads and the CLI may each run elsewhere.
            yield f"{here}.{field}", f"must be an absolute path (got {path!r})"
    if tls.client_key is not None and tls.client_cert is None:
        yield f"{here}.client_key", "is given without client_cert, the certificate it goes with"


def _route_problems(config: Config, providers: set[str]) -> Iterator[Problem]:
    for index, route in enumerate(config.routes):
        here = f"routes[{index}]"
        if "/" in route.name:
            yield f"{here}.name", "must not contain '/', which addresses provider/model directly"
        if not route.targets:
            yield f"{here}.targets", "a route needs at least one target"
        for position, target in enumerate(route.targets):
            if target.provider not in providers:
                yield (
                    f"{here}.targets[{position}].provider",
                    f"unknown provider {target.provider!r}; define it under providers",
                )
            if target.weight < 0:
                yield f"{here}.targets[{position}].weight", "must not be negative"
            if not target.model.isprintable():
                yield f"{here}.targets[{position}].model", _UNPRINTABLE
        if (
            route.strategy == "weighted"
            and route.targets
            and not any(target.weight > 0 for target in route.targets)
        ):
            yield f"{here}.targets", "a weighted route needs at least one positive weight"


def _model_problems(config: Config, providers: set[str]) -> Iterator[Problem]:
    seen: set[tuple[str, str]] = set()
    for index, entry in enumerate(config.models):
        here = f"models[{index}]"
        if entry.provider not in providers:
            yield f"{here}.provider", f"unknown provider {entry.provider!r}"
        if (entry.provider, entry.model) in seen:
            yield here, f"{entry.provider}/{entry.model} is listed twice"
        seen.add((entry.provider, entry.model))
        if min(prices(entry)) < 0:
            yield here, "prices must not be negative"


def _policy_problems(policies: Iterable[PolicyConfig]) -> Iterator[Problem]:
    for index, policy in enumerate(policies):
        here = f"policies[{index}]"
        if policy.retry.max_attempts < 1:
            yield f"{here}.retry.max_attempts", "must be at least 1 (it counts the first call)"
        if policy.retry.multiplier < 1:
            yield f"{here}.retry.multiplier", "must be at least 1"
        for position, code in enumerate(policy.fallback.on_error_codes or ()):
            if code not in ERRORS_BY_CODE:
                known = ", ".join(sorted(ERRORS_BY_CODE))
                yield (
                    f"{here}.fallback.on_error_codes[{position}]",
                    f"unknown error code {code!r}; known codes: {known}",
                )
        yield from _match_problems(here, policy)
        if policy.hedge.after is not None and policy.hedge.after.seconds <= 0:
            yield f"{here}.hedge.after", "must be longer than 0s (omit it to turn hedging off)"
        limits = policy.limits
        if limits.max_output_tokens is not None and limits.max_output_tokens < 1:
            yield f"{here}.limits.max_output_tokens", "must be at least 1"
        if limits.max_cost_per_request_usd is not None and limits.max_cost_per_request_usd < 0:
            yield f"{here}.limits.max_cost_per_request_usd", "must not be negative"
        # 0s would fail every request (upstream_timeout) before it could be answered.
        timeout = policy.timeout
        for field, span in (
            ("total", timeout.total),
            ("per_attempt", timeout.per_attempt),
            ("connect", timeout.connect),
            ("first_token", timeout.first_token),
            ("stream_idle", timeout.stream_idle),
        ):
            if span.seconds <= 0:
                yield f"{here}.timeout.{field}", "must be longer than 0s"


def _match_problems(here: str, policy: PolicyConfig) -> Iterator[Problem]:
    low, high = policy.match.min_prompt_tokens, policy.match.max_prompt_tokens
    for field, bound in (("min_prompt_tokens", low), ("max_prompt_tokens", high)):
        if bound is not None and bound < 0:
            yield f"{here}.match.{field}", "must not be negative"
    if low is not None and high is not None and low > high:
        yield f"{here}.match.max_prompt_tokens", f"must be at least min_prompt_tokens ({low})"
    if policy.deny_reason is not None and not policy.deny:
        yield f"{here}.deny_reason", "is only for a deny rule; add `deny: true` or remove it"


def _tenant_problems(config: Config) -> Iterator[Problem]:
    routes = {route.name for route in config.routes}
    for index, tenant in enumerate(config.tenants):
        here = f"tenants[{index}]"
        if tenant.name.startswith("@"):
            yield f"{here}.name", "must not start with @ (gw's own limits are counted as @gw)"
        for position, name in enumerate(tenant.allowed_routes or ()):
            if name not in routes and "*" not in name:
                yield f"{here}.allowed_routes[{position}]", f"unknown route {name!r}"
        yield from _limit_problems(f"{here}.limits", tenant.limits, f"{here}.budget", tenant.budget)
    limits = config.limits
    yield from _limit_problems("limits", limits, "limits.budget", limits.budget)


def _limit_problems(
    here: str, limits: TenantLimits | GlobalLimits, at: str, budget: TenantBudget
) -> Iterator[Problem]:
    # A limit of 0 would refuse every request (a rate of 0 as a 400 that no wait cures);
    # a budget of 0 stops all spend, which is a meaning.
    for field, count in (
        ("requests_per_minute", limits.requests_per_minute),
        ("tokens_per_minute", limits.tokens_per_minute),
        ("max_concurrency", limits.max_concurrency),
    ):
        if count is not None and count < 1:
            yield f"{here}.{field}", "must be at least 1 (null: no limit)"
    for field in ("daily_usd", "weekly_usd", "monthly_usd", "total_usd"):
        usd = getattr(budget, field)
        if usd is not None and usd < 0:
            yield f"{at}.{field}", "must not be negative (null: no budget)"


def _server_problems(config: Config) -> Iterator[Problem]:
    yield from _secret_reference("auth.admin_key", config.auth.admin_key)
    server = config.server
    if not 0 <= server.port <= 65535:
        yield "server.port", "must be between 0 and 65535"
    if server.max_concurrency < 1:
        yield "server.max_concurrency", "must be at least 1"
    if server.header_timeout.seconds <= 0:
        yield "server.header_timeout", "must be longer than 0s"
    if server.upstream_max_connections < 1:
        yield "server.upstream_max_connections", "must be at least 1"
    per_host = server.upstream_max_connections_per_host
    if per_host is not None and not 1 <= per_host <= server.upstream_max_connections:
        yield (
            "server.upstream_max_connections_per_host",
            f"must be at least 1 and at most upstream_max_connections "
            f"({server.upstream_max_connections})",
        )
    if server.upstream_buffer_budget.bytes < server.max_upstream_body_bytes.bytes:
        yield (
            "server.upstream_buffer_budget",
            "must be at least server.max_upstream_body_bytes (one whole answer must fit)",
        )
    yield from _idempotency_problems(server)
    if not 0 < config.auth.dashboard_link_ttl.seconds <= MAX_DASHBOARD_LINK_TTL_S:
        yield "auth.dashboard_link_ttl", "must be longer than 0s and at most 1h"


def _idempotency_problems(server: ServerConfig) -> Iterator[Problem]:
    if not 0 < server.idempotency_ttl.seconds <= MAX_IDEMPOTENCY_TTL_S:
        yield "server.idempotency_ttl", "must be longer than 0s and at most 24h"
    if server.idempotency_max_answer_bytes.bytes < 1:
        yield "server.idempotency_max_answer_bytes", "must be at least 1B"
    if server.idempotency_max_bytes.bytes < server.idempotency_max_answer_bytes.bytes:
        yield (
            "server.idempotency_max_bytes",
            "must be at least server.idempotency_max_answer_bytes (one answer must fit)",
        )


def _health_problems(health: HealthConfig) -> Iterator[Problem]:
    if health.degraded_after < 1:
        yield "health.degraded_after", "must be at least 1"
    if health.unhealthy_after < max(health.degraded_after, 1):
        yield (
            "health.unhealthy_after",
            f"must be at least degraded_after ({health.degraded_after}): "
            "a target degrades before its breaker opens",
        )
    if not 0.0 < health.error_rate <= 1.0:
        yield "health.error_rate", "must be above 0 and at most 1 (1 turns the rate rule off)"
    if health.min_requests < 1:
        yield "health.min_requests", "must be at least 1"
    budget = health.retry_budget
    if budget.ratio < 0:
        yield "health.retry_budget.ratio", "must be at least 0 (0: only min_retries)"
    if budget.min_retries < 0:
        yield "health.retry_budget.min_retries", "must be at least 0"
    spans = (
        ("window", health.window),
        ("cooldown", health.cooldown),
        ("trial_timeout", health.trial_timeout),
        ("rate_limit_cooldown", health.rate_limit_cooldown),
        ("auth_failure_cooldown", health.auth_failure_cooldown),
        ("retry_budget.window", budget.window),
    )
    for field, span in spans:
        if span.seconds <= 0:
            yield f"health.{field}", "must be longer than 0s"
    if health.max_cooldown.seconds < health.cooldown.seconds:
        yield (
            "health.max_cooldown",
            f"must be at least cooldown ({health.cooldown}), the first and shortest wait",
        )


def _state_problems(state: StateConfig) -> Iterator[Problem]:
    if state.url is not None and (problem := state_url_problem(state.url)):
        yield "state.url", problem
    if state.redis_url is not None and (problem := redis_url_problem(state.redis_url)):
        yield "state.redis_url", problem
    if state.redis_failure.fleet_size < 1:
        yield "state.redis_failure.fleet_size", "must be at least 1 (this gateway alone)"
    # trace_max_bytes is a ByteSize, positive by construction.
    for field, span in (
        ("trace_max_age", state.trace_max_age),
        ("usage_max_age", state.usage_max_age),
        ("prune_interval", state.prune_interval),
    ):
        if span is not None and span.seconds <= 0:
            yield f"state.{field}", "must be longer than 0s"


def _background_problems(background: BackgroundConfig) -> Iterator[Problem]:
    here = "responses.background"
    if background.max_queued_per_tenant < 1:
        yield f"{here}.max_queued_per_tenant", "must be at least 1"
    if background.concurrency < 1:
        yield f"{here}.concurrency", "must be at least 1"
    if background.retention.seconds <= 0:
        yield f"{here}.retention", "must be longer than 0s"


# Headers that carry a credential (an upstream's Authorization or x-api-key, Honeycomb's
# team key, a collector token), in providers' and accounts' ``headers`` and OTLP's: their
# values must be env:NAME or vault:NAME references, since a literal value would sit in
# gw.yaml, in every stored config revision and in backups.
CREDENTIAL_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "x-honeycomb-team"}
)
# Words of a header's name (between - and _): x-api-key, x-auth-token, but not
# x-portkey-provider.
CREDENTIAL_WORDS = frozenset({"token", "key", "apikey", "secret", "password", "auth"})


def _otlp_problems(otlp: OtlpConfig) -> Iterator[Problem]:
    if otlp.enabled and not otlp.endpoint:
        yield (
            "telemetry.otlp.endpoint",
            "is required when telemetry.otlp.enabled is true (the collector's OTLP/HTTP "
            "base URL, e.g. http://127.0.0.1:4318)",
        )
    if otlp.endpoint and not otlp.endpoint.startswith(("http://", "https://")):
        yield "telemetry.otlp.endpoint", "must be an http:// or https:// URL"
    yield from _header_problems("telemetry.otlp.headers", otlp.headers)


def _header_problems(section: str, headers: dict[str, str]) -> Iterator[Problem]:
    """Headers that carry a credential must take it from a reference (see above)."""
    for name, value in headers.items():
        field = f"{section}.{name}"
        lowered = name.lower()
        if value.startswith(SECRET_SCHEMES):
            yield from _secret_reference(field, value)  # env: or vault: with no name
        elif lowered in CREDENTIAL_HEADERS or not CREDENTIAL_WORDS.isdisjoint(
            re.split(r"[-_]", lowered)
        ):
            yield (
                field,
                f"{name} carries a credential: write env:NAME or vault:NAME (a variable in "
                "gw's environment or a secret in the vault holding the whole value, e.g. "
                "'Bearer ...'), never the value itself, which would be stored with the config",
            )

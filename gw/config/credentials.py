"""Which providers have no usable credentials, and which routes fall through because of it.

A missing key does not stop gw: a call to that provider fails with ``upstream_auth_failed``
(blamed on the gateway) and the request falls through to the route's next target, so a
config whose first target can never work still answers, from a fallback, and nothing says
why. This module says it, from the config and what gw would read (the environment and the
vault's secret names), with no call made: ``gw config validate``, ``gw serve`` at start and
on reload, and ``gw health`` all report what it finds.

A provider is unusable when every account it has (or its one default account) is: a key
reference (``api_key``, or a header's value) that does not resolve, or no key at all where
the provider's kind always needs one and its base URL is not a local server.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Final

import msgspec

from gw.config.schema import Config, ProviderConfig, RouteConfig
from gw.config.validate import base_url_host_kind

# Kinds whose public API refuses a call without a key; openai_compatible servers (Ollama,
# vLLM) often take none, and the mock none at all.
NEEDS_KEY: Final = frozenset({"openai", "openai_responses", "anthropic", "gemini", "azure_openai"})
# Headers that carry a key themselves (an Entra token for Azure, a gateway's own header).
KEY_HEADERS: Final = frozenset({"authorization", "api-key", "x-api-key", "x-goog-api-key"})


class CredentialGap(msgspec.Struct, frozen=True, kw_only=True):
    """One account whose credentials cannot be used, and why (never a secret's value)."""

    provider: str
    account: str | None  # None: the provider's own (default) account
    field: str  # providers[0].api_key, providers[0].accounts[1].headers.api-key, ...
    reason: str


class FallThrough(msgspec.Struct, frozen=True, kw_only=True):
    """A route target that cannot work for want of credentials. ``first``: requests go to
    it first (the top priority; with another strategy, those that pick it); ``next``: the
    targets they fall through to (empty: the route cannot answer)."""

    route: str
    strategy: str
    target: str  # provider/model
    first: bool
    next: tuple[str, ...]


class CredentialReport(msgspec.Struct, frozen=True, kw_only=True):
    gaps: tuple[CredentialGap, ...] = ()
    unusable: tuple[str, ...] = ()  # providers none of whose accounts can be used
    falls_through: tuple[FallThrough, ...] = ()

    def warnings(self) -> list[str]:
        """One line per unusable provider and per route that falls through."""
        lines = []
        for provider in self.unusable:
            reasons = "; ".join(gap.reason for gap in self.gaps if gap.provider == provider)
            lines.append(f"provider {provider} has no usable credentials: {reasons}")
        for gap in self.gaps:
            if gap.provider not in self.unusable:
                lines.append(
                    f"provider {gap.provider} account {gap.account}: {gap.reason}; its other"
                    " accounts are used"
                )
        lines += [fall_through_line(fall) for fall in self.falls_through if fall.first]
        return lines


def fall_through_line(fall: FallThrough) -> str:
    which = "first target" if fall.strategy == "priority" else "target"
    why = f"route {fall.route}: its {which} {fall.target} cannot work (no usable credentials)"
    if not fall.next:
        return f"{why}, and neither can any other: every request to it fails"
    whose = "its requests" if fall.strategy == "priority" else "the requests that pick it"
    return f"{why}, so {whose} fall through to {', '.join(fall.next)}"


def check_credentials(
    config: Config,
    environ: Mapping[str, str],
    vault: Collection[str] | None,
    *,
    vault_error: str | None = None,
) -> CredentialReport:
    """What ``config``'s providers lack, given the ``environ`` and the names in ``vault``
    (None: no vault was opened; ``vault_error`` says why, when it could not be)."""
    resolver = _References(environ, vault, vault_error)
    gaps: list[CredentialGap] = []
    unusable: list[str] = []
    for index, provider in enumerate(config.providers):
        found = list(_provider_gaps(index, provider, resolver))
        gaps += found
        accounts = max(len(provider.accounts), 1)
        if len({gap.account for gap in found}) == accounts:
            unusable.append(provider.name)
    return CredentialReport(
        gaps=tuple(gaps),
        unusable=tuple(unusable),
        falls_through=tuple(_falls_through(config.routes, set(unusable))),
    )


class _References:
    def __init__(
        self, environ: Mapping[str, str], vault: Collection[str] | None, vault_error: str | None
    ) -> None:
        self._environ = environ
        self._vault = vault
        self._vault_error = vault_error

    def problem(self, field: str, reference: str) -> str | None:
        """Why ``reference`` (env:NAME or vault:NAME) cannot be resolved, or None."""
        scheme, _, name = reference.partition(":")
        said = f"{field} is {reference}"
        if scheme == "env":
            return None if self._environ.get(name) else f"{said}, and {name} is not set"
        if scheme != "vault":
            return None  # refused at load (gw/config/validate.py)
        if self._vault is not None:
            return None if name in self._vault else f"{said}, and the vault has no {name}"
        if self._vault_error is not None:
            return f"{said}, and the vault cannot be opened: {self._vault_error}"
        return f"{said}, and there is no vault: run `gw vault init` and `gw vault set {name}`"


def _provider_gaps(
    index: int, provider: ProviderConfig, references: _References
) -> list[CredentialGap]:
    here = f"providers[{index}]"
    if not provider.accounts:
        reasons = _account_problems(here, provider, provider.api_key, provider.headers)
        return [CredentialGap(provider=provider.name, account=None, field=f, reason=r)
                for f, r in _resolved(reasons, references)]  # fmt: skip
    gaps = []
    for number, account in enumerate(provider.accounts):
        where = f"{here}.accounts[{number}]"
        key = account.api_key or provider.api_key
        key_field = where if account.api_key else here
        headers = {**provider.headers, **account.headers}
        problems = _account_problems(key_field, provider, key, headers, base_url=account.base_url)
        gaps += [
            CredentialGap(provider=provider.name, account=account.name, field=f, reason=r)
            for f, r in _resolved(problems, references)
        ]
    return gaps


def _account_problems(
    here: str,
    provider: ProviderConfig,
    key: str | None,
    headers: Mapping[str, str],
    *,
    base_url: str | None = None,
) -> list[tuple[str, str | None, str | None]]:
    """(field, reference to resolve, or a problem already known) for one account."""
    found: list[tuple[str, str | None, str | None]] = []
    if key is not None:
        found.append((f"{here}.api_key", key, None))
    elif _needs_key(provider, base_url or provider.base_url, headers):
        found.append(
            (
                f"{here}.api_key",
                None,
                f"{here} (kind {provider.kind}) has no api_key, and its API refuses calls"
                " without one: set api_key to env:NAME or vault:NAME",
            )
        )
    for name, value in headers.items():
        if value.startswith(("env:", "vault:")):
            found.append((f"{here}.headers.{name}", value, None))
    return found


def _resolved(
    problems: list[tuple[str, str | None, str | None]], references: _References
) -> list[tuple[str, str]]:
    found = []
    for field, reference, known in problems:
        reason = known if reference is None else references.problem(field, reference)
        if reason is not None:
            found.append((field, reason))
    return found


def _needs_key(provider: ProviderConfig, base_url: str | None, headers: Mapping[str, str]) -> bool:
    if provider.kind not in NEEDS_KEY or KEY_HEADERS & {name.lower() for name in headers}:
        return False
    return not _is_local(base_url)


def _is_local(url: str | None) -> bool:
    """A loopback or private base URL: a local server, which may take no key."""
    return url is not None and base_url_host_kind(url)[1] in ("loopback", "private")


def _falls_through(routes: tuple[RouteConfig, ...], unusable: set[str]) -> list[FallThrough]:
    found = []
    for route in routes:
        ordered = sorted(route.targets, key=lambda t: t.priority)  # stable: config order
        names = [f"{t.provider}/{t.model}" for t in ordered]
        working = [
            name for name, t in zip(names, ordered, strict=True) if t.provider not in unusable
        ]
        top = ordered[0].priority if ordered else 0
        for name, target in zip(names, ordered, strict=True):
            if target.provider not in unusable:
                continue
            first = route.strategy != "priority" or target.priority == top
            found.append(
                FallThrough(
                    route=route.name,
                    strategy=route.strategy,
                    target=name,
                    first=first,
                    next=tuple(working),
                )
            )
    return found

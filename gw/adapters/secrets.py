"""Resolve credential references (``env:NAME``, ``vault:NAME``) at call time; values never
leave the caller, and no error message ever carries one."""

from __future__ import annotations

from collections.abc import Mapping

from gw.config.credentials import CredentialReport, check_credentials
from gw.config.schema import Config
from gw.config.snapshot import DEFAULT_ACCOUNT
from gw.config.validate import SECRET_SCHEMES
from gw.errors import UpstreamAuthFailedError
from gw.ports import EmbeddingCall, UpstreamCall
from gw.secret_text import remember_secret

VAULT_SCHEME = "vault"


class SecretResolver:
    """Looks references up in the environment and the vault it was given. ``vault`` is the
    vault's NAME -> secret, read when gw starts and again when a reloaded config refers to
    the vault; None when gw opened no vault."""

    def __init__(self, environ: Mapping[str, str], vault: Mapping[str, str] | None = None) -> None:
        self._environ = environ
        self._vault = vault

    def use_vault(self, vault: Mapping[str, str]) -> None:
        """Look vault references up in ``vault`` from now on (the vault read again when a
        reloaded config names a secret)."""
        self._vault = vault

    def check(self, config: Config) -> CredentialReport:
        """The providers of ``config`` whose credentials would not resolve here, and the
        routes that fall through because of it (gw/config/credentials.py)."""
        names = None if self._vault is None else set(self._vault)
        return check_credentials(config, self._environ, names)

    def api_key(self, call: UpstreamCall | EmbeddingCall) -> str | None:
        """The key of the call's account, or None when it has none (keyless servers)."""
        reference = call.provider.api_key
        if not reference:
            return None
        where = f"provider {call.provider.name}"
        if call.account not in (None, DEFAULT_ACCOUNT):
            where += f" account {call.account}"
        return self.resolve(reference, field=f"{where} api_key")

    def headers(self, call: UpstreamCall | EmbeddingCall) -> dict[str, str]:
        """The account's extra ``headers``, with env:NAME and vault:NAME values resolved."""
        headers = call.provider.headers
        if not headers:
            return {}
        where = f"provider {call.provider.name} header"
        return {
            name: self.resolve(value, field=f"{where} {name}")
            if value.startswith(SECRET_SCHEMES)
            else value
            for name, value in headers.items()
        }

    def resolve(self, reference: str, *, field: str) -> str:
        """The secret ``reference`` points at; ``field`` names where it was configured."""
        scheme, _, name = reference.partition(":")
        if scheme == "env":
            value = self._environ.get(name)
            if value:
                remember_secret(value)
                return value
            raise UpstreamAuthFailedError(
                f"{field} is env:{name}, and {name} is not set in gw's environment; "
                "export it and restart gw",
                blame="gateway",
            )
        if scheme == VAULT_SCHEME:
            return self._from_vault(name, field=field)
        raise UpstreamAuthFailedError(  # never the value: it may be a pasted secret
            f"{field} is not an env:NAME or vault:NAME reference; put the secret in the "
            "environment or the vault and refer to it",
            blame="gateway",
        )

    def _from_vault(self, name: str, *, field: str) -> str:
        if self._vault is None:
            raise UpstreamAuthFailedError(
                f"{field} is vault:{name}, and this gw opened no vault; run "
                f"`gw vault init` and `gw vault set {name}`, then save the config file again",
                blame="gateway",
            )
        value = self._vault.get(name)
        if value:
            remember_secret(value)
            return value
        raise UpstreamAuthFailedError(
            f"{field} is vault:{name}, and the vault holds no secret named {name}; "
            f"run `gw vault set {name}`, then save the config file again (or restart gw)",
            blame="gateway",
        )


def vault_references(config: Config) -> dict[str, str]:
    """Each ``vault:NAME`` the config refers to, field -> NAME, in config order."""
    fields: dict[str, str | None] = {"auth.admin_key": config.auth.admin_key}
    for index, provider in enumerate(config.providers):
        holders = [(f"providers[{index}]", provider)] + [
            (f"providers[{index}].accounts[{position}]", account)
            for position, account in enumerate(provider.accounts)
        ]
        for where, holder in holders:
            fields[f"{where}.api_key"] = holder.api_key
            for name, value in holder.headers.items():
                fields[f"{where}.headers.{name}"] = value
    for name, value in config.telemetry.otlp.headers.items():  # resolved at start: gw/startup
        fields[f"telemetry.otlp.headers.{name}"] = value
    prefix = f"{VAULT_SCHEME}:"
    return {
        field: reference.removeprefix(prefix)
        for field, reference in fields.items()
        if reference and reference.startswith(prefix)
    }

"""Resolve credential references (``env:NAME``) at call time; values never leave the caller."""

from __future__ import annotations

from collections.abc import Mapping

from gw.config.snapshot import DEFAULT_ACCOUNT
from gw.errors import UpstreamAuthFailedError
from gw.ports import EmbeddingCall, UpstreamCall


class SecretResolver:
    """Looks references up in the environment it was given (the vault arrives later)."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ

    def api_key(self, call: UpstreamCall | EmbeddingCall) -> str | None:
        """The key of the call's account, or None when it has none (keyless servers)."""
        reference = call.provider.api_key
        if not reference:
            return None
        where = f"provider {call.provider.name}"
        if call.account not in (None, DEFAULT_ACCOUNT):
            where += f" account {call.account}"
        return self.resolve(reference, field=f"{where} api_key")

    def resolve(self, reference: str, *, field: str) -> str:
        """The secret ``reference`` points at; ``field`` names where it was configured."""
        scheme, _, name = reference.partition(":")
        if scheme == "env":
            value = self._environ.get(name)
            if value:
                return value
            raise UpstreamAuthFailedError(
                f"{field} is env:{name}, and {name} is not set in gw's environment; "
                "export it and restart gw",
                blame="gateway",
            )
        raise UpstreamAuthFailedError(
            f"{field}: {scheme}: references are not available in this version of gw; use env:NAME",
            blame="gateway",
        )

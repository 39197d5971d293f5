"""Who is calling: ``open`` mode lets anyone on loopback in; ``keys`` mode needs a key.

API keys and tenants arrive with their own issue; until then ``keys`` mode accepts only the
admin key (``auth.admin_key``), so a gateway exposed beyond loopback is never open by accident.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Mapping
from typing import Literal

import msgspec

from gw.errors import AuthenticationFailedError

AuthMode = Literal["open", "keys"]


class Principal(msgspec.Struct, frozen=True, kw_only=True):
    key_id: str | None = None
    tenant: str | None = None


ANONYMOUS = Principal()


class Authenticator:
    def __init__(self, mode: AuthMode, admin_key: str | None) -> None:
        self.mode = mode
        self._admin_key = admin_key

    def authenticate(self, headers: Mapping[str, str]) -> Principal:
        if self.mode == "open":
            return ANONYMOUS
        token = bearer_token(headers)
        if token is None:
            raise AuthenticationFailedError(
                "no API key: send it as 'Authorization: Bearer <key>' or 'x-api-key'"
            )
        if self._admin_key and hmac.compare_digest(token.encode(), self._admin_key.encode()):
            return Principal(key_id="admin")
        raise AuthenticationFailedError("the API key is not valid (unknown or revoked)")


def bearer_token(headers: Mapping[str, str]) -> str | None:
    authorization = headers.get("authorization", "")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return headers.get("x-api-key") or None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def resolve_mode(configured: AuthMode | None, host: str, *, keys_exist: bool) -> AuthMode:
    """The contract: ``open`` on a loopback bind with no keys, otherwise ``keys``."""
    if configured is not None:
        return configured
    return "open" if is_loopback(host) and not keys_exist else "keys"

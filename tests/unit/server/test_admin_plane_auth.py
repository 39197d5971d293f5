"""The admin plane is never anonymous: the local admin token (from this machine only), a
key with an admin scope, or 401 naming the token file; admin scopes nest."""

from __future__ import annotations

import asyncio

import pytest

from gw.errors import AuthenticationFailedError, PermissionDeniedError
from gw.server.auth import (
    ANONYMOUS,
    LOCAL_ADMIN,
    Authenticator,
    Principal,
    is_local_peer,
    require_scope,
)
from gw.store.api_keys import SCOPES, grants, parse_scopes

TOKEN = "gw-local-0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"
PATH = "/home/u/.local/state/gw/admin-token"
ADMIN_KEY = "an-admin-key-0123456789abcdefghijkl"


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def admin(auth: Authenticator, headers: dict[str, str], client: str = "127.0.0.1") -> Principal:
    return asyncio.run(auth.authenticate_admin(headers, client, "127.0.0.1"))


@pytest.mark.parametrize("mode", ["open", "keys"])
def test_the_local_token_is_an_admin_in_either_mode(mode: str) -> None:
    auth = Authenticator(mode, ADMIN_KEY, local_token=TOKEN, local_token_path=PATH)  # type: ignore[arg-type]
    assert admin(auth, bearer(TOKEN)) == LOCAL_ADMIN
    assert admin(auth, {"x-api-key": TOKEN}) == LOCAL_ADMIN
    assert admin(auth, bearer(ADMIN_KEY)).key_id == "admin"  # the admin key works in open mode
    assert LOCAL_ADMIN.has_scope("admin:config")
    assert not LOCAL_ADMIN.has_scope("inference")  # the admin plane only


def test_open_mode_without_a_token_is_401_naming_the_file() -> None:
    auth = Authenticator("open", None, local_token=TOKEN, local_token_path=PATH)
    with pytest.raises(AuthenticationFailedError) as refused:
        admin(auth, {})
    message = str(refused.value)
    assert PATH in message
    assert "gw CLI" in message
    assert "sends it by itself" in message
    assert TOKEN not in message
    with pytest.raises(AuthenticationFailedError, match="not valid"):
        admin(auth, bearer("gw-local-wrong"))
    # Inference stays open (DESIGN.md): no token needed there.
    assert asyncio.run(auth.authenticate({})) == ANONYMOUS


def test_keys_mode_without_a_key_names_the_token_too() -> None:
    auth = Authenticator("keys", ADMIN_KEY, local_token=TOKEN, local_token_path=PATH)
    with pytest.raises(AuthenticationFailedError, match=r"admin key.*local admin token") as refused:
        admin(auth, {})
    assert PATH in str(refused.value)
    # From elsewhere the path (a home directory, a user name) is not told.
    with pytest.raises(AuthenticationFailedError, match="admin-token file") as remote:
        asyncio.run(auth.authenticate_admin({}, "203.0.113.9", "192.0.2.1"))
    assert PATH not in str(remote.value)
    # The local token is no inference key.
    with pytest.raises(AuthenticationFailedError):
        asyncio.run(auth.authenticate(bearer(TOKEN)))


def test_the_local_token_is_refused_from_another_machine() -> None:
    auth = Authenticator("keys", ADMIN_KEY, local_token=TOKEN, local_token_path=PATH)
    with pytest.raises(AuthenticationFailedError, match="this machine only") as refused:
        asyncio.run(auth.authenticate_admin(bearer(TOKEN), "203.0.113.9", "192.0.2.1"))
    assert TOKEN not in str(refused.value)
    # A call to the machine's own LAN address comes from that address.
    served = asyncio.run(auth.authenticate_admin(bearer(TOKEN), "192.0.2.1", "192.0.2.1"))
    assert served == LOCAL_ADMIN


def test_local_peers() -> None:
    assert is_local_peer("127.0.0.1", None)
    assert is_local_peer("::1", "::")
    assert is_local_peer("10.0.0.5", "10.0.0.5")
    assert not is_local_peer("10.0.0.6", "10.0.0.5")
    assert not is_local_peer(None, "10.0.0.5")


def test_admin_scopes_nest() -> None:
    assert grants(("admin",), "admin:config")
    assert grants(("admin",), "admin:read")
    assert grants(("admin:config",), "admin:read")
    assert grants(("admin:read",), "usage:read")
    assert not grants(("admin:read",), "admin:config")
    assert not grants(("admin:read",), "admin")
    assert not grants(("usage:read",), "admin:read")
    assert not grants(("admin:config",), "inference")
    assert grants(("*",), "admin:config")


def test_a_read_key_asking_to_write_is_told_the_scope() -> None:
    reader = Principal(key_id="key_r", scopes=("admin:read",))
    with pytest.raises(PermissionDeniedError) as refused:
        require_scope(reader, "admin:config")
    assert "'admin:config' scope (or 'admin', which holds it)" in str(refused.value)
    assert "admin:read" in str(refused.value)


def test_scope_names_are_checked_with_the_valid_ones_listed() -> None:
    assert parse_scopes("admin:read,usage:read") == ("admin:read", "usage:read")
    assert "admin:read" in SCOPES
    assert "admin:config" in SCOPES
    with pytest.raises(ValueError, match="unknown scope 'admin:write'") as refused:
        parse_scopes("admin:write")
    for scope in SCOPES:
        assert scope in str(refused.value)

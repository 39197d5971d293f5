"""Who is calling, and what they may do.

``open`` mode lets anyone in (any or no token; loopback only). ``keys`` mode needs a key:
the admin key (``auth.admin_key``: every scope, no tenant) or an API key made by
``gw keys create`` (its tenant, scopes and model list), sent as ``Authorization: Bearer``
or ``x-api-key`` (Gemini clients: ``x-goog-api-key``, or ``?key=`` on a Gemini API path).
API keys are checked by digest through ``KeyCache``, so a new key or a revocation takes
effect within a second; an expired or revoked key gets 401, a key without
the scope an endpoint needs or outside its model list 403, and so does a key with an IP
allowlist (``gw keys create --allow-ip``) used from an address outside it. That address is
the one the server sees: the socket peer, or the ``X-Forwarded-For`` client when the peer is
one of ``server.trusted_proxies`` (gw/server/edges.py); when none is known, such a key is
refused.

The mode: ``auth.mode`` when set; else ``open`` on a loopback bind while no active key
exists, else ``keys``. An ``open`` chosen that way is provisional: while it lasts, each
request asks the key cache (fresh within a second) whether an active key exists now, and
the first yes switches this process to ``keys`` for good: revoking every key later does not
reopen it (a restart with no active key does). Start-up refuses a bind beyond loopback in
``open`` mode, or without a strong admin key (``exposure_problem``).

The admin plane (``/admin/v1/*``, ``/metrics``, the dashboard) is never anonymous, in either
mode (``authenticate_admin``): it takes the admin key, an API key with an admin scope, or
the local admin token that ``gw serve`` writes at every start to ``<state-dir>/admin-token``
(0600, gw/store/admin_token.py), which the gw CLI reads by itself. That token is an admin
(``admin`` scope) in ``keys`` mode too, so the CLI on the gateway's machine works without
``GW_ADMIN_KEY``: whoever can read the file, the gateway's own user, can already read the
state directory's database and vault key and the server's environment, so it grants nothing
new. It is taken only from this machine (a loopback peer, or one whose address is the
server's own), only on the admin plane (never for inference), and dies with the process.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Final, Literal
from urllib.parse import parse_qs

import msgspec

from gw.config.schema import TenantBudget
from gw.errors import AuthenticationFailedError, PermissionDeniedError
from gw.ports import Clock
from gw.server.key_cache import KeyCache
from gw.store.api_keys import NO_BUDGET, Scope, digest_of, grants, looks_like_key
from gw.store.ip_allowlist import allows, client_address

AuthMode = Literal["open", "keys"]
ADMIN_KEY_ID: Final = "admin"  # the key id of whoever holds auth.admin_key
MIN_ADMIN_KEY_CHARS: Final = 32

log = logging.getLogger("gw.auth")


class Principal(msgspec.Struct, frozen=True, kw_only=True):
    """The caller: which key (None in open mode), its tenant, scopes and model list."""

    key_id: str | None = None
    tenant: str | None = None
    scopes: tuple[str, ...] = ()  # none unless given: a forgotten field grants nothing
    models: tuple[str, ...] | None = None  # None: any route or model
    budget: TenantBudget | None = None  # the key's own budget (gw keys ... --daily-usd)

    def has_scope(self, scope: Scope) -> bool:
        return grants(self.scopes, scope)


ANONYMOUS = Principal(scopes=("*",))  # open mode, inference: every scope (loopback only)
ADMIN = Principal(key_id=ADMIN_KEY_ID, scopes=("*",))
LOCAL_ADMIN_KEY_ID: Final = "local-admin"  # the key id of whoever sends the local token
LOCAL_ADMIN = Principal(key_id=LOCAL_ADMIN_KEY_ID, scopes=("admin",))
KEY_WATCH_S = 1.0  # how often a provisional open mode looks for a key


class Authenticator:
    """Turns a request's headers into a ``Principal``, or raises ``authentication_failed``."""

    def __init__(
        self,
        mode: AuthMode,
        admin_key: str | None,
        *,
        keys: KeyCache | None = None,
        clock: Clock | None = None,
        open_until_keys: bool = False,
        on_keys_mode: Callable[[], None] | None = None,
        local_token: str | None = None,
        local_token_path: str = "<state-dir>/admin-token",  # noqa: S107 - a path, not a secret
    ) -> None:
        """``keys``/``clock``: where API keys are looked up and the time that expires them
        (without them only the admin key is accepted). ``open_until_keys``: ``mode`` is a
        provisional ``open`` that turns ``keys`` once an active key exists, and then calls
        ``on_keys_mode``. ``local_token``: the local admin token, written to
        ``local_token_path`` (named in messages; without a token only keys reach the
        admin plane)."""
        if keys is not None and clock is None:
            raise ValueError("API keys need a clock to tell when they expire")
        self._mode: AuthMode = mode
        self._admin_digest = digest_of(admin_key) if admin_key else None
        self._local_digest = digest_of(local_token) if local_token else None
        self._local_token_path = local_token_path
        self._keys = keys
        self._clock = clock
        self._open_until_keys = open_until_keys and keys is not None
        self._on_keys_mode = on_keys_mode
        self._key_watch: asyncio.Task[None] | None = None

    @property
    def mode(self) -> AuthMode:
        """The mode now: a provisional ``open`` turns ``keys`` at the first request after
        a key exists, or within a second (``start``), whichever comes first."""
        return self._mode

    async def start(self) -> None:
        """While open only until a key exists, look for one once a second, so the switch
        (and ``on_keys_mode``: server.json) does not wait for the next request."""
        if self.provisional:
            self._key_watch = asyncio.create_task(self._watch_for_keys())

    async def stop(self) -> None:
        if self._key_watch is not None:
            self._key_watch.cancel()
            await asyncio.gather(self._key_watch, return_exceptions=True)

    async def _watch_for_keys(self) -> None:
        while self.provisional:
            try:
                found = self._keys is not None and await self._keys.any_active_now()
            except Exception:  # a failed look is logged; the next one may work
                log.exception("looking for an API key failed; trying again in a second")
                found = False
            if found:
                self._switch_to_keys()
                return
            await asyncio.sleep(KEY_WATCH_S)

    @property
    def provisional(self) -> bool:
        """Open now, but only until an active API key exists."""
        return self._mode == "open" and self._open_until_keys

    async def authenticate(
        self, headers: Mapping[str, str], client: str | None = None, query_key: str | None = None
    ) -> Principal:
        """The caller of a request with these ``headers`` from address ``client`` (the host
        the server sees; None when unknown, which no IP allowlist admits); ``query_key``:
        a Gemini client's ``?key=`` (``query_api_key``)."""
        if self._mode == "open":
            if not (self._open_until_keys and await self._key_exists()):
                return ANONYMOUS
            self._switch_to_keys()
        token = bearer_token(headers, query_key)
        if token is None:
            raise AuthenticationFailedError(
                "no API key: send it as 'Authorization: Bearer <key>' or 'x-api-key' "
                "(Gemini clients: 'x-goog-api-key')"
            )
        return await self._keyed(token, client)

    async def authenticate_admin(
        self, headers: Mapping[str, str], client: str | None, server_host: str | None
    ) -> Principal:
        """The caller of an admin-plane request (module docstring), never ``ANONYMOUS``:
        the local admin token from this machine (``client`` a loopback address or
        ``server_host``, the address the connection reached), else a key as in ``keys``
        mode, whatever the mode. No credential at all is 401 naming the token file."""
        token = bearer_token(headers)
        if token is not None and self._is_local_token(token):
            if not is_local_peer(client, server_host):
                raise AuthenticationFailedError(
                    "the local admin token is taken from this machine only; from elsewhere "
                    "send the admin key or an API key with an admin scope"
                )
            return LOCAL_ADMIN
        if self._mode == "open" and self._open_until_keys and await self._key_exists():
            self._switch_to_keys()
        if token is None:
            raise AuthenticationFailedError(self._admin_hint(is_local_peer(client, server_host)))
        return await self._keyed(token, client)

    def _admin_hint(self, local: bool) -> str:
        # The path (a home directory, a user name) is told to this machine's callers only.
        path = self._local_token_path if local else "the state directory's admin-token file"
        where = (
            f"gw serve wrote it to {path} (mode 0600, a new one at every start), and the gw "
            "CLI on this machine sends it by itself; other clients send it as "
            "'Authorization: Bearer <token>', and `gw dashboard` prints a login link for a "
            "browser"
        )
        if self._mode == "open":
            return f"the admin API needs the local admin token, even while auth is open: {where}"
        return (
            "no key: the admin API needs the admin key or an API key with an admin scope, "
            f"sent as 'Authorization: Bearer <key>', or the local admin token: {where}"
        )

    def _is_local_token(self, token: str) -> bool:
        # Digests compared, not the tokens: equal length, so the timing tells nothing.
        return self._local_digest is not None and hmac.compare_digest(
            digest_of(token), self._local_digest
        )

    async def _keyed(self, token: str, client: str | None) -> Principal:
        """The admin key or an API key; 401 for anything else."""
        digest = digest_of(token)
        if self._admin_digest is not None and hmac.compare_digest(digest, self._admin_digest):
            return ADMIN
        return await self._api_key(token, digest, client)

    def _switch_to_keys(self) -> None:
        if self._mode == "keys":  # a concurrent request switched while this one awaited
            return
        self._mode = "keys"
        log.warning("an API key exists now: auth mode switched from open to keys")
        if self._on_keys_mode is not None:
            try:
                self._on_keys_mode()
            except Exception:  # the switch stands; only telling the CLI (server.json) failed
                log.exception("could not record the switch to keys in server.json")

    async def _key_exists(self) -> bool:
        return self._keys is not None and await self._keys.any_active()

    async def _api_key(self, token: str, digest: str, client: str | None) -> Principal:
        unknown = AuthenticationFailedError("the API key is not valid (unknown)")
        if self._keys is None or self._clock is None or not looks_like_key(token):
            raise unknown
        found = await self._keys.find(digest)
        if found is None or not hmac.compare_digest(found.key.digest, digest):
            raise unknown
        key = found.key
        if key.revoked_at is not None:
            raise AuthenticationFailedError(f"the API key {key.id} has been revoked")
        if key.expires_at is not None and key.expired(self._clock.time()):
            when = datetime.fromtimestamp(key.expires_at, UTC).isoformat(timespec="seconds")
            raise AuthenticationFailedError(
                f"the API key {key.id} expired at {when.replace('+00:00', 'Z')}"
            )
        if found.networks is not None and not allows(found.networks, client):
            raise _outside_allowlist(key.id, client)
        return Principal(
            key_id=key.id,
            tenant=key.tenant,
            scopes=key.scopes,
            models=key.models,
            budget=None if key.budget == NO_BUDGET else key.budget,
        )


def _outside_allowlist(key_id: str, client: str | None) -> PermissionDeniedError:
    """Names the address gw saw (a proxy's, when the proxy is not trusted), never the list:
    whoever holds a stolen key learns nothing about where it would work."""
    address = client_address(client)
    if address is None:
        where = "an unknown address: it has an IP allowlist, and gw cannot tell where you are"
    else:
        where = f"address {address}: its IP allowlist does not include it"
    return PermissionDeniedError(
        f"the API key {key_id} is not allowed from {where}. Call from an allowed network, or"
        " have a key made for this address (gw keys create --allow-ip); behind a reverse"
        " proxy, list the proxy in server.trusted_proxies so gw sees the client's own address"
    )


def require_scope(principal: Principal, scope: Scope) -> None:
    """Raise ``permission_denied`` naming ``scope`` unless ``principal`` holds it."""
    if principal.has_scope(scope):
        return
    held = ", ".join(principal.scopes) or "none"
    also = " (or 'admin', which holds it)" if scope.startswith("admin:") else ""
    raise PermissionDeniedError(
        f"this endpoint needs the {scope!r} scope{also}; this API key has: {held}"
    )


def require_model(principal: Principal, model: str) -> None:
    """Raise ``permission_denied`` unless the key's model list allows ``model`` (the route
    name or ``provider/model`` the client sent, matched exactly)."""
    if principal.models is None or model in principal.models:
        return
    raise PermissionDeniedError(
        f"this API key may not use model {model!r}; it is limited to: "
        + ", ".join(principal.models)
    )


def bearer_token(headers: Mapping[str, str], query_key: str | None = None) -> str | None:
    authorization = headers.get("authorization", "")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return headers.get("x-api-key") or headers.get("x-goog-api-key") or query_key or None


def is_gemini_path(path: str) -> bool:
    """A path of Google's Gemini API: under /v1beta, or a model's method under /v1
    (``/v1/models/{model}:generateContent``, where google-genai's default version puts it)."""
    return (
        path == "/v1beta"
        or path.startswith("/v1beta/")
        or (path.startswith("/v1/models/") and ":" in path)
    )


def query_api_key(path: str, query_string: bytes) -> str | None:
    """The ``?key=`` Google's clients may send instead of a header: taken on Gemini API
    paths only (``is_gemini_path``), so no other endpoint takes a key from a URL."""
    if b"key=" not in query_string or not is_gemini_path(path):
        return None
    keys = parse_qs(query_string.decode("latin-1")).get("key")
    return keys[0] if keys else None


def is_local_peer(client: str | None, server_host: str | None) -> bool:
    """Whether a connection from ``client`` to ``server_host`` comes from this machine: a
    loopback peer, or one whose address is the one it reached (a call to the machine's own
    LAN address leaves from that address)."""
    if client is None:
        return False
    return is_loopback(client) or (server_host is not None and client == server_host)


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


# Values people leave in configs and .env files instead of a real secret.
_PLACEHOLDER = re.compile(
    r"change.?me|replace.?me|your.?(admin.?)?(api.?)?(key|secret|token)|placeholder|example"
    r"|dummy|fixme|todo|insert.?here|(^|[-_])x{3,}($|[-_])|\.\.\.|^<.*>$",
    re.IGNORECASE,
)
_MIN_DISTINCT_CHARS: Final = 8


def is_placeholder(secret: str) -> bool:
    """An obvious stand-in (``changeme``, ``xxxx``, ``your-key-here``, ``aaaa...``)."""
    return bool(_PLACEHOLDER.search(secret)) or len(set(secret)) < _MIN_DISTINCT_CHARS


def exposure_problem(configured: AuthMode | None, host: str, admin_key: str | None) -> str | None:
    """Why gw must not start bound to ``host`` with this auth, or None. Beyond loopback the
    mode is ``keys`` and the admin key must be real: 32+ characters, not a placeholder."""
    if is_loopback(host):
        return None
    if configured == "open":
        return (
            f"auth.mode is open but server.host {host} is not a loopback address; "
            "open mode is for loopback only: set auth.mode: keys or bind 127.0.0.1"
        )
    fix = "e.g. admin_key: env:GW_ADMIN_KEY with GW_ADMIN_KEY=$(openssl rand -base64 32)"
    if not admin_key:
        return (
            f"server.host {host} is not a loopback address, so auth is keys mode and needs "
            f"an admin key; set auth.admin_key ({fix}), or bind 127.0.0.1"
        )
    if len(admin_key) < MIN_ADMIN_KEY_CHARS:
        return (
            f"auth.admin_key is {len(admin_key)} characters; beyond loopback it must have at "
            f"least {MIN_ADMIN_KEY_CHARS} ({fix})"
        )
    if is_placeholder(admin_key):
        return f"auth.admin_key looks like a placeholder, not a secret; set a random one ({fix})"
    return None

"""The dashboard's logins, in either auth mode: one-time links, and the sessions they open.

``gw dashboard`` asks ``POST /admin/v1/dashboard/login-link`` (the admin key, an
``admin:read`` key, or the local admin token: gw/server/auth.py) for a link
carrying a random 256-bit token, usable once within ``auth.dashboard_link_ttl`` (60 s).
Opening it in a browser redeems the token for a session: another random 256-bit id, held
by the browser in an HttpOnly, SameSite=Strict cookie for ``SESSION_TTL_S`` (8 h). The
admin key never reaches the browser: not in a page, a URL or its storage.

A session is worth little by design. It authorizes the dashboard's reads only (GET and
HEAD of its page and under ``/admin/v1/``) as an ``admin:read`` principal with key id
``dashboard``, plus one POST that changes nothing: ``/admin/v1/config/replay``, the Config
tab's preview of a candidate config (``gw replay``: routing re-run on recorded traces, no
upstream call, no state written). That POST must come from the dashboard's own page: its
``Origin``, which browsers send on every POST, must be gw's own (a foreign one gets nothing,
as below; none at all is 403). Any other method or path with only the cookie is 403, and a
request a browser marks as coming from another site (``Sec-Fetch-Site``, ``Origin``) gets
nothing from it.

Everything lives in this process's memory: a restart logs the browser out (run
``gw dashboard`` again). Only SHA-256 digests of tokens and session ids are kept, and at
most ``MAX_LINKS`` links and ``MAX_SESSIONS`` sessions: beyond that the oldest is dropped,
so whoever asks for links cannot grow memory.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Mapping
from typing import Final

from gw.errors import PermissionDeniedError
from gw.ports import Clock
from gw.server.auth import Principal
from gw.server.browser_guard import is_own_origin

COOKIE_NAME: Final = "gw_dashboard"
DASHBOARD_KEY_ID: Final = "dashboard"
LINK_TTL_S: Final = 60.0
SESSION_TTL_S: Final = 8 * 3600.0
MAX_LINKS: Final = 16
MAX_SESSIONS: Final = 64
SECRET_BYTES: Final = 32  # 256 bits
READ_METHODS: Final = frozenset({"GET", "HEAD"})
READ_PREFIX: Final = "/admin/v1/"
# POSTs a session may send: each computes an answer and changes nothing (no write, no
# upstream call), so it is a read that needs a body.
READ_POSTS: Final = frozenset({"/admin/v1/config/replay"})
PAGE_PATH: Final = "/"  # the dashboard's page: shown to a session (or an admin) only
DASHBOARD = Principal(key_id=DASHBOARD_KEY_ID, scopes=("admin:read",))


def new_secret() -> str:
    return secrets.token_urlsafe(SECRET_BYTES)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class _Expiring:
    """Digests with monotonic deadlines, oldest first, at most ``limit`` of them."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._deadlines: dict[str, float] = {}  # insertion order: oldest first

    def add(self, digest: str, deadline: float, now: float) -> None:
        self.prune(now)
        while len(self._deadlines) >= self._limit:
            del self._deadlines[next(iter(self._deadlines))]
        self._deadlines[digest] = deadline

    def live(self, digest: str, now: float) -> bool:
        deadline = self._deadlines.get(digest)
        if deadline is None:
            return False
        if deadline <= now:
            del self._deadlines[digest]
            return False
        return True

    def pop(self, digest: str, now: float) -> bool:
        """Whether ``digest`` was live; it is gone either way."""
        live = self.live(digest, now)
        self._deadlines.pop(digest, None)
        return live

    def prune(self, now: float) -> None:
        for digest in [d for d, deadline in self._deadlines.items() if deadline <= now]:
            del self._deadlines[digest]

    def __len__(self) -> int:
        return len(self._deadlines)


class DashboardSessions:
    """Login links and sessions (module docstring); the clock and the secrets come in."""

    def __init__(self, clock: Clock, *, secret: Callable[[], str] = new_secret) -> None:
        self._clock = clock
        self._secret = secret
        self._links = _Expiring(MAX_LINKS)
        self._sessions = _Expiring(MAX_SESSIONS)

    def issue_link_token(self, ttl: float = LINK_TTL_S) -> str:
        """A fresh one-time token, valid ``ttl`` seconds (``auth.dashboard_link_ttl``)."""
        token = self._secret()
        now = self._clock.monotonic()
        self._links.add(_digest(token), now + ttl, now)
        return token

    def redeem(self, token: str) -> str | None:
        """A new session id for a live, unused ``token`` (used up now); None otherwise."""
        now = self._clock.monotonic()
        if not token or not self._links.pop(_digest(token), now):
            return None
        session = self._secret()
        self._sessions.add(_digest(session), now + SESSION_TTL_S, now)
        return session

    def is_live(self, session: str) -> bool:
        return bool(session) and self._sessions.live(_digest(session), self._clock.monotonic())

    def end(self, session: str) -> None:
        self._sessions.pop(_digest(session), self._clock.monotonic())

    @property
    def counts(self) -> tuple[int, int]:
        """(live links, live sessions), expired ones dropped first."""
        now = self._clock.monotonic()
        self._links.prune(now)
        self._sessions.prune(now)
        return len(self._links), len(self._sessions)

    def authorize(
        self, method: str, path: str, headers: Mapping[str, str], cookies: Mapping[str, str]
    ) -> Principal | None:
        """The dashboard principal for a request carrying a live session cookie, or None
        (then the request is authenticated as any other). A live cookie on anything but a
        read of the admin API (``READ_POSTS`` included, from the page's own origin) is
        refused outright: the dashboard never writes."""
        session = cookies.get(COOKIE_NAME)
        readable = path == PAGE_PATH or path.startswith(READ_PREFIX)
        if not session or not readable or from_elsewhere(headers):
            return None
        if not self.is_live(session):
            return None
        verb = method.upper()
        if verb in READ_METHODS:
            return DASHBOARD
        if verb == "POST" and path in READ_POSTS:
            # A browser sends Origin on every POST; without one this is no page's fetch
            # (a foreign one was turned away above), so the page's own is required.
            if headers.get("origin") is None:
                raise PermissionDeniedError(
                    f"a dashboard session may POST {path} from the dashboard's page only "
                    "(its Origin); elsewhere send the admin key as 'Authorization: Bearer <key>'"
                )
            return DASHBOARD
        raise PermissionDeniedError(
            f"a dashboard session may only read (GET, and POST {', '.join(sorted(READ_POSTS))}); "
            f"{method} {path} needs the admin key: send it as 'Authorization: Bearer <key>' "
            "(the gw CLI does)"
        )


def from_elsewhere(headers: Mapping[str, str]) -> bool:
    """Whether a browser says this request comes from a page other than gw's own.
    SameSite=Strict already keeps the cookie off cross-site requests; this also covers a
    page on another port of the same host (same site, other origin)."""
    fetch_site = headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site not in ("same-origin", "none"):
        return True
    origin = headers.get("origin")
    return origin is not None and not is_own_origin(origin, headers)

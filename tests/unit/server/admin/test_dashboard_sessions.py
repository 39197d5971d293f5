"""The dashboard's login links and sessions on a fake clock: one use, expiry, the caps that
bound memory, and what a session cookie may do."""

from __future__ import annotations

import itertools

import pytest

from gw.errors import PermissionDeniedError
from gw.server.admin.dashboard_sessions import (
    COOKIE_NAME,
    DASHBOARD,
    LINK_TTL_S,
    MAX_LINKS,
    MAX_SESSIONS,
    SESSION_TTL_S,
    DashboardSessions,
    from_elsewhere,
    new_secret,
)

HOST = {"host": "127.0.0.1:8787"}


class FakeClock:
    def __init__(self) -> None:
        self.mono = 1000.0

    def time(self) -> float:
        return 1_773_583_323.0 + self.mono

    def monotonic(self) -> float:
        return self.mono


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def sessions(clock: FakeClock) -> DashboardSessions:
    return DashboardSessions(clock)


def test_secrets_carry_256_bits() -> None:
    secret = new_secret()
    assert len(secret) >= 43  # 32 bytes, URL-safe base64 without padding
    assert secret != new_secret()


def test_a_link_works_once(sessions: DashboardSessions) -> None:
    token = sessions.issue_link_token()
    session = sessions.redeem(token)
    assert session is not None
    assert sessions.is_live(session)
    assert sessions.redeem(token) is None
    assert sessions.redeem("") is None
    assert sessions.redeem("not-a-token") is None


def test_a_link_expires(sessions: DashboardSessions, clock: FakeClock) -> None:
    token = sessions.issue_link_token()
    clock.mono += LINK_TTL_S
    assert sessions.redeem(token) is None


def test_a_session_expires_and_can_end(sessions: DashboardSessions, clock: FakeClock) -> None:
    first = sessions.redeem(sessions.issue_link_token())
    second = sessions.redeem(sessions.issue_link_token())
    assert first is not None
    assert second is not None
    sessions.end(second)
    assert not sessions.is_live(second)
    clock.mono += SESSION_TTL_S - 1
    assert sessions.is_live(first)
    clock.mono += 1
    assert not sessions.is_live(first)
    assert sessions.counts == (0, 0)


def test_links_and_sessions_are_capped_oldest_dropped_first(clock: FakeClock) -> None:
    numbers = itertools.count()
    sessions = DashboardSessions(clock, secret=lambda: f"secret-{next(numbers)}")
    tokens = [sessions.issue_link_token() for _ in range(MAX_LINKS + 5)]
    assert sessions.counts == (MAX_LINKS, 0)
    assert sessions.redeem(tokens[0]) is None  # dropped to make room
    assert sessions.redeem(tokens[-1]) is not None
    opened = []
    for _ in range(MAX_SESSIONS + 3):
        session = sessions.redeem(sessions.issue_link_token())
        assert session is not None
        opened.append(session)
    assert sessions.counts[1] == MAX_SESSIONS
    assert not sessions.is_live(opened[0])
    assert sessions.is_live(opened[-1])


def test_the_cookie_reads_the_admin_api_only(sessions: DashboardSessions) -> None:
    session = sessions.redeem(sessions.issue_link_token())
    assert session is not None
    cookies = {COOKIE_NAME: session}
    assert sessions.authorize("GET", "/admin/v1/traces", HOST, cookies) == DASHBOARD
    assert DASHBOARD.has_scope("admin:read")
    assert DASHBOARD.has_scope("usage:read")
    assert not DASHBOARD.has_scope("admin:config")  # a read key: no writes, whatever the method
    assert DASHBOARD.key_id == "dashboard"
    assert sessions.authorize("HEAD", "/admin/v1/health", HOST, cookies) == DASHBOARD
    assert sessions.authorize("GET", "/", HOST, cookies) == DASHBOARD  # the page
    # Not the admin API: the cookie means nothing there (the request needs its key).
    assert sessions.authorize("GET", "/v1/models", HOST, cookies) is None
    for method in ("POST", "PUT", "DELETE"):
        with pytest.raises(PermissionDeniedError, match="may only read"):
            sessions.authorize(method, "/admin/v1/reload", HOST, cookies)
    assert sessions.authorize("GET", "/admin/v1/traces", HOST, {}) is None
    assert sessions.authorize("POST", "/admin/v1/reload", HOST, {COOKIE_NAME: "forged"}) is None


def test_the_cookie_may_post_a_replay_preview_from_the_page_only(
    sessions: DashboardSessions,
) -> None:
    session = sessions.redeem(sessions.issue_link_token())
    assert session is not None
    cookies = {COOKIE_NAME: session}
    page = {**HOST, "origin": "http://127.0.0.1:8787", "sec-fetch-site": "same-origin"}
    replay = "/admin/v1/config/replay"
    assert sessions.authorize("POST", replay, page, cookies) == DASHBOARD
    # No Origin: no browser's fetch from the page (browsers send one on every POST).
    with pytest.raises(PermissionDeniedError, match="dashboard's page only"):
        sessions.authorize("POST", replay, HOST, cookies)
    # Another page's (another port of this host): the cookie means nothing.
    other = {**HOST, "origin": "http://127.0.0.1:3000", "sec-fetch-site": "same-site"}
    assert sessions.authorize("POST", replay, other, cookies) is None
    # Only that POST: the others, and other methods on it, stay refused.
    for method, path in (
        ("PUT", replay),
        ("DELETE", replay),
        ("POST", "/admin/v1/config/replay/x"),
        ("POST", "/admin/v1/route-preview"),
        ("POST", "/admin/v1/reload"),
    ):
        with pytest.raises(PermissionDeniedError, match="may only read"):
            sessions.authorize(method, path, page, cookies)


@pytest.mark.parametrize(
    ("headers", "elsewhere"),
    [
        ({}, False),
        ({"sec-fetch-site": "same-origin"}, False),
        ({"sec-fetch-site": "none"}, False),  # typed into the address bar
        ({"sec-fetch-site": "same-site"}, True),  # another port of this host
        ({"sec-fetch-site": "cross-site"}, True),
        ({"origin": "http://127.0.0.1:8787"}, False),
        ({"origin": "http://127.0.0.1:3000"}, True),
        ({"origin": "null"}, True),
    ],
)
def test_requests_from_other_pages_get_nothing_from_the_cookie(
    sessions: DashboardSessions, headers: dict[str, str], elsewhere: bool
) -> None:
    full = {**HOST, **headers}
    assert from_elsewhere(full) is elsewhere
    session = sessions.redeem(sessions.issue_link_token())
    assert session is not None
    found = sessions.authorize("GET", "/admin/v1/traces", full, {COOKIE_NAME: session})
    assert (found is None) is elsewhere

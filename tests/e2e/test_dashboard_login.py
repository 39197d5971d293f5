"""The dashboard's login through a live gw in keys mode (and open mode's, at the end):
`gw dashboard` prints a one-time link, the link opens a read-only session cookie once, an
expired link is refused, and no page or asset carries the admin key or runs inline script."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from http.cookies import SimpleCookie
from pathlib import Path

import httpx
import pytest

from e2e.gw_process import GwServer, run_cli

pytestmark = pytest.mark.e2e

ADMIN = "gw-admin-dashboard-0123456789abcdefghijkl"
CONFIG = """
auth: {{mode: keys, admin_key: env:GW_TEST_ADMIN, dashboard_link_ttl: {ttl}}}
providers: [{{name: mock, kind: mock}}]
routes: [{{name: mock, targets: [{{provider: mock, model: mock-1}}]}}]
"""
SHORT_TTL_S = 1.0
BEARER = {"authorization": f"Bearer {ADMIN}"}
HTML_SINKS = re.compile(r"\.(?:inner|outer)HTML\s*=|insertAdjacentHTML|document\.write|eval\(")
SECURITY_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
LINK = re.compile(r"^(http://127\.0\.0\.1:\d+)/dashboard/login\?token=([A-Za-z0-9_-]{43,})$")


def start(home: Path, ttl: str) -> GwServer:
    config = home / "gw.yaml"
    config.write_text(CONFIG.format(ttl=ttl))
    return GwServer(home / "state", config, env={"GW_TEST_ADMIN": ADMIN}).start()


@pytest.fixture(scope="module")
def keys_gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GwServer]:
    server = start(tmp_path_factory.mktemp("dashboard"), "60s")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def short_gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GwServer]:
    """Links that expire after a second, so expiry is seen without a long wait."""
    server = start(tmp_path_factory.mktemp("dashboard-short"), f"{SHORT_TTL_S:g}s")
    yield server
    server.stop()


def gw_dashboard(server: GwServer, *args: str, key: str | None = ADMIN) -> dict[str, object]:
    env = {**server.env, "GW_ADMIN_KEY": key or ""}
    done = run_cli("dashboard", "--state-dir", str(server.state_dir), "--json", *args, env=env)
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def log_in(server: GwServer, link: str) -> str:
    """Open the login link as a browser would; the session cookie's value."""
    with httpx.Client(timeout=30.0) as http:
        answer = http.get(link)
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"] == "/"
    cookie = SimpleCookie(answer.headers["set-cookie"])["gw_dashboard"]
    return cookie.value


def new_link(server: GwServer) -> str:
    with server.client() as http:
        answer = http.post("/admin/v1/dashboard/login-link", headers=BEARER)
    assert answer.status_code == 200, answer.text
    assert answer.headers["cache-control"] == "no-store"
    return str(answer.json()["url"])


def test_gw_dashboard_prints_a_link_that_logs_in_once(keys_gw: GwServer) -> None:
    printed = gw_dashboard(keys_gw)
    assert printed["auth_mode"] == "keys"
    assert printed["login_link"] is True
    assert printed["expires_in_s"] == 60
    match = LINK.match(str(printed["url"]))
    assert match is not None, printed
    assert match.group(1) == keys_gw.url

    with httpx.Client(timeout=30.0) as http:
        first = http.get(str(printed["url"]))
        second = http.get(str(printed["url"]))
    assert first.status_code == 303  # to /: the token leaves the address bar
    assert first.headers["location"] == "/"
    assert first.headers["cache-control"] == "no-store"
    assert first.headers["referrer-policy"] == "no-referrer"
    cookie = SimpleCookie(first.headers["set-cookie"])["gw_dashboard"]
    assert len(cookie.value) >= 43
    assert cookie.value != match.group(2)
    assert cookie["httponly"] is True
    assert cookie["samesite"].lower() == "strict"
    assert cookie["path"] == "/"
    assert cookie["max-age"] == "28800"
    assert not cookie["secure"]  # plain http on loopback: a Secure cookie would not return

    assert second.status_code == 403
    assert second.headers["content-type"].startswith("text/html")
    assert "cannot be used" in second.text
    assert "gw dashboard" in second.text
    assert "default-src 'self'" in second.headers["content-security-policy"]


def test_gw_dashboard_here_needs_no_admin_key(keys_gw: GwServer) -> None:
    # On the gateway's machine the CLI sends the local admin token by itself.
    printed = gw_dashboard(keys_gw, key=None)
    assert LINK.match(str(printed["url"])) is not None, printed


def test_gw_dashboard_with_a_wrong_admin_key_says_what_to_do(keys_gw: GwServer) -> None:
    env = {**keys_gw.env, "GW_ADMIN_KEY": "gw-not-a-key-0123456789abcdefghijklmnopq"}
    done = run_cli("dashboard", "--state-dir", str(keys_gw.state_dir), env=env, check=False)
    assert done.returncode == 1
    assert "GW_ADMIN_KEY" in done.stderr
    assert "token=" not in done.stdout


def test_an_expired_link_is_refused(short_gw: GwServer) -> None:
    link = new_link(short_gw)
    time.sleep(SHORT_TTL_S + 0.5)
    with httpx.Client(timeout=30.0) as http:
        answer = http.get(link)
    assert answer.status_code == 403
    assert "set-cookie" not in answer.headers
    assert "gw dashboard" in answer.text


def test_a_bad_token_is_refused(keys_gw: GwServer) -> None:
    with keys_gw.client() as http:
        for query in ("", "?token=", "?token=" + "A" * 43):
            answer = http.get("/dashboard/login" + query)
            assert answer.status_code == 403
            assert "set-cookie" not in answer.headers


def test_the_session_reads_the_admin_api_and_writes_nothing(keys_gw: GwServer) -> None:
    session = log_in(keys_gw, new_link(keys_gw))
    cookie = {"cookie": f"gw_dashboard={session}"}
    config = keys_gw.config.read_text() if keys_gw.config else ""
    with keys_gw.client() as http:
        assert http.post(
            "/v1/chat/completions",
            json={"model": "mock", "messages": [{"role": "user", "content": "hi"}]},
            headers=BEARER,
        ).is_success
        for path in (
            "/admin/v1/traces?limit=5",
            "/admin/v1/health",
            "/admin/v1/usage?by=day&since=7d",
            "/admin/v1/status",
            "/admin/v1/config",
        ):
            answer = http.get(path, headers=cookie)
            assert answer.status_code == 200, (path, answer.text)
            assert ADMIN not in answer.text
        same_origin = cookie | {"sec-fetch-site": "same-origin"}
        assert http.get("/admin/v1/traces", headers=same_origin).status_code == 200
        # Without the cookie, a forged one, or sent from another site's page: no access.
        assert http.get("/admin/v1/traces").status_code == 401
        forged = {"cookie": "gw_dashboard=" + "A" * 43}
        assert http.get("/admin/v1/traces", headers=forged).status_code == 401
        elsewhere = cookie | {"sec-fetch-site": "cross-site"}
        assert http.get("/admin/v1/traces", headers=elsewhere).status_code == 401
        # The cookie is not an API key.
        chat = http.post(
            "/v1/chat/completions",
            json={"model": "mock", "messages": [{"role": "user", "content": "hi"}]},
            headers=cookie,
        )
        assert chat.status_code == 401
        # Reads only: every write with just the cookie is refused, and changes nothing.
        writes = [
            http.post("/admin/v1/reload", headers=cookie),
            http.post("/admin/v1/dashboard/login-link", headers=cookie),
            http.put(
                "/admin/v1/routes/planted",
                json={"targets": [{"provider": "mock", "model": "mock-2"}]},
                headers=cookie,
            ),
            http.delete("/admin/v1/routes/mock", headers=cookie),
        ]
        for answer in writes:
            assert answer.status_code == 403, answer.text
            assert answer.json()["error"]["code"] == "permission_denied"
            assert "may only read" in answer.json()["error"]["message"]
        # ... while the admin key still may.
        assert http.post("/admin/v1/reload", headers=BEARER).status_code == 200
    assert (keys_gw.config.read_text() if keys_gw.config else "") == config


def test_the_session_may_post_a_replay_preview_from_its_page_only(keys_gw: GwServer) -> None:
    # The Config tab's preview: `gw replay` of a candidate, which changes nothing.
    session = log_in(keys_gw, new_link(keys_gw))
    cookie = {"cookie": f"gw_dashboard={session}"}
    page = cookie | {"origin": keys_gw.url, "sec-fetch-site": "same-origin"}
    config = keys_gw.config.read_text() if keys_gw.config else ""
    candidate = config.replace("mock-1", "mock-2")
    with keys_gw.client() as http:
        served = http.post(
            "/v1/chat/completions",
            json={"model": "mock", "messages": [{"role": "user", "content": "hi"}]},
            headers=BEARER,
        )
        keys_gw.wait_for_trace(served.headers["x-gw-request-id"])
        revision = http.get("/admin/v1/status", headers=BEARER).json()["revision"]
        answer = http.post("/admin/v1/config/replay?since=1h", content=candidate, headers=page)
        assert answer.status_code == 200, answer.text
        report = answer.json()
        assert report["candidate"]["source"] == "candidate"
        moved = [(m["route"], m["from"], m["to"]) for m in report["moved"]]
        assert ("mock", "mock/mock-1", "mock/mock-2") in moved
        # A bad candidate is the admin API's 400, naming the field.
        bad = http.post("/admin/v1/config/replay", content="routes: 3\n", headers=page)
        assert bad.status_code == 400, bad.text
        assert bad.json()["error"]["param"] == "routes"
        # Not from the page: no Origin is refused; another page's gets nothing.
        bare = http.post("/admin/v1/config/replay", content=candidate, headers=cookie)
        assert bare.status_code == 403, bare.text
        assert "dashboard's page only" in bare.json()["error"]["message"]
        other = cookie | {"origin": "http://127.0.0.1:1", "sec-fetch-site": "same-site"}
        elsewhere = http.post("/admin/v1/config/replay", content=candidate, headers=other)
        assert elsewhere.status_code == 401, elsewhere.text
        # Nothing changed: the same revision, the same file.
        assert http.get("/admin/v1/status", headers=BEARER).json()["revision"] == revision
    assert (keys_gw.config.read_text() if keys_gw.config else "") == config


def test_log_out_ends_the_session(keys_gw: GwServer) -> None:
    session = log_in(keys_gw, new_link(keys_gw))
    cookie = {"cookie": f"gw_dashboard={session}"}
    with keys_gw.client() as http:
        assert http.get("/admin/v1/health", headers=cookie).status_code == 200
        out = http.get("/dashboard/logout", headers=cookie)
        assert out.status_code == 303
        assert SimpleCookie(out.headers["set-cookie"])["gw_dashboard"]["max-age"] == "0"
        assert http.get("/admin/v1/health", headers=cookie).status_code == 401


def test_pages_and_assets_are_locked_down_and_hold_no_key(keys_gw: GwServer) -> None:
    with keys_gw.client() as http:
        refused = http.get("/")  # no session: 401, the page telling how to log in
        assert refused.status_code == 401
        assert refused.headers["content-security-policy"] == SECURITY_CSP
        index = http.get("/", headers=BEARER)
        assert index.status_code == 200
        csp = index.headers["content-security-policy"]
        for directive in ("default-src 'self'", "script-src 'self'", "frame-ancestors 'none'"):
            assert directive in csp
        assert "unsafe-inline" not in csp
        assert "unsafe-eval" not in csp
        assert index.headers["x-content-type-options"] == "nosniff"
        assert index.headers["cache-control"] == "no-store"
        # No inline script: every <script> loads a file; no inline event handlers or styles.
        scripts = re.findall(r"<script\b[^>]*>(.*?)</script>", index.text, re.DOTALL)
        assert scripts
        assert all(not body.strip() for body in scripts)
        assert not re.search(r"\son[a-z]+=|\sstyle=", index.text)

        assets = set(re.findall(r'(?:src|href)="(/dashboard/assets/[^"]+)"', index.text))
        seen: set[str] = set()
        while assets:
            path = assets.pop()
            seen.add(path)
            answer = http.get(path)
            assert answer.status_code == 200, path
            assert answer.headers["x-content-type-options"] == "nosniff"
            assert ADMIN not in answer.text
            if path.endswith(".js"):
                assert answer.headers["content-type"].startswith("text/javascript")
                assert not HTML_SINKS.search(answer.text), path  # text nodes only
                assert "localStorage" not in answer.text
                imported = re.findall(r'from "\./([a-z_]+\.js)"', answer.text)
                assets |= {f"/dashboard/assets/{name}" for name in imported} - seen
        assert {"/dashboard/assets/app.js", "/dashboard/assets/explain.js"} <= seen
        assert ADMIN not in index.text
        assert http.get("/dashboard/assets/../gw.yaml").status_code == 404
        assert http.get("/dashboard/assets/nope.js").status_code == 404


def test_an_open_gw_mints_login_links_for_the_token_holder_only(tmp_path: Path) -> None:
    # The dashboard is never anonymous, in open mode either: the page and the link need the
    # local admin token (the CLI's), or a session a link opened.
    config = tmp_path / "gw.yaml"
    config.write_text("providers: [{name: mock, kind: mock}]\n")
    with GwServer(tmp_path / "state", config) as server:
        with server.client(admin_token=False) as http:
            refused = http.post("/admin/v1/dashboard/login-link")
            assert refused.status_code == 401, refused.text
            assert refused.json()["error"]["code"] == "authentication_failed"
            assert http.get("/").status_code == 401
        with server.client() as http:
            answer = http.post("/admin/v1/dashboard/login-link")
        assert answer.status_code == 200, answer.text
        session = log_in(server, str(answer.json()["url"]))
        with server.client(admin_token=False) as http:
            page = http.get("/", headers={"cookie": f"gw_dashboard={session}"})
        assert page.status_code == 200

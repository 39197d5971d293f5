"""The admin plane is never anonymous (issue 27, part 4), through a live gw and the CLI as
typed: in open mode a local process without the local admin token gets 401 on every admin
route and on the dashboard, while inference and the probes stay open; the CLI finds the
token by itself; a restart makes a new one; in keys mode an ``admin:read`` key reads but
cannot write, and the CLI on the gateway's machine needs no GW_ADMIN_KEY."""

from __future__ import annotations

import json
import re
import stat
from collections.abc import Iterator
from http.cookies import SimpleCookie
from pathlib import Path

import httpx
import pytest

from e2e.gw_process import GwServer, run_cli

pytestmark = pytest.mark.e2e

ROUTE = "{name: fast, targets: [{provider: mock, model: mock-1}]}"
CONFIG = f"""
providers: [{{name: mock, kind: mock}}]
routes: [{{name: mock, targets: [{{provider: mock, model: mock-1}}]}}, {ROUTE}]
tenants: [{{name: team}}]
"""
ADMIN = "gw-admin-token-test-0123456789abcdefghijk"
# Every admin route gw has must show up here (from /openapi.json), so a new one cannot be
# left open unnoticed; these are the ones known today.
KNOWN = {
    ("GET", "/admin/v1/health"),
    ("GET", "/admin/v1/usage"),
    ("GET", "/admin/v1/status"),
    ("GET", "/admin/v1/config"),
    ("GET", "/admin/v1/providers"),
    ("GET", "/admin/v1/routes"),
    ("GET", "/admin/v1/policies"),
    ("GET", "/admin/v1/traces"),
    ("GET", "/admin/v1/traces/{request_id}"),
    ("POST", "/admin/v1/route-preview"),
    ("POST", "/admin/v1/reload"),
    ("POST", "/admin/v1/config/rollback"),
    ("POST", "/admin/v1/routes"),
    ("PUT", "/admin/v1/routes/{name}"),
    ("DELETE", "/admin/v1/routes/{name}"),
    ("POST", "/admin/v1/policies"),
    ("PUT", "/admin/v1/policies/{name}"),
    ("DELETE", "/admin/v1/policies/{name}"),
    ("POST", "/admin/v1/dashboard/login-link"),
    ("GET", "/metrics"),
}
CHAT = {"model": "mock", "messages": [{"role": "user", "content": "hi"}]}


def start(home: Path, extra: str = "", env: dict[str, str] | None = None) -> GwServer:
    """A gw whose config is <state-dir>/gw.yaml, so the CLI finds it as typed."""
    (home / "state").mkdir()
    (home / "state" / "gw.yaml").write_text(CONFIG + extra)
    return GwServer(home / "state", env=env).start()


@pytest.fixture(scope="module")
def open_gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GwServer]:
    server = start(tmp_path_factory.mktemp("admin-token-open"))
    yield server
    server.stop()


def admin_routes(server: GwServer) -> list[tuple[str, str]]:
    """(method, path) of every admin-plane route gw documents, path parameters filled."""
    with server.client(admin_token=False) as http:
        document = http.get("/openapi.json").json()
    routes = {
        (method.upper(), path)
        for path, operations in document["paths"].items()
        if path.startswith("/admin/") or path == "/metrics"
        for method in operations
    }
    assert routes >= KNOWN, KNOWN - routes
    return sorted((method, re.sub(r"\{[^}]+\}", "x", path)) for method, path in routes)


def test_open_mode_without_the_token_every_admin_route_and_the_dashboard_are_401(
    open_gw: GwServer,
) -> None:
    token_file = open_gw.state_dir / "admin-token"
    body = {"name": "x", "targets": [{"provider": "mock", "model": "mock-1"}]}
    with open_gw.client(admin_token=False) as http:
        for method, path in admin_routes(open_gw):
            for headers in ({}, {"authorization": "Bearer gw-local-not-the-token"}):
                answer = http.request(method, path, json=body, headers=headers)
                assert answer.status_code == 401, (method, path, answer.text)
                error = answer.json()["error"]
                assert error["code"] == "authentication_failed", (method, path)
                if not headers:
                    assert str(token_file) in error["message"]
                    assert "the gw CLI on this machine sends it by itself" in error["message"]
                assert open_gw.admin_token not in answer.text
        page = http.get("/")
        assert page.status_code == 401
        assert page.headers["content-type"].startswith("text/html")
        assert open_gw.admin_token not in page.text
    # A forged session cookie is nothing.
    with open_gw.client(admin_token=False) as http:
        http.cookies.set("gw_dashboard", "forged")
        assert http.get("/admin/v1/status").status_code == 401
        assert http.get("/").status_code == 401
    with open_gw.client(admin_token=False) as http:
        # The probes and inference stay open (DESIGN.md: open mode takes any or no token).
        assert http.get("/livez").status_code == 200
        assert http.get("/readyz").status_code == 200
        assert http.get("/v1/models").status_code == 200
        assert http.post("/v1/chat/completions", json=CHAT).status_code == 200
    # Nothing changed: the writes above were all refused.
    assert open_gw.cli_json("status")["config"]["revision"] == 1


def test_the_token_file_is_owner_only_and_opens_the_admin_plane(open_gw: GwServer) -> None:
    token_file = open_gw.state_dir / "admin-token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    token = open_gw.admin_token
    assert token.startswith("gw-local-")
    bearer = {"authorization": f"Bearer {token}"}
    with open_gw.client(admin_token=False) as http:
        assert http.get("/admin/v1/status", headers=bearer).status_code == 200
        assert http.get("/metrics", headers=bearer).status_code == 200
        assert http.get("/", headers=bearer).status_code == 200
    assert token not in open_gw.log()  # never logged


def test_the_cli_finds_the_token_by_itself(open_gw: GwServer) -> None:
    env = {**open_gw.env, "GW_ADMIN_KEY": ""}

    def gw(*args: str) -> str:
        return run_cli(*args, "--state-dir", str(open_gw.state_dir), env=env).stdout

    assert json.loads(gw("status", "--json"))["server"]["auth_mode"] == "open"
    assert "targets" in json.loads(gw("health", "--json"))
    assert json.loads(gw("route-preview", "--model", "mock", "--json"))
    assert "requests" in json.loads(gw("top", "--once", "--json", "--interval", "0.2"))
    assert "fast" in gw("route-preview", "--model", "fast")
    printed = json.loads(gw("dashboard", "--json"))
    assert printed["auth_mode"] == "open"
    assert printed["login_link"] is True
    # The link logs a browser in: a read-only session.
    with httpx.Client(timeout=30.0) as browser:
        redeemed = browser.get(str(printed["url"]))
        assert redeemed.status_code == 303
        session = SimpleCookie(redeemed.headers["set-cookie"])["gw_dashboard"].value
    with httpx.Client(timeout=30.0, cookies={"gw_dashboard": session}) as browser:
        assert browser.get(f"{open_gw.url}/").status_code == 200
        assert browser.get(f"{open_gw.url}/admin/v1/traces").status_code == 200
        write = browser.post(f"{open_gw.url}/admin/v1/reload")
        assert write.status_code == 403
        assert write.json()["error"]["code"] == "permission_denied"


def test_a_restart_makes_a_new_token_and_a_stop_removes_it(tmp_path: Path) -> None:
    server = start(tmp_path)
    first = server.admin_token
    server.stop()
    assert not (server.state_dir / "admin-token").exists()
    server.start()
    try:
        second = server.admin_token
        assert second != first
        with server.client(admin_token=False) as http:
            old = http.get("/admin/v1/status", headers={"authorization": f"Bearer {first}"})
            new = http.get("/admin/v1/status", headers={"authorization": f"Bearer {second}"})
        assert old.status_code == 401
        assert new.status_code == 200
    finally:
        server.stop()


def test_a_token_file_others_may_read_is_refused_by_the_cli(tmp_path: Path) -> None:
    server = start(tmp_path)
    try:
        (server.state_dir / "admin-token").chmod(0o644)
        env = {**server.env, "GW_ADMIN_KEY": ""}
        done = run_cli("status", "--state-dir", str(server.state_dir), env=env, check=False)
        assert done.returncode == 1
        assert "mode 0644" in done.stderr
        assert server.admin_token not in done.stderr
    finally:
        server.stop()


@pytest.fixture(scope="module")
def keys_gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GwServer]:
    home = tmp_path_factory.mktemp("admin-token-keys")
    server = start(
        home, "auth: {mode: keys, admin_key: env:GW_TEST_ADMIN}\n", {"GW_TEST_ADMIN": ADMIN}
    )
    yield server
    server.stop()


def make_key(server: GwServer, scopes: str) -> str:
    made = server.cli_json("keys", "create", "--tenant", "team", "--scopes", scopes)
    return str(made["key"])


def test_a_read_key_reads_and_cannot_write(keys_gw: GwServer) -> None:
    reader = {"authorization": f"Bearer {make_key(keys_gw, 'admin:read')}"}
    writer = {"authorization": f"Bearer {make_key(keys_gw, 'admin:config')}"}
    route = {"targets": [{"provider": "mock", "model": "mock-1"}]}
    with keys_gw.client() as http:
        for path in ("/admin/v1/config", "/admin/v1/health", "/admin/v1/traces", "/metrics"):
            assert http.get(path, headers=reader).status_code == 200, path
        usage = http.get("/admin/v1/usage", params={"by": "tenant"}, headers=reader)
        assert usage.status_code == 200
        preview = http.post("/admin/v1/route-preview", json=CHAT, headers=reader)
        assert preview.status_code == 200
        assert http.post("/admin/v1/dashboard/login-link", headers=reader).status_code == 200
        refusals = [
            http.put("/admin/v1/routes/extra", json=route, headers=reader),
            http.post("/admin/v1/reload", headers=reader),
            http.post("/admin/v1/config/rollback", json={"revision": 1}, headers=reader),
            http.delete("/admin/v1/routes/fast", headers=reader),
        ]
        for refused in refusals:
            assert refused.status_code == 403, refused.text
            error = refused.json()["error"]
            assert error["code"] == "permission_denied"
            assert "'admin:config' scope" in error["message"]
        # No inference with an admin key, and no admin with an inference key.
        assert http.post("/v1/chat/completions", json=CHAT, headers=reader).status_code == 403
        written = http.put("/admin/v1/routes/extra", json=route, headers=writer)
        assert written.status_code == 201, written.text
        assert http.get("/admin/v1/routes", headers=writer).status_code == 200


def test_keys_mode_the_cli_here_needs_no_admin_key(keys_gw: GwServer) -> None:
    env = {**keys_gw.env, "GW_ADMIN_KEY": "", "GW_TEST_ADMIN": ""}
    done = run_cli("status", "--json", "--state-dir", str(keys_gw.state_dir), env=env)
    assert json.loads(done.stdout)["server"]["auth_mode"] == "keys"
    with keys_gw.client(admin_token=False) as http:
        assert http.get("/admin/v1/status").status_code == 401
        assert http.get("/").status_code == 401
        # The local token is for the admin plane only.
        bearer = {"authorization": f"Bearer {keys_gw.admin_token}"}
        assert http.post("/v1/chat/completions", json=CHAT, headers=bearer).status_code == 401


def test_unknown_scopes_are_refused_with_the_valid_ones(keys_gw: GwServer) -> None:
    done = keys_gw.cli("keys", "create", "--tenant", "team", "--scopes", "admin:write", check=False)
    assert done.returncode != 0
    assert "unknown scope 'admin:write'" in done.stderr
    for scope in ("inference", "usage:read", "admin:read", "admin:config", "admin", "*"):
        assert scope in done.stderr

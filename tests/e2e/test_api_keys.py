"""API keys against a real gw: created with the CLI while the server runs, used through the
openai SDK, scoped, limited to models, revoked and expired; start-up beyond loopback refused.

Waits are bounded polls (a change must show within a second; the polls allow far more on a
slow machine), never timed assertions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from e2e.gw_process import GwServer, run_cli
from e2e.waiting import wait_until

CONFIG = """
providers: [{name: mock, kind: mock}]
routes:
  - {name: mock, targets: [{provider: mock, model: mock-1}]}
  - {name: other, targets: [{provider: mock, model: mock-2}]}
tenants: [{name: team-a}]
"""
HI = [{"role": "user", "content": "hi"}]


def sdk(gw: GwServer, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.base_url, api_key=key, max_retries=0)


def status_with(gw: GwServer, headers: dict[str, str], path: str = "/v1/chat/completions") -> int:
    with gw.client() as http:
        if path.startswith("/admin"):
            return http.get(path, headers=headers).status_code
        body = {"model": "mock", "messages": HI}
        return http.post(path, json=body, headers=headers).status_code


def server_auth_mode(gw: GwServer) -> str:
    mode: str = json.loads((gw.state_dir / "server.json").read_text())["auth_mode"]
    return mode


@pytest.fixture
def keys_gw(tmp_path: Path) -> Iterator[GwServer]:
    config = tmp_path / "gw.yaml"
    config.write_text(CONFIG)
    with GwServer(tmp_path / "state", config) as server:
        yield server


def create(gw: GwServer, *args: str) -> dict[str, Any]:
    assert gw.config is not None
    made: dict[str, Any] = gw.cli_json("keys", "create", "--config", str(gw.config), *args)
    return made


def test_keys_created_while_serving_switch_auth_on_and_are_enforced(keys_gw: GwServer) -> None:
    gw = keys_gw
    # No key yet, loopback bind: open mode, no token needed.
    assert status_with(gw, {}) == 200
    assert server_auth_mode(gw) == "open"

    app = create(gw, "--tenant", "team-a", "--name", "app")
    assert app["key"].startswith("gw-")
    assert app["tenant"] == "team-a"
    assert app["scopes"] == ["inference"]
    assert app["id"].startswith("key_")
    # Auth switches to keys by itself: a request without a key is now refused.
    wait_until(lambda: status_with(gw, {}) == 401, "a request without a key is refused")
    assert server_auth_mode(gw) == "keys"  # so `gw health` knows to send a key

    answer = sdk(gw, app["key"]).chat.completions.with_raw_response.create(
        model="mock", messages=HI
    )
    assert answer.parse().choices[0].message.content
    assert status_with(gw, {"x-api-key": app["key"]}) == 200
    with pytest.raises(openai.AuthenticationError) as unknown:
        sdk(gw, "gw-" + "A" * 43).chat.completions.create(model="mock", messages=HI)
    assert unknown.value.code == "authentication_failed"

    # Scopes: an inference key may not read the admin API; an admin key may.
    with gw.client() as http:
        denied = http.get("/admin/v1/health", headers={"authorization": f"Bearer {app['key']}"})
    assert denied.status_code == 403
    assert denied.json()["error"]["code"] == "permission_denied"
    assert "'admin:read' scope" in denied.json()["error"]["message"]
    admin = create(gw, "--tenant", "team-a", "--scopes", "admin")
    wait_until(
        lambda: status_with(gw, {"x-api-key": admin["key"]}, "/admin/v1/health") == 200,
        "an admin key reads /admin/v1/health",
    )
    assert status_with(gw, {"x-api-key": admin["key"]}) == 403  # admin is not inference

    # A key limited to one route.
    limited = create(gw, "--tenant", "team-a", "--models", "mock")
    wait_until(lambda: status_with(gw, {"x-api-key": limited["key"]}) == 200, "limited key works")
    with pytest.raises(openai.PermissionDeniedError) as outside:
        sdk(gw, limited["key"]).chat.completions.create(model="other", messages=HI)
    assert outside.value.code == "permission_denied"
    assert "'other'" in str(outside.value)
    listed = sdk(gw, limited["key"]).models.list()
    assert [m.id for m in listed.data] == ["mock"]

    # Revocation: rejected within a second.
    revoked = gw.cli_json("keys", "revoke", app["id"])
    assert revoked["status"] == "revoked"
    assert "key" not in revoked
    wait_until(
        lambda: status_with(gw, {"authorization": f"Bearer {app['key']}"}) == 401,
        "a revoked key is refused",
    )
    with pytest.raises(openai.AuthenticationError) as gone:
        sdk(gw, app["key"]).chat.completions.create(model="mock", messages=HI)
    assert "revoked" in str(gone.value)

    # Expiry.
    brief = create(gw, "--tenant", "team-a", "--expires", "1s")
    assert brief["expires_at"] is not None
    wait_until(lambda: status_with(gw, {"x-api-key": brief["key"]}) == 401, "expired key refused")
    with pytest.raises(openai.AuthenticationError) as expired:
        sdk(gw, brief["key"]).chat.completions.create(model="mock", messages=HI)
    assert "expired" in str(expired.value)

    listing = gw.cli_json("keys", "list")
    assert {k["id"]: k["status"] for k in listing} == {
        app["id"]: "revoked",
        admin["id"]: "active",
        limited["id"]: "active",
        brief["id"]: "expired",
    }
    shown = gw.cli("keys", "list").stdout
    assert f"{app['prefix']}…{app['suffix']}" in shown

    # The plaintext of a key appears nowhere but in the create output.
    secrets = [k["key"] for k in (app, admin, limited, brief)]
    database = b"".join(p.read_bytes() for p in gw.state_dir.glob("gw.db*"))
    gw.stop()
    log = gw.log()
    assert "switched from open to keys" in log
    for secret in secrets:
        assert secret not in log
        assert secret.encode() not in database
        assert secret not in shown


def test_an_unknown_tenant_is_refused_by_name(tmp_path: Path) -> None:
    config = tmp_path / "gw.yaml"
    config.write_text(CONFIG)
    done = run_cli(
        "keys", "create", "--tenant", "nope", "--config", str(config),
        "--state-dir", str(tmp_path / "state"), check=False,
    )  # fmt: skip
    assert done.returncode != 0
    said = " ".join(done.stderr.split())
    assert "tenant 'nope' is not in the config" in said
    assert "team-a" in said
    assert done.stdout == ""


def serve_refusal(tmp_path: Path, config_text: str, env: dict[str, str] | None = None) -> str:
    config = tmp_path / "gw.yaml"
    config.write_text(config_text)
    done = run_cli(
        "serve", "--host", "0.0.0.0", "--port", "0", "--config", str(config),
        "--state-dir", str(tmp_path / "state"), env=env, check=False,
    )  # fmt: skip
    assert done.returncode != 0
    assert not (tmp_path / "state" / "server.json").exists()
    return " ".join(done.stderr.split())


def test_open_mode_beyond_loopback_is_refused_at_start_up(tmp_path: Path) -> None:
    said = serve_refusal(tmp_path, CONFIG + "auth: {mode: open}\n")
    assert "auth.mode is open but server.host 0.0.0.0 is not a loopback address" in said


def test_keys_mode_beyond_loopback_needs_a_strong_admin_key(tmp_path: Path) -> None:
    assert "needs an admin key" in serve_refusal(tmp_path, CONFIG)
    with_key = CONFIG + "auth: {admin_key: env:GW_TEST_ADMIN}\n"
    short = serve_refusal(tmp_path, with_key, env={"GW_TEST_ADMIN": "s3cret-but-short"})
    assert "at least 32" in short
    assert "s3cret-but-short" not in short
    placeholder = "changeme-changeme-changeme-changeme"
    said = serve_refusal(tmp_path, with_key, env={"GW_TEST_ADMIN": placeholder})
    assert "placeholder" in said
    assert placeholder not in said


def test_an_admin_key_is_still_accepted_next_to_api_keys(tmp_path: Path) -> None:
    config = tmp_path / "gw.yaml"
    config.write_text(CONFIG + "auth: {mode: keys, admin_key: env:GW_TEST_ADMIN}\n")
    admin = "gw-admin-test-0123456789abcdefghij"
    with GwServer(tmp_path / "state", config, env={"GW_TEST_ADMIN": admin}) as gw:
        assert status_with(gw, {}) == 401
        assert status_with(gw, {"x-api-key": admin}) == 200
        assert status_with(gw, {"x-api-key": admin}, "/admin/v1/health") == 200
        with httpx.Client(base_url=gw.url) as http:
            assert http.get("/livez").status_code == 200


def test_a_key_with_an_ip_allowlist_is_refused_outside_it_on_every_endpoint(
    keys_gw: GwServer,
) -> None:
    """The server binds 127.0.0.1 and trusts no proxy, so every call here comes from
    127.0.0.1: a key allowed only from 10.0.0.0/8 is refused, one allowed from 127.0.0.1
    and one with no allowlist work."""
    gw = keys_gw
    elsewhere = create(gw, "--tenant", "team-a", "--scopes", "*", "--allow-ip", "10.0.0.0/8")
    here = create(gw, "--tenant", "team-a", "--allow-ip", "127.0.0.1", "--allow-ip", "::1")
    anywhere = create(gw, "--tenant", "team-a")
    assert elsewhere["allowed_ips"] == ["10.0.0.0/8"]
    assert here["allowed_ips"] == ["127.0.0.1/32", "::1/128"]
    assert anywhere["allowed_ips"] is None
    wait_until(lambda: status_with(gw, {}) == 401, "auth switched to keys")

    for works in (here, anywhere):
        answer = sdk(gw, works["key"]).chat.completions.create(model="mock", messages=HI)
        assert answer.choices[0].message.content

    with pytest.raises(openai.PermissionDeniedError) as refused:
        sdk(gw, elsewhere["key"]).chat.completions.create(model="mock", messages=HI)
    assert refused.value.status_code == 403
    assert refused.value.code == "permission_denied"
    said = str(refused.value)
    assert f"the API key {elsewhere['id']} is not allowed from address 127.0.0.1" in said
    assert "--allow-ip" in said
    assert elsewhere["key"] not in said
    assert "10.0.0.0" not in said
    with pytest.raises(openai.PermissionDeniedError, match="not allowed from address"):
        sdk(gw, elsewhere["key"]).chat.completions.create(model="mock", messages=HI, stream=True)
    with pytest.raises(openai.PermissionDeniedError, match="not allowed from address"):
        sdk(gw, elsewhere["key"]).models.list()
    # No proxy is trusted, so a client cannot claim another address.
    spoofed = {"x-api-key": elsewhere["key"], "x-forwarded-for": "10.1.2.3"}
    assert status_with(gw, spoofed) == 403

    # The same key holds every scope, yet no endpoint lets it in from here: not the
    # Anthropic-shaped one, nor the admin API.
    headers = {"x-api-key": elsewhere["key"]}
    with gw.client() as http:
        messages = http.post(
            "/v1/messages",
            json={"model": "mock", "max_tokens": 16, "messages": HI},
            headers=headers,
        )
        admin_paths = ("/admin/v1/health", "/admin/v1/status", "/admin/v1/traces")
        admin = [http.get(path, headers=headers) for path in admin_paths]
        admin_here = http.get("/admin/v1/health", headers={"x-api-key": here["key"]})
    assert messages.status_code == 403
    assert messages.json()["gw"]["code"] == "permission_denied"
    assert "not allowed from address 127.0.0.1" in messages.text
    for refused_admin in admin:
        assert refused_admin.status_code == 403
        assert refused_admin.json()["error"]["code"] == "permission_denied"
        assert "not allowed from address 127.0.0.1" in refused_admin.json()["error"]["message"]
    assert "'admin:read' scope" in admin_here.json()["error"]["message"]  # in, then scoped

    listing = {k["id"]: k["allowed_ips"] for k in gw.cli_json("keys", "list")}
    assert listing == {
        elsewhere["id"]: ["10.0.0.0/8"],
        here["id"]: ["127.0.0.1/32", "::1/128"],
        anywhere["id"]: None,
    }
    shown = gw.cli("keys", "list").stdout
    assert "10.0.0.0/8" in shown
    assert "127.0.0.1,::1" in shown


def test_behind_a_trusted_proxy_the_allowlist_checks_the_forwarded_client(tmp_path: Path) -> None:
    config = tmp_path / "gw.yaml"
    config.write_text(
        CONFIG + "server: {trusted_proxies: [127.0.0.1]}\n"
        "auth: {mode: keys, admin_key: env:GW_TEST_ADMIN}\n"
    )
    admin = "gw-admin-test-0123456789abcdefghij"
    with GwServer(tmp_path / "state", config, env={"GW_TEST_ADMIN": admin}) as gw:
        key = create(gw, "--tenant", "team-a", "--allow-ip", "10.0.0.0/8")["key"]

        def via_proxy(client: str) -> openai.OpenAI:
            return openai.OpenAI(
                base_url=gw.base_url,
                api_key=key,
                max_retries=0,
                default_headers={"x-forwarded-for": client},
            )

        answer = via_proxy("10.1.2.3").chat.completions.create(model="mock", messages=HI)
        assert answer.choices[0].message.content
        with pytest.raises(
            openai.PermissionDeniedError, match=re.escape("from address 192.168.1.9")
        ):
            via_proxy("192.168.1.9").chat.completions.create(model="mock", messages=HI)
        with pytest.raises(openai.PermissionDeniedError, match=re.escape("from address 127.0.0.1")):
            sdk(gw, key).chat.completions.create(model="mock", messages=HI)  # the proxy itself


def test_the_switch_to_keys_needs_no_request(keys_gw: GwServer) -> None:
    gw = keys_gw
    assert server_auth_mode(gw) == "open"
    create(gw, "--tenant", "team-a", "--name", "app")
    # No request is sent: the server looks for a key once a second by itself.
    wait_until(lambda: server_auth_mode(gw) == "keys", "server.json says keys")
    assert "switched from open to keys" in gw.log()


def test_the_first_key_says_auth_turns_on_and_what_admin_commands_need(
    keys_gw: GwServer,
) -> None:
    assert keys_gw.config is not None
    args = ("keys", "create", "--config", str(keys_gw.config), "--tenant", "team-a")
    first = keys_gw.cli(*args)
    assert first.stdout.startswith("gw-")  # the key alone on stdout, for scripts
    assert "note: this is the first API key" in first.stderr
    assert "export GW_ADMIN_KEY=" in first.stderr
    second = keys_gw.cli(*args)
    assert "first API key" not in second.stderr

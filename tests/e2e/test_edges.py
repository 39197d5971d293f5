"""The edges of trust through a live gw: CORS answered before auth with the configured
origins only, and start-up refusing settings that would expose gw."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.gw_process import GwServer, run_cli

ADMIN = "gw-admin-edges-0123456789abcdefghijklmnop"
CONFIG = """
server: {cors_origins: ["https://app.example.com"]}
auth: {mode: keys, admin_key: env:GW_TEST_ADMIN}
providers: [{name: mock, kind: mock}]
routes: [{name: mock, targets: [{provider: mock, model: mock-1}]}]
"""
PREFLIGHT = {
    "access-control-request-method": "POST",
    "access-control-request-headers": "authorization, content-type, x-stainless-os",
}


@pytest.fixture(scope="module")
def cors_gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GwServer]:
    home = tmp_path_factory.mktemp("edges")
    config = home / "gw.yaml"
    config.write_text(CONFIG)
    with GwServer(home / "state", config, env={"GW_TEST_ADMIN": ADMIN}) as server:
        yield server


def test_a_preflight_from_a_configured_origin_is_answered_before_auth(cors_gw: GwServer) -> None:
    with cors_gw.client() as http:
        answer = http.options(
            "/v1/chat/completions",
            headers={"origin": "https://app.example.com", **PREFLIGHT},
        )
    assert answer.status_code in {200, 204}  # no key was sent: auth never saw it
    assert answer.headers["access-control-allow-origin"] == "https://app.example.com"
    assert "POST" in answer.headers["access-control-allow-methods"]


def test_other_origins_get_no_cors_grant(cors_gw: GwServer) -> None:
    with cors_gw.client() as http:
        answer = http.options(
            "/v1/chat/completions", headers={"origin": "https://evil.example", **PREFLIGHT}
        )
    assert "access-control-allow-origin" not in answer.headers


def test_errors_carry_cors_headers_and_expose_gw_headers(cors_gw: GwServer) -> None:
    body = {"model": "mock", "messages": [{"role": "user", "content": "hi"}]}
    with cors_gw.client() as http:
        refused = http.post(
            "/v1/chat/completions", json=body, headers={"origin": "https://app.example.com"}
        )
        answered = http.post(
            "/v1/chat/completions",
            json=body,
            headers={"origin": "https://app.example.com", "authorization": f"Bearer {ADMIN}"},
        )
    assert refused.status_code == 401
    assert refused.headers["access-control-allow-origin"] == "https://app.example.com"
    assert answered.status_code == 200
    exposed = answered.headers["access-control-expose-headers"].lower()
    assert "x-gw-request-id" in exposed


@pytest.mark.parametrize(
    ("server", "reason"),
    [
        ('{cors_origins: ["*"]}', "any web page you visit"),
        ('{host: 0.0.0.0, cors_origins: ["*"]}', "not a loopback address"),
        ("{trusted_proxies: [10.0.0.1/8]}", "host bits"),
        ("{trusted_proxies: [127.0.0.1]}", "behind server.trusted_proxies"),
    ],
)
def test_start_up_refuses_exposing_settings(tmp_path: Path, server: str, reason: str) -> None:
    config = tmp_path / "gw.yaml"
    config.write_text(
        f"server: {server}\nauth: {{mode: open}}\nproviders: [{{name: mock, kind: mock}}]\n"
    )
    done = run_cli(
        "serve", "--config", str(config), "--state-dir", str(tmp_path / "s"), "--port", "0",
        check=False,
    )  # fmt: skip
    assert done.returncode != 0
    assert reason in " ".join(done.stderr.split())

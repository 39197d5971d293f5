"""Open mode through a live gw: requests a web page could send (a foreign Origin, a
rebound Host name) are refused before they spend or change anything; SDK-style requests
and pages from configured origins go on."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from e2e.gw_process import GwServer

CONFIG = """
# the config file, before any request
server: {cors_origins: ["http://localhost:5173"]}
auth: {mode: open}
providers: [{name: mock, kind: mock}]
routes: [{name: mock, targets: [{provider: mock, model: mock-1}]}]
"""
CHAT = {"model": "mock", "messages": [{"role": "user", "content": "hi"}]}
ROUTE = {"name": "planted", "targets": [{"provider": "mock", "model": "mock-2"}]}


@pytest.fixture(scope="module")
def open_gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GwServer]:
    home = tmp_path_factory.mktemp("open-guard")
    config = home / "gw.yaml"
    config.write_text(CONFIG)
    with GwServer(home / "state", config) as server:
        yield server


@pytest.mark.parametrize(
    "headers",
    [
        {"origin": "https://evil.example"},
        {"origin": "null"},  # a sandboxed frame or a file:// page
        {"host": "attacker.example:8080"},  # DNS rebinding: the page's name, our address
    ],
)
def test_what_a_web_page_sends_is_refused_before_it_acts(
    open_gw: GwServer, headers: dict[str, str]
) -> None:
    config = open_gw.config.read_text()
    with open_gw.client() as http:
        chat = http.post("/v1/chat/completions", json=CHAT, headers=headers)
        write = http.post(
            "/admin/v1/routes",
            content=str(ROUTE).encode(),
            headers={**headers, "content-type": "text/plain"},
        )
        reload = http.post("/admin/v1/reload", headers=headers)
    for answer in (chat, write, reload):
        assert answer.status_code == 403, answer.text
        assert answer.json()["error"]["code"] == "permission_denied"
        assert "auth.mode: keys" in answer.json()["error"]["message"]
    assert open_gw.config.read_text() == config


def test_sdk_requests_and_configured_origins_go_on(open_gw: GwServer) -> None:
    with open_gw.client() as http:
        plain = http.post("/v1/chat/completions", json=CHAT)
        page = http.post(
            "/v1/chat/completions", json=CHAT, headers={"origin": "http://localhost:5173"}
        )
        named = http.post("/v1/chat/completions", json=CHAT, headers={"host": "localhost"})
        own = http.post(
            "/v1/chat/completions",
            json=CHAT,
            headers={"origin": f"http://127.0.0.1:{open_gw.port}"},
        )
    statuses = (plain.status_code, page.status_code, named.status_code, own.status_code)
    assert statuses == (200, 200, 200, 200)
    assert page.headers["access-control-allow-origin"] == "http://localhost:5173"

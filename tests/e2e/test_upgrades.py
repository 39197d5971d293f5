"""Upgrade requests (gw/server/runtime/protocol.py): gw serves no WebSocket route, so a
WebSocket handshake gets a bare 403 and a close from the server itself, after the answers
to requests pipelined before it; an upgrade gw does not speak (h2c) is answered as plain
HTTP/1.1 with uvicorn's one warning. Raw sockets on loopback (e2e/raw_http.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from e2e.gw_process import GwServer
from e2e.raw_http import assert_bare_close, connect, read_until_closed

CONFIG = """
providers: [{name: mock, kind: mock}]
routes: [{name: mock, targets: [{provider: mock, model: mock-1}]}]
"""


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GwServer]:
    home = tmp_path_factory.mktemp("gw-upgrades")
    config = home / "gw.yaml"
    config.write_text(CONFIG)
    with GwServer(home / "state", config) as server:
        yield server


def exchange(gw: GwServer, request: bytes) -> bytes:
    """Send ``request``; everything the server answers until it closes."""
    with connect(gw) as raw:
        raw.sendall(request)
        return read_until_closed(raw)


WEBSOCKET_HANDSHAKE = (
    b"GET /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    b"Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
)


def assert_bare_403(answer: bytes) -> None:
    assert_bare_close(answer, b"HTTP/1.1 403 Forbidden")


def test_a_websocket_handshake_gets_a_bare_403_and_a_close(gw: GwServer) -> None:
    assert_bare_403(exchange(gw, WEBSOCKET_HANDSHAKE))
    assert "WebSocket" not in gw.log()


def test_requests_pipelined_before_a_handshake_are_answered_first(gw: GwServer) -> None:
    livez = b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    answer = exchange(gw, livez + livez + WEBSOCKET_HANDSHAKE)
    first, _, rest = answer.partition(b"HTTP/1.1 200")[2].partition(b"HTTP/1.1 200")
    assert b'"ok"' in first, answer
    second, _, refusal = rest.partition(b"HTTP/1.1 403")
    assert b'"ok"' in second, answer
    assert_bare_403(b"HTTP/1.1 403" + refusal)


def test_an_upgrade_gw_does_not_speak_is_answered_as_http_1_1(gw: GwServer) -> None:
    answer = exchange(
        gw,
        b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade, close\r\n"
        b"Upgrade: h2c\r\n\r\n",
    )
    assert answer.startswith(b"HTTP/1.1 200"), answer
    with gw.client() as http:
        assert http.get("/livez").status_code == 200
    assert "Unsupported upgrade request." in gw.log()
    assert "No supported WebSocket library" not in gw.log()

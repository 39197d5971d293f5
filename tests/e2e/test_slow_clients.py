"""Slow clients are cut off: headers within server.header_timeout, bodies within body_timeout.

Raw sockets on loopback, each with a generous 20 s timeout: a test fails if gw leaves a
slow connection open that long, and no test measures how fast gw is.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import httpx
import pytest

from gw.server.runtime.protocol import MAX_HEAD_BYTES, MAX_HEADERS

from e2e.gw_process import GwServer
from e2e.raw_http import SOCKET_TIMEOUT_S, assert_bare_close, connect, read_until_closed

CONFIG = """
server: {header_timeout: 0.5s, body_timeout: 0.5s}
providers: [{name: mock, kind: mock}]
routes: [{name: mock, targets: [{provider: mock, model: mock-1}]}]
"""
PARTIAL_HEAD = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
LIVEZ = b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


@pytest.fixture(scope="module")
def strict_gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GwServer]:
    home = tmp_path_factory.mktemp("gw-slow")
    config = home / "gw.yaml"
    config.write_text(CONFIG)
    with GwServer(home / "state", config) as server:
        yield server


def read_response(raw: socket.socket) -> tuple[bytes, bytes]:
    """One response with a content-length body: (head, body); the connection stays open."""
    data = b""
    for _ in range(10_000):
        if b"\r\n\r\n" in data:
            break
        data += _recv(raw)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    for _ in range(10_000):
        if len(body) >= length:
            break
        body += _recv(raw)
    return head, body


def _recv(raw: socket.socket) -> bytes:
    chunk = raw.recv(65536)
    if not chunk:
        raise AssertionError("the server closed the connection mid-response")
    return chunk


def assert_bare_408(answer: bytes) -> None:
    assert_bare_close(answer, b"HTTP/1.1 408 Request Timeout")


def test_headers_that_never_finish_get_408_and_a_close(strict_gw: GwServer) -> None:
    with connect(strict_gw) as raw:
        raw.sendall(PARTIAL_HEAD)  # then silence
        assert_bare_408(read_until_closed(raw))


def test_a_connection_that_sends_nothing_is_closed(strict_gw: GwServer) -> None:
    with connect(strict_gw) as raw:
        assert read_until_closed(raw) == b""  # no request begun: closed without an answer


def test_keep_alive_then_slow_headers_get_408_and_a_close(strict_gw: GwServer) -> None:
    with connect(strict_gw) as raw:
        raw.sendall(LIVEZ)
        head, _ = read_response(raw)
        assert head.startswith(b"HTTP/1.1 200")
        raw.sendall(PARTIAL_HEAD)
        assert_bare_408(read_until_closed(raw))


def test_an_idle_kept_alive_connection_is_closed(strict_gw: GwServer) -> None:
    with connect(strict_gw) as raw:
        raw.sendall(LIVEZ)
        head, _ = read_response(raw)
        assert head.startswith(b"HTTP/1.1 200")
        assert read_until_closed(raw) == b""


def test_too_many_header_lines_get_431_and_a_close(strict_gw: GwServer) -> None:
    lines = b"".join(b"x-h%d: v\r\n" % n for n in range(MAX_HEADERS + 1))
    with connect(strict_gw) as raw:
        raw.sendall(b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\n" + lines + b"\r\n")
        assert_bare_close(read_until_closed(raw), b"HTTP/1.1 431 Request Header Fields Too Large")


def test_a_head_past_its_size_limit_gets_431_before_it_ends(strict_gw: GwServer) -> None:
    """One header line longer than the limit, never finished: refused, not buffered."""
    with connect(strict_gw) as raw:
        raw.sendall(PARTIAL_HEAD + b"x-big: " + b"a" * (MAX_HEAD_BYTES + 1024))
        assert_bare_close(read_until_closed(raw), b"HTTP/1.1 431 Request Header Fields Too Large")


def test_a_complete_head_over_the_size_limit_gets_431(strict_gw: GwServer) -> None:
    big = b"x-big: " + b"a" * (MAX_HEAD_BYTES + 1024) + b"\r\n"
    with connect(strict_gw) as raw:
        raw.sendall(b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\n" + big + b"\r\n")
        assert_bare_close(read_until_closed(raw), b"HTTP/1.1 431 Request Header Fields Too Large")


def test_a_pipelined_oversized_head_is_refused_after_the_answer_before_it(
    strict_gw: GwServer,
) -> None:
    lines = b"".join(b"x-h%d: v\r\n" % n for n in range(MAX_HEADERS + 1))
    with connect(strict_gw) as raw:
        raw.sendall(LIVEZ + b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\n" + lines + b"\r\n")
        refusal = b"HTTP/1.1 431 Request Header Fields Too Large"
        answered, _, refused = read_until_closed(raw).partition(refusal)
        assert answered.startswith(b"HTTP/1.1 200")
        assert_bare_close(refusal + refused, refusal)


def test_a_head_within_the_limits_is_served(strict_gw: GwServer) -> None:
    lines = b"".join(b"x-h%d: %s\r\n" % (n, b"v" * 400) for n in range(MAX_HEADERS - 2))
    with connect(strict_gw) as raw:
        raw.sendall(b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\n" + lines + b"\r\n")
        head, _ = read_response(raw)
        assert head.startswith(b"HTTP/1.1 200")


def test_a_trickled_body_gets_408_request_timeout(strict_gw: GwServer) -> None:
    """The body limit is gw's own (gw/server/inference/ingress.py): 408 in the client's error format."""
    head = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"content-type: application/json\r\ncontent-length: 1000\r\n\r\n"
    )
    with connect(strict_gw) as raw:
        raw.sendall(head + b'{"model": ')  # 10 of the 1000 bytes, then silence
        answer_head, body = read_response(raw)
        assert answer_head.startswith(b"HTTP/1.1 408")
        assert json.loads(body)["error"]["code"] == "request_timeout"
        assert b"x-gw-request-id" in answer_head.lower()
        # The rest of the body never comes: the connection does not stay open for it.
        assert read_until_closed(raw) == b""


def test_slow_clients_do_not_block_the_others(strict_gw: GwServer) -> None:
    hanging = [connect(strict_gw) for _ in range(20)]
    try:
        for raw in hanging:
            raw.sendall(PARTIAL_HEAD)
        with httpx.Client(base_url=strict_gw.url, timeout=SOCKET_TIMEOUT_S) as http:
            assert http.get("/livez").status_code == 200
            chat = http.post(
                "/v1/chat/completions",
                json={"model": "mock", "messages": [{"role": "user", "content": "hi"}]},
            )
            assert chat.status_code == 200, chat.text
            assert chat.json()["choices"][0]["message"]["content"]
        for raw in hanging:
            assert_bare_408(read_until_closed(raw))
    finally:
        for raw in hanging:
            raw.close()

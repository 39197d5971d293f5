"""Raw sockets to a real gw on loopback, for what HTTP clients hide: bare answers written
by gw's server protocol itself, and when it closes. Each socket has a generous timeout: a
test fails if gw leaves a connection open that long, and none measures how fast gw is."""

from __future__ import annotations

import json
import socket

from e2e.gw_process import GwServer

SOCKET_TIMEOUT_S = 20.0


def connect(gw: GwServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", gw.port), timeout=SOCKET_TIMEOUT_S)


def read_until_closed(raw: socket.socket) -> bytes:
    """Everything the server sends until it closes; socket.timeout if it never does."""
    data = b""
    for _ in range(10_000):  # bounded; each recv is bounded by the socket's timeout
        try:
            chunk = raw.recv(65536)
        except ConnectionResetError:  # closed with unread input: a reset instead of a FIN
            return data
        if not chunk:
            return data
        data += chunk
    raise AssertionError("the server kept sending")


def assert_bare_close(answer: bytes, status_line: bytes, code: str | None = None) -> None:
    """``answer`` is one response with ``status_line`` that closes the connection, its body
    a gw error in OpenAI's shape (``code`` when given)."""
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.lower().split(b"\r\n")
    assert lines[0] == status_line.lower(), answer
    assert b"connection: close" in lines
    assert b"content-type: application/json" in lines
    assert f"content-length: {len(body)}".encode() in lines
    error = json.loads(body)["error"]
    assert error["message"]
    if code is not None:
        assert error["code"] == code

"""bench.relay, the floor the benchmark measures with ``--peer relay``: real processes on
loopback (the fake upstream and the relay, started as the benchmark starts them), read by
the benchmark's own clients. A floor that lost bytes, or opened a connection per request,
would make gw's figures look better or worse than they are."""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urlsplit

import msgspec
import pytest

from bench.cache_load import same_body
from bench.processes import ProcessSet, clean_env
from bench.streaming import run_streams
from bench.targets import Target, start_relay
from bench.upstream import (
    CHUNKS_PER_STREAM,
    REPLY,
    chat_body,
    start_upstream,
    upstream_origin,
)

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def relay(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    with ProcessSet(tmp_path_factory.mktemp("relay-logs")) as processes:
        upstream = start_upstream(processes, REPO, clean_env())
        yield start_relay(processes, upstream_origin(upstream))


def _post(url: str, body: bytes, connection: http.client.HTTPConnection) -> tuple[int, bytes]:
    path = urlsplit(url).path
    connection.request("POST", path, body=body, headers={"content-type": "application/json"})
    response = connection.getresponse()
    return response.status, response.read()


def test_a_whole_answer_comes_through_on_one_kept_alive_connection(relay: Target) -> None:
    parts = urlsplit(relay.chat_url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    try:
        answers = [_post(relay.chat_url, chat_body(stream=False), connection) for _ in range(3)]
    finally:
        connection.close()
    for status, body in answers:
        assert status == 200
        assert json.loads(body)["choices"][0]["message"]["content"] == REPLY


def test_streams_come_through_whole(relay: Target) -> None:
    samples = run_streams(relay.chat_url, same_body(stream=True), count=6, concurrency=2)
    assert [sample.error for sample in samples] == [None] * 6
    assert {sample.frames for sample in samples} == {CHUNKS_PER_STREAM}


class CountingUpstream:
    """A loopback HTTP/1.1 server that answers every POST with a small JSON body on a
    kept-alive connection, and counts the connections it accepted."""

    ANSWER = b'{"ok":true}'

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:  # closed: the test is over
                return
            self.accepted += 1
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        with connection, connection.makefile("rb") as reader:
            while head := _read_head(reader):
                length = int(head.get("content-length", "0"))
                reader.read(length)
                connection.sendall(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    b"content-length: %d\r\n\r\n%s" % (len(self.ANSWER), self.ANSWER)
                )


def _read_head(reader: BinaryIO) -> dict[str, str] | None:
    """The request's headers (lower-case names); None once the client closed."""
    if not reader.readline():
        return None
    headers: dict[str, str] = {}
    while (line := reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    return headers


def test_the_relay_reuses_its_upstream_connections(tmp_path: Path) -> None:
    # One connection per request would add a connect to every figure of the floor.
    upstream = CountingUpstream()
    try:
        with ProcessSet(tmp_path) as processes:
            relay = start_relay(processes, upstream.origin)  # its first answer: one request
            parts = urlsplit(relay.chat_url)
            client = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
            try:
                answers = [_post(relay.chat_url, b"{}", client) for _ in range(10)]
            finally:
                client.close()
    finally:
        upstream.listener.close()
    assert answers == [(200, CountingUpstream.ANSWER)] * 10
    assert upstream.accepted == 1


def test_an_oversized_body_is_refused(relay: Target) -> None:
    parts = urlsplit(relay.chat_url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    try:
        status, _ = _post(relay.chat_url, msgspec.json.encode({"x": "y" * (2 << 20)}), connection)
    finally:
        connection.close()
    assert status == 413

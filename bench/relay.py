"""A byte relay: the least a Python gateway on gw's server stack can spend per request.

``scripts/bench --peer relay`` measures it like any gateway. It is uvicorn with uvloop
and httptools (gw's server setup), a bare ASGI app, and a keep-alive HTTP/1.1 client on
httptools (as gw's own) that passes the upstream's answer through unchanged. It does
nothing else: no keys, routing, retries, decoding, translation, limits or records. What
gw spends beyond it is what gw's features cost; a figure below the relay's is out of
reach for any gateway built on this stack, on this machine.

    python -m bench.relay --upstream http://127.0.0.1:PORT --port 0

prints ``relay listening on http://127.0.0.1:<port>`` once it listens.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
from collections import deque
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import httptools
import uvicorn

URL_LINE = r"^relay listening on (http://127\.0\.0\.1:\d+)$"
MAX_BODY = 1 << 20  # a client body larger than this is refused


class UpstreamConnection(asyncio.Protocol):
    """One kept-alive connection to the upstream, one exchange at a time."""

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self.pieces: deque[bytes] = deque()
        self.waiter: asyncio.Future[None] | None = None
        self.status = 0
        self.content_type = b"application/json"
        self.has_length = False
        self.complete = False
        self.keep_alive = False
        self.lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.parser.feed_data(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self._wake()

    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name == b"content-type":
            self.content_type = value
        elif name == b"content-length":
            self.has_length = True

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        self._wake()

    def on_body(self, body: bytes) -> None:
        self.pieces.append(body)
        self._wake()

    def on_message_complete(self) -> None:
        self.complete = True
        self.keep_alive = self.parser.should_keep_alive()  # reset once this returns
        self._wake()

    def _wake(self) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _wait(self) -> None:
        if self.lost:
            raise ConnectionError("the upstream closed the connection")
        self.waiter = asyncio.get_running_loop().create_future()
        await self.waiter

    async def send(self, head: bytes, body: bytes) -> None:
        """Write one request and wait for the answer's status line and headers."""
        assert self.transport is not None  # noqa: S101 - connected by create_connection
        self.status, self.has_length, self.complete, self.keep_alive = 0, False, False, False
        self.transport.write(head + body)
        while not self.status:
            await self._wait()

    async def body_pieces(self) -> AsyncIterator[bytes]:
        """The answer's body as it arrives."""
        while True:
            if self.pieces:
                yield self.pieces.popleft()
            elif self.complete:
                return
            else:
                await self._wait()

    @property
    def reusable(self) -> bool:
        return self.complete and self.keep_alive and not self.lost


class Relay:
    """The ASGI app: each POST goes to the same path on the upstream, as it came."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or parts.hostname is None or parts.port is None:
            raise SystemExit(f"--upstream: http://host:port expected, not {upstream!r}")
        self.host, self.port = parts.hostname, parts.port
        self.idle: list[UpstreamConnection] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
        elif scope["type"] == "http":
            await self._relay(scope, receive, send)

    async def _relay(self, scope: Any, receive: Any, send: Any) -> None:
        body = await _read_body(receive)
        if body is None:
            await _answer(send, 413, b"request body too large")
            return
        connection = await self._connection()
        head = (
            f"POST {scope['path']} HTTP/1.1\r\nhost: {self.host}:{self.port}\r\n"
            f"content-type: application/json\r\nauthorization: Bearer sk-relay\r\n"
            f"content-length: {len(body)}\r\n\r\n"
        ).encode()
        await connection.send(head, body)
        headers = [(b"content-type", connection.content_type)]
        if connection.has_length:  # a whole answer: read it, send it with its length
            pieces = [piece async for piece in connection.body_pieces()]
            whole = b"".join(pieces)
            headers.append((b"content-length", str(len(whole)).encode()))
            await send(
                {"type": "http.response.start", "status": connection.status, "headers": headers}
            )
            await send({"type": "http.response.body", "body": whole})
        else:  # a stream: each piece goes on as it arrives
            await send(
                {"type": "http.response.start", "status": connection.status, "headers": headers}
            )
            async for piece in connection.body_pieces():
                await send({"type": "http.response.body", "body": piece, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        if connection.reusable:
            connection.parser = httptools.HttpResponseParser(connection)
            self.idle.append(connection)
        elif connection.transport is not None:
            connection.transport.close()

    async def _connection(self) -> UpstreamConnection:
        while self.idle:
            connection = self.idle.pop()
            if not connection.lost:  # the upstream may close a kept-alive one while idle
                return connection
        loop = asyncio.get_running_loop()
        _, connection = await loop.create_connection(UpstreamConnection, self.host, self.port)
        return connection


async def _lifespan(receive: Any, send: Any) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _read_body(receive: Any) -> bytes | None:
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            return None
        parts.append(chunk)
        if not message.get("more_body"):
            return b"".join(parts)


async def _answer(send: Any, status: int, text: bytes) -> None:
    headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(text)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": text})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.relay", description=__doc__)
    parser.add_argument("--upstream", required=True, help="the upstream's http://host:port")
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    args = parser.parse_args(argv)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", args.port))
    listener.listen(2048)
    config = uvicorn.Config(
        Relay(args.upstream),
        loop="uvloop",
        http="httptools",
        ws="none",
        lifespan="on",
        log_level="warning",
        access_log=False,
    )
    server = uvicorn.Server(config)
    print(f"relay listening on http://127.0.0.1:{listener.getsockname()[1]}", flush=True)
    server.run(sockets=[listener])


if __name__ == "__main__":
    main()

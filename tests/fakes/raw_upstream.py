"""A raw loopback upstream that writes exact bytes (framings, encodings, faults, heads
of any size), and the calls gw's own HTTP/1.1 client makes to it: for the transport's unit
tests (tests/unit/upstream_http)."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from gw.ports import AttemptTimeouts
from gw.upstream_http.h1_pool import ConnectionPool
from gw.upstream_http.h1_transport import BuiltinTransport

TIMEOUTS = AttemptTimeouts(connect=5.0, read=30.0)
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class RawUpstream:
    """A loopback server: ``handler`` answers each connection; heads are recorded."""

    def __init__(self, handler: Handler, tls: ssl.SSLContext | None = None, port: int = 0) -> None:
        self.handler = handler
        self.tls = tls
        self.port = port  # 0: any free one
        self.connections = 0
        self.heads: list[bytes] = []
        self.bodies: list[bytes] = []

    async def __aenter__(self) -> RawUpstream:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", self.port, ssl=self.tls)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()

    def url(self, path: str = "/v1/chat/completions", host: str = "127.0.0.1") -> str:
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}{path}"

    async def read_request(self, reader: asyncio.StreamReader) -> bool:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            return False
        self.heads.append(head)
        length = next(
            int(line.partition(b":")[2])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        self.bodies.append(await reader.readexactly(length))
        return True

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.handler(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


def answering(upstream_box: list[RawUpstream], *replies: bytes) -> Handler:
    """A keep-alive handler: each request, on whichever connection, gets the next reply."""
    queue = list(replies)

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while queue:
            if not await upstream_box[0].read_request(reader):
                return
            writer.write(queue.pop(0))
            await writer.drain()
        await reader.read()  # hold the connection until the client closes it

    return handler


async def post(transport: BuiltinTransport, url: str, **options: Any) -> Any:
    return await transport.post(
        url,
        headers=options.pop("headers", {"content-type": "application/json"}),
        body=options.pop("body", b'{"x":1}'),
        timeouts=options.pop("timeouts", TIMEOUTS),
        provider="fake",
        tls=options.pop("tls", None),
    )


async def stream(transport: BuiltinTransport, url: str, **options: Any) -> list[bytes]:
    async with transport.post_streaming(
        url,
        headers={"content-type": "application/json"},
        body=b"{}",
        timeouts=options.pop("timeouts", TIMEOUTS),
        provider="fake",
    ) as reply:
        assert reply.status == 200
        return [chunk async for chunk in reply.chunks()]


def scenario(
    run: Callable[[Coroutine[Any, Any, Any]], Any],
    handler_for: Callable[[list[RawUpstream]], Handler],
    body: Callable[[RawUpstream, BuiltinTransport], Awaitable[Any]],
    *,
    pool: ConnectionPool | None = None,
    tls: ssl.SSLContext | None = None,
    port: int = 0,
) -> Any:
    async def main() -> Any:
        box: list[RawUpstream] = []
        upstream = RawUpstream(handler_for(box), tls, port)
        box.append(upstream)
        transport = BuiltinTransport(pool)
        async with upstream:
            try:
                return await body(upstream, transport)
            finally:
                await transport.close()

    return run(main())


OK_JSON = (
    b'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\n\r\n{"ok":true}'
)


def fault(send: bytes, *, then_close: bool = True) -> Callable[[list[RawUpstream]], Handler]:
    def handler_for(box: list[RawUpstream]) -> Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await box[0].read_request(reader)
            writer.write(send)
            await writer.drain()
            if not then_close:
                await reader.read()

        return handler

    return handler_for

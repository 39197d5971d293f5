"""A fake HTTP forward proxy on loopback: it takes absolute-form requests
(``POST http://upstream.test/v1/chat/completions``), records them, and forwards each to one
origin whatever host it names, passing the answer back chunk by chunk; and ``CONNECT
upstream.test:443`` (how a client reaches an https upstream through a proxy), recorded
too, answered by a byte tunnel to one TLS origin whatever host it names (the client's TLS
runs end to end through it: the proxy sees no plaintext).

Upstreams with made-up host names can so be reached only through it: a client that
ignores its proxy cannot resolve them.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from .http_server import HttpRequest, Responder, ServerThread

HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
}


@dataclass(frozen=True, slots=True)
class ProxiedRequest:
    method: str
    target: str  # as the client sent it: absolute-form through a proxy
    proxy_authorization: str | None


class FakeForwardProxy:
    """``with FakeForwardProxy(origin, tunnel_to=(host, port)) as proxy:`` ...
    ``proxy.url``, ``proxy.seen``; without ``tunnel_to`` a CONNECT is refused (405)."""

    def __init__(self, origin: str, *, tunnel_to: tuple[str, int] | None = None) -> None:
        self.origin = origin.rstrip("/")
        self.tunnel_to = tunnel_to
        self.seen: list[ProxiedRequest] = []
        self._thread = ServerThread(self._handle, "127.0.0.1", 0, name="fake-forward-proxy")
        self.url = ""

    def __enter__(self) -> FakeForwardProxy:
        self.url = f"http://127.0.0.1:{self._thread.start()}"
        return self

    def __exit__(self, *exc: object) -> None:
        self._thread.stop()

    async def _handle(self, request: HttpRequest, responder: Responder) -> None:
        self.seen.append(
            ProxiedRequest(
                request.method, request.target, request.headers.get("proxy-authorization")
            )
        )
        if request.method == "CONNECT":
            await self._tunnel(responder)
            return
        target = urlsplit(request.target)
        if not target.scheme:  # origin-form: the client did not treat this as a proxy
            await responder.send(400, [("content-type", "text/plain")], b"not a proxy request\n")
            return
        path = target.path + (f"?{target.query}" if target.query else "")
        headers = {k: v for k, v in request.headers.items() if k not in HOP_BY_HOP}
        async with httpx.AsyncClient(trust_env=False) as client:
            forwarded = client.build_request(
                request.method, self.origin + path, headers=headers, content=request.body
            )
            response = await client.send(forwarded, stream=True)
            try:
                kept = [(k, v) for k, v in response.headers.items() if k not in HOP_BY_HOP]
                await responder.start(response.status_code, kept, None)
                async for chunk in response.aiter_raw():
                    await responder.write(chunk)
                await responder.end()
            finally:
                await response.aclose()

    async def _tunnel(self, responder: Responder) -> None:
        if self.tunnel_to is None:
            await responder.send(405, [("content-type", "text/plain")], b"no CONNECT here\n")
            return
        client_reader, client_writer = responder.take_over()
        try:
            origin_reader, origin_writer = await asyncio.open_connection(*self.tunnel_to)
        except OSError:
            client_writer.write(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")
            return
        client_writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        try:
            await asyncio.gather(
                _pump(client_reader, origin_writer), _pump(origin_reader, client_writer)
            )
        finally:
            origin_writer.close()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Bytes from ``reader`` to ``writer`` until either side ends; then the other is told."""
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):  # the other side may be gone
            if writer.can_write_eof():
                writer.write_eof()
            else:
                writer.close()

"""No upstream transport keeps cookies (gw/upstream_http/h1_transport.py, httpx_transport.py): one client serves every tenant and account, so a cookie one answer
sets must not be sent with the next request. A real loopback server that sets a cookie and
records what each request carried."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from gw.ports import AttemptTimeouts
from gw.upstream_http.h1_transport import BuiltinTransport
from gw.upstream_http.http_transport import HttpTransport
from gw.upstream_http.httpx_transport import HttpxTransport


def builtin_transport() -> HttpTransport:
    return BuiltinTransport()


def httpx_transport() -> HttpTransport:
    return HttpxTransport()


async def _two_requests_to_a_cookie_setter(
    make_transport: Callable[[], HttpTransport],
) -> list[bytes]:
    heads: list[bytes] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(2):  # keep-alive: both requests may come on one connection
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                break
            heads.append(head)
            length = next(
                int(line.partition(b":")[2])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            await reader.readexactly(length)
            writer.write(
                b"HTTP/1.1 200 OK\r\nset-cookie: session=tenant-a; Path=/\r\n"
                b"content-type: application/json\r\ncontent-length: 2\r\n\r\n{}"
            )
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    # A host name: cookies from a bare IP address are refused by any jar anyway.
    url = f"http://localhost:{server.sockets[0].getsockname()[1]}/v1/chat/completions"
    transport = make_transport()
    timeouts = AttemptTimeouts(connect=5.0, read=30.0)
    try:
        for _ in range(2):
            reply = await transport.post(
                url,
                headers={"content-type": "application/json"},
                body=b"{}",
                timeouts=timeouts,
                provider="fake",
            )
            assert reply.status == 200
    finally:
        await transport.close()
        server.close()
        await server.wait_closed()
    return heads


@pytest.mark.parametrize("make_transport", [builtin_transport, httpx_transport])
def test_a_cookie_an_upstream_sets_is_not_sent_back(
    make_transport: Callable[[], HttpTransport],
) -> None:
    heads = asyncio.run(_two_requests_to_a_cookie_setter(make_transport))
    assert len(heads) == 2
    assert all(b"\r\ncookie:" not in head.lower() for head in heads), heads

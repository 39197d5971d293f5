"""aiohttp's pool wait is gw's own saturation: with every pooled connection in use, a
request that finds none free within the connect timeout is 503 ``overloaded`` blamed on the
gateway (so no breaker opens on a healthy upstream), as with gw's own client; a failure to
connect stays the upstream's. A real loopback server holds a stream open."""

from __future__ import annotations

import asyncio
import socket

from test_upstream_limits import Upstream

from gw.errors import GatewayError, OverloadedError, UpstreamError
from gw.ports import AttemptTimeouts
from gw.upstream_http.aiohttp_transport import AiohttpTransport, build_session

TIMEOUTS = AttemptTimeouts(connect=5.0, read=10.0)
SHORT = AttemptTimeouts(connect=0.3, read=10.0)


async def failing(transport: AiohttpTransport, url: str, timeouts: AttemptTimeouts) -> GatewayError:
    try:
        await transport.post(url, headers={}, body=b"{}", timeouts=timeouts, provider="fake")
    except GatewayError as error:
        return error
    raise AssertionError("the request was answered")


class HeldStream(Upstream):
    """The first connection gets a stream that never ends; later ones a whole answer."""

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.connections:
            await super()._serve(reader, writer)
            return
        self.connections += 1
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\nheld\r\n")
        await writer.drain()
        await reader.read()  # until the client closes
        writer.close()


def test_a_wait_for_a_pooled_connection_that_runs_out_is_overloaded_on_the_gateway() -> None:
    async def main() -> None:
        transport = AiohttpTransport(build_session(max_connections=1))
        try:
            async with HeldStream(b"whole") as upstream:
                async with transport.post_streaming(
                    upstream.url(), headers={}, body=b"{}", timeouts=TIMEOUTS, provider="fake"
                ) as reply:
                    assert reply.status == 200
                    full = await failing(transport, upstream.url(), SHORT)
                assert type(full) is OverloadedError
                assert full.blame == "gateway"
                assert full.retry_after == 1.0
                assert "server.upstream_max_connections 1" in full.message
                # The stream is closed: its slot serves the next request.
                answer = await transport.post(
                    upstream.url(), headers={}, body=b"{}", timeouts=TIMEOUTS, provider="fake"
                )
                assert answer.body == b"whole"
                assert upstream.connections == 2
        finally:
            await transport.close()

    asyncio.run(main())


def test_a_connect_failure_without_a_pool_wait_stays_the_upstreams() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    async def main() -> GatewayError:
        transport = AiohttpTransport(build_session(max_connections=1))
        try:
            return await failing(transport, f"http://127.0.0.1:{port}/v1", SHORT)
        finally:
            await transport.close()

    error = asyncio.run(main())
    assert type(error) is UpstreamError
    assert error.blame == "upstream"

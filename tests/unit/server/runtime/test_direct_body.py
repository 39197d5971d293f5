"""gw's server protocol gives each request a DirectBody (gw/server/runtime/direct_body.py) that
writes body chunks exactly as uvicorn's send does, and only while they can go out: real
uvicorn with gw's protocol on a loopback port, read by a raw client. This is also where a
uvicorn upgrade that renames what DirectBody reads would show."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

import uvicorn

from gw.server.runtime.direct_body import direct_body
from gw.server.runtime.protocol import gateway_protocol

REQUEST = b"POST /s HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n"


@contextlib.asynccontextmanager
async def serving(app: Any) -> AsyncIterator[tuple[str, int]]:
    """uvicorn with gw's protocol on a loopback port, stopped on the way out."""
    listener = socket.create_server(("127.0.0.1", 0))
    config = uvicorn.Config(
        app, http=gateway_protocol(5.0), ws="none", lifespan="off", log_level="warning"
    )
    server = uvicorn.Server(config)
    task = asyncio.ensure_future(server.serve(sockets=[listener]))
    try:  # the listener is listening: a request waits for uvicorn to accept it
        yield listener.getsockname()
    finally:
        server.should_exit = True
        await task


async def serve_once(app: Any) -> bytes:
    """One POST with an empty body; the whole chunked answer."""
    async with serving(app) as (host, port):
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(REQUEST)
        async with asyncio.timeout(30):
            answer = await reader.readuntil(b"0\r\n\r\n")
        writer.close()
        return answer


def test_direct_writes_go_out_as_chunks_between_sends_and_only_while_they_can() -> None:
    tries: list[bool] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        writer = direct_body(scope)
        assert writer is not None
        await receive()
        tries.append(writer.write(b"early"))  # no response yet: declined
        start = {"type": "http.response.start", "status": 200, "headers": []}
        await send(start | {"headers": [(b"content-type", b"text/event-stream")]})
        tries.append(writer.write(b"data: 1\n\n"))
        await send({"type": "http.response.body", "body": b"data: 2\n\n", "more_body": True})
        tries.append(writer.write(b"data: 3\n\n"))
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        tries.append(writer.write(b"late"))  # the response is complete: declined

    answer = asyncio.run(serve_once(app))
    assert tries == [False, True, True, False]
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head
    assert body == b"9\r\ndata: 1\n\n\r\n9\r\ndata: 2\n\n\r\n9\r\ndata: 3\n\n\r\n0\r\n\r\n"


def test_a_body_with_a_declared_length_is_never_written_directly() -> None:
    tries: list[bool] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        writer = direct_body(scope)
        assert writer is not None
        await receive()
        headers = [(b"content-length", b"5")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        tries.append(writer.write(b"xx"))
        await send({"type": "http.response.body", "body": b"0\r\n\r\n"})

    answer = asyncio.run(serve_once(app))
    assert tries == [False]
    assert answer.endswith(b"\r\n\r\n0\r\n\r\n")


def test_a_client_not_reading_makes_writes_decline_and_loses_nothing() -> None:
    piece = b"data: " + b"x" * (64 * 1024) + b"\n\n"
    written: list[int] = []  # how many pieces went out directly before the first decline
    declined = asyncio.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        writer = direct_body(scope)
        assert writer is not None
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        count = 0
        while count < 512 and writer.write(piece):  # the socket's buffers fill: a decline
            count += 1
        written.append(count)
        declined.set()
        # What did not go out directly is sent the awaited way, which waits for the client.
        await send({"type": "http.response.body", "body": piece, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def main() -> bytes:
        async with serving(app) as (host, port):
            reader, writer = await asyncio.open_connection(host, port, limit=1 << 26)
            writer.write(REQUEST)
            async with asyncio.timeout(60):
                await declined.wait()  # the client reads nothing until the writes declined
                answer = await reader.readuntil(b"\r\n0\r\n\r\n")
            writer.close()
            return answer

    answer = asyncio.run(main())
    assert 0 < written[0] < 512
    body = answer.partition(b"\r\n\r\n")[2]
    chunk = b"%x\r\n%s\r\n" % (len(piece), piece)
    assert body == chunk * (written[0] + 1) + b"0\r\n\r\n"

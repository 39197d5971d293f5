"""An upstream answer's head is bounded as gw's server bounds a request's (64 KiB, 128
lines): a 20 MB head or 20,000 header lines fail as ``upstream_error`` naming the bound,
and gw stops reading long before the upstream is done sending. Chunked trailers are read
and dropped: they never become headers (gw/upstream_http/h1_connection.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from gw.errors import UpstreamError
from gw.server.runtime.protocol import MAX_HEAD_BYTES as SERVER_MAX_HEAD_BYTES
from gw.server.runtime.protocol import MAX_HEADERS as SERVER_MAX_HEADERS
from gw.upstream_http.h1_connection import MAX_HEAD_BYTES, MAX_HEADER_LINES
from gw.upstream_http.h1_transport import BuiltinTransport

from fakes.raw_upstream import TIMEOUTS, Handler, RawUpstream, answering, post, scenario

TOO_LARGE = "the upstream's answer head is too large: over 64 KiB or 128 header lines"
TWENTY_MB = 20 * 1024 * 1024
PIECE = 64 * 1024
CHUNKED = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"


class Flood:
    """A handler that answers with ``before``, then ``size`` bytes of ``a`` in drained
    pieces, then ``after``; ``written`` counts what the socket took before gw let go."""

    def __init__(self, before: bytes, size: int, after: bytes) -> None:
        self.before, self.size, self.after = before, size, after
        self.written = 0
        self.done = asyncio.Event()

    def handler_for(self, box: list[RawUpstream]) -> Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                await box[0].read_request(reader)
                writer.write(self.before)
                piece = b"a" * PIECE
                while self.written < self.size:
                    writer.write(piece)
                    await writer.drain()  # raises once gw has closed the connection
                    self.written += PIECE
                writer.write(self.after)
                await writer.drain()
            finally:
                self.done.set()

        return handler


def test_the_bounds_are_the_servers_own() -> None:
    assert (MAX_HEAD_BYTES, MAX_HEADER_LINES) == (SERVER_MAX_HEAD_BYTES, SERVER_MAX_HEADERS)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (b"HTTP/1.1 200 OK\r\nx-big: ", b"\r\ncontent-length: 0\r\n\r\n"),  # one header line
        (b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nx-big", b": 1\r\n\r\n"),  # one header name
        (CHUNKED + b"\r\n5\r\nhello\r\n0\r\nx-trailer: ", b"\r\n\r\n"),  # one trailer line
    ],
    ids=["header-value", "header-name", "trailer"],
)
def test_a_20_mb_line_fails_naming_the_bound_and_is_not_read_whole(
    run: Any, before: bytes, after: bytes
) -> None:
    flood = Flood(before, TWENTY_MB, after)

    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        with pytest.raises(UpstreamError, match=TOO_LARGE) as failed:
            await post(transport, upstream.url())
        assert failed.value.code == "upstream_error"
        await flood.done.wait()
        # gw closed the connection after ~64 KiB and what the sockets' buffers held
        assert flood.written < TWENTY_MB // 2

    scenario(run, flood.handler_for, body)


def lines(count: int) -> bytes:
    return b"".join(b"x-h%d: v\r\n" % n for n in range(count))


@pytest.mark.parametrize(
    ("head", "fails"),
    [
        # content-length is a line too: 20,000, the bound (128) and one over it
        (b"HTTP/1.1 200 OK\r\n" + lines(19_999) + b"content-length: 2\r\n\r\n{}", True),
        (b"HTTP/1.1 200 OK\r\n" + lines(127) + b"content-length: 2\r\n\r\n{}", False),
        (b"HTTP/1.1 200 OK\r\n" + lines(128) + b"content-length: 2\r\n\r\n{}", True),
        # interim answers' lines count too: an upstream cannot spread a flood over them
        (
            b"HTTP/1.1 103 Early Hints\r\n"
            + lines(100)
            + b"\r\n"
            + b"HTTP/1.1 200 OK\r\n"
            + lines(27)
            + b"content-length: 2\r\n\r\n{}",
            False,
        ),
        (
            b"HTTP/1.1 103 Early Hints\r\n"
            + lines(100)
            + b"\r\n"
            + b"HTTP/1.1 200 OK\r\n"
            + lines(28)
            + b"content-length: 2\r\n\r\n{}",
            True,
        ),
        # a chunked answer's trailers count with its head (2 lines of its own in CHUNKED)
        (CHUNKED + lines(125) + b"\r\n2\r\n{}\r\n0\r\nx-t: 1\r\n\r\n", False),
        (CHUNKED + lines(125) + b"\r\n2\r\n{}\r\n0\r\nx-t: 1\r\nx-u: 2\r\n\r\n", True),
    ],
    ids=[
        "20000-lines",
        "128-lines",
        "129-lines",
        "with-1xx-128",
        "with-1xx-129",
        "with-trailer-128",
        "with-trailers-129",
    ],
)
def test_header_lines_are_bounded(run: Any, head: bytes, fails: bool) -> None:
    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        if fails:
            with pytest.raises(UpstreamError, match=TOO_LARGE):
                await post(transport, upstream.url())
        else:
            assert (await post(transport, upstream.url())).body == b"{}"

    scenario(run, lambda box: answering(box, head), body)


def test_a_head_of_many_small_reads_within_the_bound_is_read(run: Any) -> None:
    """Reads that complete nothing (a line trickling in) count only until one does."""
    value = b"v" * 1000

    def handler_for(box: list[RawUpstream]) -> Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await box[0].read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\n")
            for n in range(60):  # 60 KB of lines, each written in two pieces
                writer.write(b"x-h%d: " % n + value[:500])
                await writer.drain()
                writer.write(value[500:] + b"\r\n")
                await writer.drain()
            writer.write(b"content-length: 2\r\n\r\n{}")
            await writer.drain()
            await reader.read()

        return handler

    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        answer = await post(transport, upstream.url())
        assert (answer.body, answer.headers["x-h59"]) == (b"{}", value.decode())

    scenario(run, handler_for, body)


TRAILED = CHUNKED + (
    b"trailer: x-checksum, content-type\r\n\r\n"
    b"7\r\ndata: 1\r\n7\r\ndata: 2\r\n0\r\nx-checksum: abc\r\ncontent-type: text/evil\r\n\r\n"
)


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
def test_trailers_never_become_headers(run: Any, streamed: bool) -> None:
    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        for _ in range(2):
            if not streamed:
                answer = await post(transport, upstream.url())
                assert answer.body == b"data: 1data: 2"
                headers = answer.headers
            else:
                async with transport.post_streaming(
                    upstream.url(), headers={}, body=b"{}", timeouts=TIMEOUTS, provider="fake"
                ) as reply:
                    assert b"".join([c async for c in reply.chunks()]) == b"data: 1data: 2"
                    headers = reply.headers
            assert "x-checksum" not in headers
            assert headers["content-type"] == "text/event-stream"
        assert upstream.connections == 1  # the trailers were read to their end: reused

    scenario(run, lambda box: answering(box, TRAILED, TRAILED), body)

"""gw's own HTTP/1.1 client (gw/upstream_http/h1_*.py) against a raw loopback server that
writes exact bytes: framings, encodings, interim answers, faults, keep-alive, the pool's
cap, flow control and TLS (the server: tests/fakes/raw_upstream.py). Every test runs on
uvloop (what gw serve runs on) and on asyncio's own loop (conftest.py). The adapters'
contract over this transport: tests/contract."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import re
import zlib
from collections.abc import Callable
from typing import Any

import pytest

from gw.errors import (
    OverloadedError,
    UpstreamAuthFailedError,
    UpstreamError,
    UpstreamTimeoutError,
)
from gw.ports import AttemptTimeouts
from gw.upstream_http.h1_connection import PAUSE_ABOVE, H1Connection
from gw.upstream_http.h1_inflate import MAX_DECODED_BYTES
from gw.upstream_http.h1_pool import ConnectionPool
from gw.upstream_http.h1_transport import BuiltinTransport
from gw.upstream_http.reply_budget import ReplyBudget

from e2e.waiting import await_until
from fakes.raw_upstream import (
    OK_JSON,
    TIMEOUTS,
    Handler,
    RawUpstream,
    answering,
    fault,
    post,
    scenario,
    stream,
)


def test_a_length_framed_answer_and_keep_alive_reuse(run: Any) -> None:
    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        first = await post(transport, upstream.url())
        second = await post(transport, upstream.url())
        assert (first.status, first.body, second.body) == (200, b'{"ok":true}', b'{"ok":true}')
        assert first.headers["content-type"] == "application/json"
        assert upstream.connections == 1  # the second request rode the first connection
        assert upstream.bodies == [b'{"x":1}', b'{"x":1}']

    scenario(run, lambda box: answering(box, OK_JSON, OK_JSON), body)


def test_the_request_head_gw_writes(run: Any) -> None:
    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        headers = {
            "Content-Type": "application/json",
            "Authorization": "Bearer sk-1",
            "Host": "evil.example",  # framing headers are the client's own
            "Content-Length": "999",
            "User-Agent": "custom/1",
        }
        await post(transport, upstream.url("/v1/chat/completions?api-version=2"), headers=headers)
        lines = upstream.heads[0].decode().split("\r\n")
        assert lines[0] == "POST /v1/chat/completions?api-version=2 HTTP/1.1"
        fields = [line.split(": ", 1) for line in lines[1:] if line]
        names = [name.lower() for name, _ in fields]
        assert sorted(names) == sorted(
            [
                "host",
                "content-type",
                "authorization",
                "user-agent",
                "accept-encoding",
                "content-length",
            ]
        )
        values = {name.lower(): value for name, value in fields}
        assert values["host"] == f"127.0.0.1:{upstream.port}"
        assert values["content-length"] == "7"
        assert values["user-agent"] == "custom/1"
        assert values["authorization"] == "Bearer sk-1"

    scenario(run, lambda box: answering(box, OK_JSON), body)


def test_chunked_answers_stream_in_order_and_the_connection_is_reused(run: Any) -> None:
    frames = [b'data: {"n":%d}\n\n' % n for n in range(22)]
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(frame), frame) for frame in frames) + b"0\r\n\r\n"
    reply = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    )

    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        for _ in range(2):
            assert b"".join(await stream(transport, upstream.url())) == b"".join(frames)
        assert upstream.connections == 1

    scenario(run, lambda box: answering(box, reply + chunked, reply + chunked), body)


def test_a_body_without_length_ends_when_the_upstream_closes(run: Any) -> None:
    async def handler_for_box(box: list[RawUpstream], reader: Any, writer: Any) -> None:
        await box[0].read_request(reader)
        writer.write(b'HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n{"until":')
        await writer.drain()
        writer.write(b'"close"}')

    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        for _ in range(2):
            assert (await post(transport, upstream.url())).body == b'{"until":"close"}'
        assert upstream.connections == 2  # not reused

    scenario(run, lambda box: lambda r, w: handler_for_box(box, r, w), body)


@pytest.mark.parametrize(
    ("encoding", "compress"),
    [
        ("gzip", gzip.compress),
        ("deflate", zlib.compress),  # the standard: zlib-wrapped
        ("deflate", lambda data: zlib.compress(data, wbits=-zlib.MAX_WBITS)),  # raw, as some send
    ],
)
def test_compressed_answers_are_decoded(
    run: Any, encoding: str, compress: Callable[[bytes], bytes]
) -> None:
    payload = b'{"text":"' + b"gateway " * 500 + b'"}'
    packed = compress(payload)
    reply = b"HTTP/1.1 200 OK\r\ncontent-encoding: %s\r\ncontent-length: %d\r\n\r\n%s" % (
        encoding.encode(),
        len(packed),
        packed,
    )

    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        assert (await post(transport, upstream.url())).body == payload

    scenario(run, lambda box: answering(box, reply), body)


def test_interim_1xx_answers_are_skipped(run: Any) -> None:
    reply = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n" + OK_JSON

    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        answer = await post(transport, upstream.url())
        assert (answer.status, answer.body) == (200, b'{"ok":true}')
        assert "link" not in answer.headers

    scenario(run, lambda box: answering(box, reply), body)


def test_repeated_headers_are_joined_and_names_lowercased(run: Any) -> None:
    reply = (
        b"HTTP/1.1 429 Too Many\r\nRetry-After: 3\r\nX-A: 1\r\nx-a: 2\r\ncontent-length: 0\r\n\r\n"
    )

    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        answer = await post(transport, upstream.url())
        assert answer.status == 429
        assert answer.headers["retry-after"] == "3"
        assert answer.headers["x-a"] == "1, 2"

    scenario(run, lambda box: answering(box, reply), body)


@pytest.mark.parametrize(
    ("send", "message"),
    [
        (b"", "the upstream hung up"),
        (b"HTTP/1.1 200 OK\r\ncontent-le", "the upstream hung up"),
        (b"HELLO THERE\r\n\r\n", "the upstream broke the HTTP protocol"),
        (b'HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n{"cut', "the upstream body was cut short"),
        (
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\nZZ\r\n",
            "the upstream body was cut short",
        ),
        (
            b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: 9\r\n\r\nnot gzip!",
            "the upstream body was cut short or undecodable",
        ),
        (
            b"HTTP/1.1 101 Switching\r\nupgrade: x\r\nconnection: upgrade\r\n\r\n",
            "the upstream broke",
        ),
    ],
)
def test_faults_become_upstream_errors(run: Any, send: bytes, message: str) -> None:
    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        with pytest.raises(UpstreamError, match=f"provider fake: {message}"):
            await post(transport, upstream.url())

    scenario(run, fault(send), body)


def test_a_stream_cut_short_yields_what_came_then_fails(run: Any) -> None:
    send = b'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nd\r\ndata: {"a":1}\r\n'

    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        received: list[bytes] = []

        async def read_all() -> None:
            async with transport.post_streaming(
                upstream.url(), headers={}, body=b"{}", timeouts=TIMEOUTS, provider="fake"
            ) as reply:
                async for chunk in reply.chunks():
                    received.append(chunk)

        with pytest.raises(UpstreamError, match="cut short"):
            await read_all()
        assert b"".join(received) == b'data: {"a":1}'

    scenario(run, fault(send), body)


def test_silence_past_the_read_timeout_is_an_upstream_timeout(run: Any) -> None:
    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        with pytest.raises(UpstreamTimeoutError, match="read timeout"):
            await post(transport, upstream.url(), timeouts=AttemptTimeouts(connect=5, read=0.2))

    scenario(run, fault(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n{", then_close=False), body)


def test_the_read_timeout_is_between_bytes_not_for_the_whole_answer(run: Any) -> None:
    pieces = 30

    def handler_for(box: list[RawUpstream]) -> Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await box[0].read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % pieces)
            for _ in range(pieces):  # 1.5 s in all, at most 0.05 s apart
                await asyncio.sleep(0.05)
                writer.write(b"x")
                await writer.drain()
            await reader.read()

        return handler

    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        timeouts = AttemptTimeouts(connect=5, read=1.0)
        assert (await post(transport, upstream.url(), timeouts=timeouts)).body == b"x" * pieces

    scenario(run, handler_for, body)


def test_a_refused_connection_says_so(run: Any) -> None:
    async def main() -> None:
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        transport = BuiltinTransport()
        try:
            with pytest.raises(
                UpstreamError, match=r"could not connect to the upstream \(connection refused\)"
            ):
                await post(transport, f"http://127.0.0.1:{port}/v1")
        finally:
            await transport.close()

    run(main())


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.com/v1", "not http"),
        ("/v1/chat", "not http"),
        ("http:///v1", "no host"),
        ("http://user:pw@example.com/v1", "holds credentials"),
        ("http://example.com:99999/v1", "Port out of range"),
        ("http://a..b:1/v1", "label empty or too long"),  # IDNA, before getaddrinfo sees it
    ],
)
def test_unusable_urls_are_refused_before_connecting(run: Any, url: str, message: str) -> None:
    async def main() -> None:
        transport = BuiltinTransport()
        with pytest.raises(UpstreamError, match=message):
            await post(transport, url)

    run(main())


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("authorization", "Bearer a\r\nx-injected: 1"),
        ("authorization", "Bearer a\nb"),
        ("authorization", "Bearer a\x00b"),
        ("authorization", "Bearer \u20ac"),
        ("Host: evil.example", "x"),
        ("Content-Length ", "5"),
        ("", "x"),
    ],
)
def test_a_header_that_would_break_the_request_is_refused(run: Any, name: str, value: str) -> None:
    async def main() -> None:
        transport = BuiltinTransport()
        with pytest.raises(UpstreamAuthFailedError, match="check the provider's headers") as caught:
            await post(transport, "http://127.0.0.1:9/v1", headers={name: value})
        assert caught.value.__context__ is None  # an encoding error's context holds the key

    run(main())


def test_the_pool_cap_bounds_open_connections_and_waits_within_the_connect_timeout(
    run: Any,
) -> None:
    held = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nhi\r\n"

    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        short = AttemptTimeouts(connect=0.3, read=5)
        async with transport.post_streaming(
            upstream.url(), headers={}, body=b"{}", timeouts=TIMEOUTS, provider="fake"
        ) as reply:
            assert reply.status == 200
            # A wait for a slot that runs out is gw's saturation, never the upstream's.
            with pytest.raises(OverloadedError, match="connection pool is full") as full:
                await post(transport, upstream.url(), timeouts=short)
            assert full.value.blame == "gateway"
            assert full.value.retry_after == 1.0
        # The stream was left unfinished: its connection closed, so the slot is free again.
        assert (await post(transport, upstream.url())).status == 200
        assert upstream.connections == 2

    scenario(
        run, lambda box: answering(box, held, OK_JSON), body, pool=ConnectionPool(max_connections=1)
    )


def test_the_cap_per_host_holds_one_host_and_lets_another_through(run: Any) -> None:
    held = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nhi\r\n"

    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        short = AttemptTimeouts(connect=0.3, read=5)
        other_host = upstream.url().replace("127.0.0.1", "localhost")  # another origin
        async with transport.post_streaming(
            upstream.url(), headers={}, body=b"{}", timeouts=TIMEOUTS, provider="fake"
        ) as reply:
            assert reply.status == 200
            with pytest.raises(OverloadedError, match=re.escape("1 of them to 127.0.0.1")):
                await post(transport, upstream.url(), timeouts=short)
            assert (await post(transport, other_host)).status == 200
        assert upstream.connections == 2

    pool = ConnectionPool(max_connections=4, max_per_host=1)
    scenario(run, lambda box: answering(box, held, OK_JSON), body, pool=pool)


def test_connections_that_cannot_be_trusted_again_are_not_reused(run: Any) -> None:
    closing = OK_JSON.replace(b"200 OK\r\n", b"200 OK\r\nconnection: close\r\n")
    extra = OK_JSON + b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"  # an answer nobody asked for
    http10 = OK_JSON.replace(b"HTTP/1.1", b"HTTP/1.0")

    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        for _ in range(4):
            assert (await post(transport, upstream.url())).status == 200
        assert upstream.connections == 4

    scenario(run, lambda box: answering(box, closing, closing, closing, closing), body)
    scenario(run, lambda box: answering(box, extra, extra, extra, extra), body)
    scenario(run, lambda box: answering(box, http10, http10, http10, http10), body)


def test_leaving_a_stream_early_closes_its_connection(run: Any) -> None:
    endless = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nhi\r\n"

    def handler_for(box: list[RawUpstream]) -> Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await box[0].read_request(reader)
            writer.write(endless)
            await writer.drain()
            box[0].bodies.append(await reader.read())  # b"" once gw closes its side

        return handler

    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        async with transport.post_streaming(
            upstream.url(), headers={}, body=b"{}", timeouts=TIMEOUTS, provider="fake"
        ) as reply:
            async for chunk in reply.chunks():
                assert chunk == b"hi"
                break
        await await_until(lambda: len(upstream.bodies) == 2, "the upstream to see gw close")
        assert upstream.bodies[1] == b""

    scenario(run, handler_for, body)


def test_reading_pauses_while_the_reader_is_behind(run: Any) -> None:
    size = 8 * 1024 * 1024

    def handler_for(box: list[RawUpstream]) -> Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await box[0].read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % size)
            writer.write(b"z" * size)
            await writer.drain()
            await reader.read()

        return handler

    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        async with transport.post_streaming(
            upstream.url(), headers={}, body=b"{}", timeouts=TIMEOUTS, provider="fake"
        ) as reply:
            chunks = reply.chunks()
            received = len(await anext(chunks))
            # The upstream keeps sending; gw must stop reading, with a bounded buffer.
            await await_until(lambda: reply._paused, "gw to pause reading")  # type: ignore[attr-defined]
            assert reply._buffered < 4 * PAUSE_ABOVE  # type: ignore[attr-defined]
            async for chunk in chunks:
                received += len(chunk)
        assert received == size

    scenario(run, handler_for, body)


def test_an_answer_nobody_asked_for_does_not_bleed_into_the_reply(run: Any) -> None:
    evil = b"HTTP/1.1 500 Oops\r\ncontent-type: text/html\r\ncontent-length: 5\r\n\r\nEVIL!"

    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        answer = await post(transport, upstream.url())
        assert (answer.status, answer.body) == (200, b'{"ok":true}')
        assert answer.headers["content-type"] == "application/json"

    scenario(run, lambda box: answering(box, OK_JSON + evil), body)


def test_a_connection_whose_reading_paused_is_pooled_reading_again(run: Any) -> None:
    """The whole (large) answer arrived while its caller was cancelled before reading it:
    the connection goes back to the pool and must still hear the next answer."""
    packed = gzip.compress(b"x" * (4 * PAUSE_ABOVE))
    big = b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: %d\r\n\r\n%s" % (
        len(packed),
        packed,
    )

    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        pool = transport._pool
        opened: list[H1Connection] = []
        slot = pool._slot

        async def spy(origin: Any) -> H1Connection:
            opened.append(await slot(origin))
            return opened[-1]

        pool._slot = spy  # type: ignore[method-assign]
        first = asyncio.create_task(post(transport, upstream.url()))
        # Loop turn by turn (the caller must not get one to read in) until the whole
        # answer is in, unread; bounded.
        for _ in range(100_000):
            if opened and opened[0].complete:
                break
            await asyncio.sleep(0)
        assert opened[0].complete
        first.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await first
        async with asyncio.timeout(10):  # a stream has no read deadline: bound the wait here
            assert b"".join(await stream(transport, upstream.url())) == b'{"ok":true}'
        assert len(opened) == 1  # the same connection served both

    scenario(run, lambda box: answering(box, big, OK_JSON), body)


def test_a_waiter_woken_then_cancelled_passes_the_free_slot_on(run: Any) -> None:
    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        pool = transport._pool
        origin = ("http", "127.0.0.1", upstream.port, None)
        held = await pool.acquire(origin, 5.0, "fake")
        held.send([b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n"], "fake", 5.0)
        await held.head()
        await held.read_body(ReplyBudget(1024))
        second = asyncio.create_task(pool.acquire(origin, 5.0, "fake"))
        third = asyncio.create_task(pool.acquire(origin, 5.0, "fake"))
        await await_until(lambda: len(pool._waiters) == 2, "both to wait at the cap")
        pool.release(held)  # pooled: wakes the second ...
        second.cancel()  # ... which hangs up before it runs
        connection = await asyncio.wait_for(third, 4.0)  # not the 5 s connect deadline
        assert connection is held

    scenario(run, lambda box: answering(box, OK_JSON), body, pool=ConnectionPool(max_connections=1))


@pytest.mark.parametrize(
    ("encoding", "packed", "expected"),
    [
        ("gzip", gzip.compress(b"part1-") + gzip.compress(b"part2"), b"part1-part2"),
        ("gzip", gzip.compress(b'{"hello":"' + b"w" * 200 + b'"}')[:-12], None),  # cut short
        ("deflate", zlib.compress(b"x" * 100)[:-6], None),  # cut short
    ],
    # Named, not by their bytes: a gzip header holds the time, and test workers must all
    # collect the same ids.
    ids=["gzip-members", "gzip-cut", "deflate-cut"],
)
def test_gzip_members_and_cut_compressed_bodies(
    run: Any, encoding: str, packed: bytes, expected: bytes | None
) -> None:
    reply = b"HTTP/1.1 200 OK\r\ncontent-encoding: %s\r\ncontent-length: %d\r\n\r\n%s" % (
        encoding.encode(),
        len(packed),
        packed,
    )

    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        if expected is None:
            with pytest.raises(UpstreamError, match="cut short or undecodable"):
                await post(transport, upstream.url())
        else:
            assert (await post(transport, upstream.url())).body == expected

    scenario(run, lambda box: answering(box, reply), body)


def test_a_deflate_body_whose_first_piece_is_one_byte(run: Any) -> None:
    packed = zlib.compress(b"hello, gateway")
    chunked = b"1\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (packed[:1], len(packed) - 1, packed[1:])
    head = b"HTTP/1.1 200 OK\r\ncontent-encoding: deflate\r\ntransfer-encoding: chunked\r\n\r\n"

    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        assert (await post(transport, upstream.url())).body == b"hello, gateway"

    scenario(run, lambda box: answering(box, head + chunked), body)


def test_a_body_that_inflates_past_the_cap_is_refused(run: Any) -> None:
    packed = gzip.compress(b"\0" * (MAX_DECODED_BYTES + 1), compresslevel=1)
    reply = b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: %d\r\n\r\n%s" % (
        len(packed),
        packed,
    )

    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        with pytest.raises(UpstreamError, match="cut short or undecodable"):
            await stream(transport, upstream.url())

    scenario(run, lambda box: answering(box, reply), body)


def test_idle_connections_close_after_the_keep_alive_period(run: Any) -> None:
    def handler_for(box: list[RawUpstream]) -> Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await box[0].read_request(reader)
            writer.write(OK_JSON)
            await writer.drain()
            box[0].bodies.append(await reader.read())  # returns once gw closes the connection

        return handler

    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        await post(transport, upstream.url())
        # The sweep runs 0.2 s after the release.
        await await_until(lambda: len(upstream.bodies) == 2, "gw to close the idle connection")
        assert upstream.bodies[1] == b""  # closed by gw with no traffic after it

    scenario(run, handler_for, body, pool=ConnectionPool(keepalive_seconds=0.2))


def test_a_pooled_connection_the_upstream_closed_is_not_used_again(run: Any) -> None:
    served: list[int] = []

    def handler_for(box: list[RawUpstream]) -> Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await box[0].read_request(reader)
            writer.write(OK_JSON)  # keep-alive by HTTP/1.1's default, and then closed anyway
            await writer.drain()
            served.append(1)

        return handler

    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        assert (await post(transport, upstream.url())).status == 200
        pool = transport._pool
        await await_until(
            lambda: served and not any(pool._idle.values()), "gw to hear the close and drop it"
        )
        assert (await post(transport, upstream.url())).status == 200
        assert upstream.connections == 2

    scenario(run, handler_for, body)


def _pool_of(transport: BuiltinTransport) -> ConnectionPool:
    return transport._pool


BIG_BODY = b"{" + b" " * (16 * 1024 * 1024) + b"}"


def test_an_early_answer_with_the_request_unsent_frees_its_connection(run: Any) -> None:
    """The upstream answers before reading the body, then neither reads nor closes: gw must
    not keep that connection (nor its unsent bytes) in the pool or in the count."""

    def handler_for(box: list[RawUpstream]) -> Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            box[0].heads.append(await reader.readuntil(b"\r\n\r\n"))
            writer.write(b"HTTP/1.1 413 Too Large\r\ncontent-length: 0\r\n\r\n")
            await writer.drain()
            await asyncio.sleep(30)  # neither reads nor closes (cancelled at the end)

        return handler

    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        answer = await post(transport, upstream.url(), body=BIG_BODY)
        assert answer.status == 413
        pool = _pool_of(transport)
        await await_until(lambda: pool._open == 0, "the connection closed and uncounted")
        assert not any(pool._idle.values())

    scenario(run, handler_for, body)


def test_the_read_deadline_counts_the_upstream_taking_the_request(run: Any) -> None:
    def handler_for(box: list[RawUpstream]) -> Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            head = await reader.readuntil(b"\r\n\r\n")
            box[0].heads.append(head)
            left = len(BIG_BODY)
            while left:  # slowly: far longer than the read deadline in all, never a long gap
                left -= len(await reader.read(min(left, 64 * 1024)))
                await asyncio.sleep(0.005)
            writer.write(OK_JSON)
            await writer.drain()
            await reader.read()

        return handler

    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        timeouts = AttemptTimeouts(connect=5, read=0.5)
        answer = await post(transport, upstream.url(), body=BIG_BODY, timeouts=timeouts)
        assert answer.body == b'{"ok":true}'

    scenario(run, handler_for, body)


@pytest.mark.parametrize(
    ("head", "message"),
    [
        (b"transfer-encoding: gzip, chunked", "the upstream broke the HTTP protocol"),
        (b"content-encoding: br\r\ncontent-length: 2", "an encoding gw did not ask for: br"),
    ],
)
def test_codings_gw_did_not_ask_for_are_refused(run: Any, head: bytes, message: str) -> None:
    reply = b"HTTP/1.1 200 OK\r\n%s\r\n\r\nxx" % head

    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        with pytest.raises(UpstreamError, match=message):
            await post(transport, upstream.url())

    scenario(run, lambda box: answering(box, reply), body)


def _done_then_last_chunk(delay: float | None) -> Callable[[list[RawUpstream]], Handler]:
    """A stream whose [DONE] comes first and whose last chunk ``delay`` s later (None: never)."""
    frame = b"data: [DONE]\n\n"

    def handler_for(box: list[RawUpstream]) -> Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while await box[0].read_request(reader):
                writer.write(
                    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
                    b"%x\r\n%s\r\n" % (len(frame), frame)
                )
                await writer.drain()
                if delay is None:
                    await reader.read()
                    return
                await asyncio.sleep(delay)
                writer.write(b"0\r\n\r\n")
                await writer.drain()

        return handler

    return handler_for


async def _read_to_done(transport: BuiltinTransport, url: str) -> None:
    async with transport.post_streaming(
        url, headers={}, body=b"{}", timeouts=TIMEOUTS, provider="fake"
    ) as reply:
        async for chunk in reply.chunks():
            if b"[DONE]" in chunk:
                break  # as the adapters do: the stream's logical end


def test_a_stream_left_at_done_is_reused_once_its_last_chunk_comes(run: Any) -> None:
    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        pool = _pool_of(transport)
        for _ in range(3):
            await _read_to_done(transport, upstream.url())
            await await_until(lambda: any(pool._idle.values()), "the connection pooled")
        assert upstream.connections == 1

    scenario(run, _done_then_last_chunk(0.05), body)


def test_a_stream_left_at_done_whose_framing_never_ends_is_closed(run: Any) -> None:
    async def body(upstream: RawUpstream, transport: BuiltinTransport) -> None:
        pool = _pool_of(transport)
        await _read_to_done(transport, upstream.url())
        await await_until(
            lambda: pool._open == 0, "the connection closed"
        )  # after FINISH_WITHIN (1 s)
        assert not any(pool._idle.values())

    scenario(run, _done_then_last_chunk(None), body)

"""An upstream stream's events pushed from gw's own connection (``EventStream.relay`` over
``H1Connection.relay``), against a raw loopback server writing exact bytes: the same
events as reading one by one, nothing lost or reordered when the reader pauses, failures
raised after the events before them, a cancelled relay left silent, and the connection
pooled only after a whole answer. Each test runs on uvloop and on asyncio's own loop."""

from __future__ import annotations

import asyncio
import gc
import gzip
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import msgspec
import pytest
import uvloop

from gw.adapters.exchange import EventStream, stream_events
from gw.codecs.openai_chat import UpstreamStreamDecoder, error_from_upstream
from gw.config.schema import ProviderConfig
from gw.errors import UpstreamError
from gw.ir import ChatRequest, StreamEvent, TextDelta, TextPart, UserMessage
from gw.ports import AttemptTimeouts, UpstreamCall
from gw.upstream_http.h1_connection import H1Connection
from gw.upstream_http.h1_transport import BuiltinTransport
from gw.upstream_http.http_transport import HttpTransport
from gw.upstream_http.httpx_transport import HttpxTransport

CALL = UpstreamCall(
    request_id="req-1",
    provider=ProviderConfig(name="fake", kind="openai_compatible", base_url="http://x/v1"),
    request=ChatRequest(model="m", messages=(UserMessage(content=(TextPart(text="hi"),)),)),
    account=None,
    timeouts=AttemptTimeouts(connect=5.0, read=30.0),
)
HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
WORDS = [f"w{n} " for n in range(12)]
T = TypeVar("T")


@pytest.fixture(params=["uvloop", "asyncio"])
def run(request: pytest.FixtureRequest) -> Callable[[Coroutine[Any, Any, Any]], Any]:
    return uvloop.run if request.param == "uvloop" else asyncio.run


def sse(text: str | None = None, *, finish: str | None = None) -> bytes:
    delta = {} if text is None else {"content": text}
    chunk = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + msgspec.json.encode(chunk) + b"\n\n"


def chunked(*pieces: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces)


WHOLE = [sse(word) for word in WORDS] + [sse(finish="stop"), b"data: [DONE]\n\n"]


class Upstream:
    """Each request gets ``answer(writer)``; counts connections."""

    def __init__(self, answer: Callable[[asyncio.StreamWriter], Awaitable[None]]) -> None:
        self.answer = answer
        self.connections = 0
        self.closed = 0  # connections the client closed
        self.a_close = asyncio.Event()

    async def __aenter__(self) -> Upstream:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1/chat"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                await reader.readexactly(length)
                await self.answer(writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            self.closed += 1
            self.a_close.set()
        finally:
            writer.close()


def paced(*pieces: bytes, then: str = "end") -> Callable[[asyncio.StreamWriter], Awaitable[None]]:
    """Each piece written on its own, a loop turn or so apart (arriving while relayed);
    ``then`` "end" ends the body, "abort" cuts the connection, "hold" leaves it open."""

    async def answer(writer: asyncio.StreamWriter) -> None:
        writer.write(HEAD + b"\r\n")
        for number, piece in enumerate(pieces, 1):
            last = number == len(pieces)
            # The end of the framing comes with the last piece, as most servers send it.
            writer.write(chunked(piece) + (b"0\r\n\r\n" if last and then == "end" else b""))
            await writer.drain()
            await asyncio.sleep(0.002)
        if then == "abort":
            writer.transport.abort()

    return answer


def open_stream(transport: HttpTransport, url: str) -> EventStream:
    return stream_events(
        transport,
        CALL,
        url,
        headers={"content-type": "application/json"},
        body=b"{}",
        read_error=error_from_upstream,
        decoder=UpstreamStreamDecoder(),
    )


async def relayed(events: EventStream, *, pause_every: int = 0) -> list[StreamEvent]:
    """All events through ``relay``; with ``pause_every``, it takes no more after every
    n-th batch, then calls again (as the server does for a client not reading)."""
    got: list[StreamEvent] = []
    batches = 0

    def take(batch: list[StreamEvent]) -> bool:
        nonlocal batches
        got.extend(batch)
        batches += 1
        return not pause_every or batches % pause_every != 0

    while not await events.relay(take):  # noqa: ASYNC110 - a slow client, not a wait for state
        await asyncio.sleep(0.01)  # meanwhile the upstream's bytes wait in the connection

    return got


def keeping(got: list[StreamEvent]) -> Callable[[list[StreamEvent]], bool]:
    def take(batch: list[StreamEvent]) -> bool:
        got.extend(batch)
        return True

    return take


def texts(events: list[StreamEvent]) -> list[str]:
    return [event.text for event in events if isinstance(event, TextDelta)]


async def first_two(events: EventStream) -> list[StreamEvent]:
    """The engine's commit: read one by one until the first text."""
    return [await anext(events), await anext(events)]


Opener = Callable[[], EventStream]


async def against(
    answer: Callable[[asyncio.StreamWriter], Awaitable[None]],
    read: Callable[[Opener], Awaitable[T]],
    transport: HttpTransport | None = None,
) -> tuple[T, int]:
    """What ``read`` returns, given streams opened to an upstream giving ``answer``, and
    how many connections that upstream accepted."""
    async with Upstream(answer) as upstream:
        chosen = transport or BuiltinTransport()
        try:
            return await read(lambda: open_stream(chosen, upstream.url)), upstream.connections
        finally:
            await chosen.close()


async def committed_then_relayed(opener: Opener, pause_every: int = 0) -> list[StreamEvent]:
    stream = opener()
    return await first_two(stream) + await relayed(stream, pause_every=pause_every)


def test_relayed_events_are_those_read_one_by_one_and_the_connection_is_pooled(
    run: Callable[[Coroutine[Any, Any, Any]], Any],
) -> None:
    async def both(opener: Opener) -> tuple[list[StreamEvent], list[StreamEvent]]:
        return [event async for event in opener()], await committed_then_relayed(opener)

    (one_by_one, pushed), connections = run(against(paced(*WHOLE), both))
    assert pushed == one_by_one
    assert texts(pushed) == WORDS
    assert connections == 1


def test_a_reader_that_pauses_loses_nothing_and_gets_it_in_order(
    run: Callable[[Coroutine[Any, Any, Any]], Any],
) -> None:
    async def burst(writer: asyncio.StreamWriter) -> None:  # all at once: bytes wait buffered
        writer.write(HEAD + b"\r\n" + chunked(*WHOLE) + b"0\r\n\r\n")

    for answer in (burst, paced(*WHOLE)):
        events, _ = run(against(answer, lambda opener: committed_then_relayed(opener, 1)))
        assert texts(events) == WORDS


def test_a_malformed_chunk_raises_after_the_events_before_it(
    run: Callable[[Coroutine[Any, Any, Any]], Any],
) -> None:
    got: list[StreamEvent] = []

    async def read(opener: Opener) -> None:
        stream = opener()
        got.extend(await first_two(stream))
        with pytest.raises(UpstreamError, match="not JSON"):
            await stream.relay(keeping(got))
        await first_two(opener())

    _, connections = run(against(paced(*WHOLE[:4], b"data: {not json\n\n", *WHOLE[4:]), read))
    assert texts(got) == WORDS[:4]
    assert connections == 2  # the failed stream's connection was not pooled


def test_a_body_cut_short_raises(run: Callable[[Coroutine[Any, Any, Any]], Any]) -> None:
    with pytest.raises(UpstreamError, match=r"cut short|ended early"):
        run(against(paced(*WHOLE[:5], then="abort"), committed_then_relayed))


def test_a_cancelled_relay_hands_on_nothing_more_and_its_connection_is_not_pooled(
    run: Callable[[Coroutine[Any, Any, Any]], Any],
) -> None:
    async def read(opener: Opener) -> None:
        stream = opener()
        await first_two(stream)
        got: list[StreamEvent] = []
        three = asyncio.Event()

        def take(batch: list[StreamEvent]) -> bool:
            got.extend(batch)
            if len(got) >= 3:
                three.set()
            return True

        task = asyncio.ensure_future(stream.relay(take))
        await three.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        seen = len(got)
        await asyncio.sleep(0.05)  # the rest of the answer keeps arriving meanwhile
        assert len(got) == seen
        await stream.aclose()
        await first_two(opener())

    _, connections = run(against(paced(*WHOLE), read))
    assert connections == 2


def test_a_gzip_body_is_relayed_whole(run: Callable[[Coroutine[Any, Any, Any]], Any]) -> None:
    async def gzipped(writer: asyncio.StreamWriter) -> None:
        body = gzip.compress(b"".join(WHOLE))
        head = HEAD.replace(
            b"text/event-stream\r\n", b"text/event-stream\r\ncontent-encoding: gzip\r\n"
        )
        writer.write(head + b"\r\n")
        for start in range(0, len(body), 40):  # small pieces: most decode to part of an event
            writer.write(chunked(body[start : start + 40]))
            await writer.drain()
            await asyncio.sleep(0.001)
        writer.write(b"0\r\n\r\n")

    events, _ = run(against(gzipped, committed_then_relayed))
    assert texts(events) == WORDS


def test_a_transport_that_cannot_push_is_read_by_the_relay_instead(
    run: Callable[[Coroutine[Any, Any, Any]], Any],
) -> None:
    async def read(opener: Opener) -> list[StreamEvent]:
        return await committed_then_relayed(opener, pause_every=3)

    async def main() -> tuple[list[StreamEvent], int]:
        return await against(paced(*WHOLE), read, HttpxTransport())

    events, _ = run(main())
    assert texts(events) == WORDS


def test_a_stream_dropped_unfinished_closes_its_connection(
    run: Callable[[Coroutine[Any, Any, Any]], Any],
) -> None:
    # A response that never ran leaves its stream to the garbage collector.
    async def main() -> int:
        async with Upstream(paced(*WHOLE[:4], then="hold")) as upstream:
            transport = BuiltinTransport()
            try:
                await first_two(open_stream(transport, upstream.url))  # then dropped
                gc.collect()
                async with asyncio.timeout(30):
                    await upstream.a_close.wait()
                return upstream.closed
            finally:
                await transport.close()

    assert run(main()) == 1


class FakeTransport:
    """Enough of an asyncio transport to drive an H1Connection by hand."""

    def __init__(self) -> None:
        self.written: list[bytes] = []

    def writelines(self, parts: list[bytes]) -> None:
        self.written.extend(parts)

    def is_closing(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return 0

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def appending(into: list[bytes]) -> Callable[[bytes], bool]:
    def sink(data: bytes) -> bool:
        into.append(data)
        return True

    return sink


def test_bytes_arriving_after_the_reader_stopped_waiting_wait_for_the_next_relay(
    run: Callable[[Coroutine[Any, Any, Any]], Any],
) -> None:
    # The task's cancel lands on the relay's future at once, while the sink would stay
    # attached until the task runs again: bytes in between must not reach the client.
    async def main() -> tuple[list[bytes], list[bytes]]:
        connection = H1Connection(asyncio.get_running_loop(), ("http", "x", 80), lambda c: None)
        connection.connection_made(FakeTransport())  # type: ignore[arg-type]
        connection.send([b"POST / HTTP/1.1\r\n\r\n"], "fake", None)
        connection.data_received(HEAD + b"\r\n")
        first: list[bytes] = []
        connection.relay(appending(first)).cancel()
        connection.data_received(chunked(WHOLE[0]))
        later: list[bytes] = []
        connection.relay(appending(later))
        return first, later

    first, later = run(main())
    assert first == []
    assert later == [WHOLE[0]]


def test_a_failing_reader_raises_its_own_error_not_the_upstreams(
    run: Callable[[Coroutine[Any, Any, Any]], Any],
) -> None:
    async def read(opener: Opener) -> None:
        stream = opener()
        await first_two(stream)

        def take(batch: list[StreamEvent]) -> bool:
            raise RuntimeError("the client's handle is gone")

        with pytest.raises(RuntimeError, match="handle is gone"):
            await stream.relay(take)
        await first_two(opener())

    _, connections = run(against(paced(*WHOLE), read))
    assert connections == 2  # the failed stream's connection was not pooled

"""The HTTP exchange every JSON-over-HTTP adapter makes: post, check the status, decode.

An adapter supplies what is its own (URL, headers, body, how its errors and its stream
read); this module moves the bytes through the shared transport, so a new provider is its
wire format and nothing else.
"""

from __future__ import annotations

import asyncio
import functools
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from gw.errors import GatewayError
from gw.ir import StreamEvent
from gw.ports import EmbeddingCall, UpstreamCall
from gw.upstream_http.http_transport import HttpTransport, StreamingReply

ErrorReader = Callable[[int, bytes, Mapping[str, str]], GatewayError]


class StreamDecoder(Protocol):
    done: bool

    def feed(self, data: bytes) -> list[StreamEvent]: ...

    def close(self) -> list[StreamEvent]: ...


async def post_for_body(
    transport: HttpTransport,
    call: UpstreamCall | EmbeddingCall,
    url: str,
    *,
    headers: Mapping[str, str],
    body: bytes,
    read_error: ErrorReader,
) -> bytes:
    """The body of a 200 answer; any other status raises ``read_error``'s gw error."""
    provider = call.provider
    reply = await transport.post(
        url,
        headers=headers,
        body=body,
        timeouts=call.timeouts,
        provider=provider.name,
        tls=provider.tls,
    )
    if reply.status != 200:
        raise read_error(reply.status, reply.body, reply.headers)
    return reply.body


def stream_events(
    transport: HttpTransport,
    call: UpstreamCall,
    url: str,
    *,
    headers: Mapping[str, str],
    body: bytes,
    read_error: ErrorReader,
    decoder: StreamDecoder,
) -> EventStream:
    """Events of a 200 stream until the decoder says it is done or the body ends."""
    provider = call.provider
    exchange = transport.post_streaming(
        url,
        headers=headers,
        body=body,
        timeouts=call.timeouts,
        provider=provider.name,
        tls=provider.tls,
    )
    return EventStream(exchange, read_error, decoder)


class EventStream:
    """The events of one upstream stream, decoded from a 200 answer's body.

    Read one at a time (``async for``: the engine's wait for the first token), or pushed
    (``relay``): on gw's own transport each piece of the body is then decoded and handed
    on from the connection's read callback, with no task step per chunk. A failure
    raises its ``GatewayError``. ``aclose`` ends a stream early; its connection is then
    closed, not pooled.
    """

    def __init__(
        self,
        exchange: AbstractAsyncContextManager[StreamingReply],
        read_error: ErrorReader,
        decoder: StreamDecoder,
    ) -> None:
        self._exchange = exchange
        self._read_error = read_error
        self._decoder = decoder
        self._reply: StreamingReply | None = None  # once the 200 answer's head is in
        self._chunks: AsyncIterator[bytes] | None = None
        self._ready: deque[StreamEvent] = deque()  # decoded, not yet taken
        self._open = False  # the exchange is entered and not yet left
        self._ended = False  # no more events will be decoded (those ready may remain)
        self._failure: Exception | None = None  # met in the read callback, raised after
        self._loop: asyncio.AbstractEventLoop | None = None  # once the exchange is open

    def __del__(self) -> None:
        # Dropped with its exchange open (a response that never ran): leave it as the
        # event loop closes an abandoned async generator, so no connection is held open.
        loop = self._loop
        if self._open and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(loop.create_task, self._leave(GeneratorExit()))

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> StreamEvent:
        while not self._ready:
            if self._ended:
                raise StopAsyncIteration
            await self._read()
        return self._ready.popleft()

    async def relay(self, on_events: Callable[[list[StreamEvent]], bool]) -> bool:
        """Hand every batch of events to ``on_events`` as it is decoded. True once the
        stream has ended and all of it was handed on; False once ``on_events`` returned
        False (it takes no more for now: call again to go on). On gw's own transport
        ``on_events`` runs in the connection's read callback; what it raises is raised
        here."""
        while True:
            if self._ready and not on_events(self._take_ready()):
                return False
            if self._ended:
                return True
            reply = self._reply
            if reply is not None:
                relayed = reply.relay(functools.partial(self._push, on_events))
                if relayed is not None:
                    return await self._pushed(reply, relayed, on_events)
            await self._read()  # a transport that cannot push, or the head not read yet

    async def aclose(self) -> None:
        self._ready.clear()
        await self._leave(GeneratorExit())

    async def _read(self) -> None:
        """One piece of the body, decoded into ``_ready``; the exchange is left at the end."""
        try:
            chunks = self._chunks if self._chunks is not None else await self._start()
            data = await anext(chunks, None)
            if data is None:
                self._ready.extend(self._decoder.close())  # raises when it ended early
                await self._leave(None)
            else:
                self._ready.extend(self._decoder.feed(data))
                if self._decoder.done:
                    await self._leave(None)
        except BaseException as error:
            await self._leave(error)
            raise

    async def _start(self) -> AsyncIterator[bytes]:
        reply = await self._exchange.__aenter__()
        self._open = True
        self._loop = asyncio.get_running_loop()
        if reply.status != 200:
            raise self._read_error(reply.status, await reply.read_error_body(), reply.headers)
        self._reply = reply
        self._chunks = reply.chunks()
        return self._chunks

    async def _pushed(
        self,
        reply: StreamingReply,
        relayed: asyncio.Future[bool],
        on_events: Callable[[list[StreamEvent]], bool],
    ) -> bool:
        """Wait while ``_push`` hands the body on; settle the end the task's way."""
        try:
            try:
                body_ended = await relayed
            finally:
                reply.stop_relay()
            self._end_push(body_ended)
            if self._ended:
                await self._leave(None)
        except BaseException as error:
            await self._leave(error)
            raise
        if self._ready and not on_events(self._take_ready()):
            return False
        return self._ended

    def _end_push(self, body_ended: bool) -> None:
        """Raise what the sink met; at the end of the body, close the decoder."""
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure
        if body_ended and not self._ended:
            self._ready.extend(self._decoder.close())  # raises when it ended early
            self._ended = True

    def _push(self, on_events: Callable[[list[StreamEvent]], bool], data: bytes) -> bool:
        """The relay's sink. It runs in the connection's read callback, which would take
        any exception for the upstream's fault: what it meets is raised in the task."""
        try:
            events = self._decoder.feed(data)
            if self._decoder.done:
                self._ended = True
            taking = not events or on_events(events)
        except Exception as error:  # noqa: BLE001 - raised in the task by _pushed
            self._failure = error
            return False
        return taking and not self._ended

    def _take_ready(self) -> list[StreamEvent]:
        batch = list(self._ready)
        self._ready.clear()
        return batch

    async def _leave(self, error: BaseException | None) -> None:
        """Leave the exchange: pooled after a whole answer, closed after ``error``."""
        self._ended = True
        if self._open:
            self._open = False
            kind = None if error is None else type(error)
            trace = None if error is None else error.__traceback__
            await self._exchange.__aexit__(kind, error, trace)

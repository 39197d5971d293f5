"""The HTTP exchange every JSON-over-HTTP adapter makes: post, check the status, decode.

An adapter supplies what is its own (URL, headers, body, how its errors and its stream
read); this module moves the bytes through the shared transport, so a new provider is its
wire format and nothing else.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import Protocol

from gw.adapters.http_transport import HttpTransport
from gw.errors import GatewayError
from gw.ir import StreamEvent
from gw.ports import EmbeddingCall, UpstreamCall

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
    reply = await transport.post(
        url, headers=headers, body=body, timeouts=call.timeouts, provider=call.provider.name
    )
    if reply.status != 200:
        raise read_error(reply.status, reply.body, reply.headers)
    return reply.body


async def stream_events(
    transport: HttpTransport,
    call: UpstreamCall,
    url: str,
    *,
    headers: Mapping[str, str],
    body: bytes,
    read_error: ErrorReader,
    decoder: StreamDecoder,
) -> AsyncIterator[StreamEvent]:
    """Events of a 200 stream until the decoder says it is done or the body ends."""
    async with transport.post_streaming(
        url, headers=headers, body=body, timeouts=call.timeouts, provider=call.provider.name
    ) as reply:
        if reply.status != 200:
            raise read_error(reply.status, await reply.read_error_body(), reply.headers)
        async for data in reply.chunks():
            for event in decoder.feed(data):
                yield event
            if decoder.done:
                return
        for event in decoder.close():  # raises when the stream ended early
            yield event

"""A streaming response of IR events, encoded as they come, in the request's own task.

Litestar's ``Stream`` runs every stream in an anyio task group (a second task and a
cancel scope) just to notice a client that hangs up. Here the response runs in the
request's own task, which the request's ``ClientWatch`` cancels on a disconnect: the
event source then sees ``CancelledError`` where it waits and closes the upstream request.

Under gw's own server the events are relayed (``relay``): each batch is encoded and
written to the client from the upstream connection's read callback (gw/server/
direct_body.py), with no task step per chunk; while the client takes no more, frames wait
and the task sends them, waiting for the client. Elsewhere the task reads the events one
by one and sends each. The closing frames go out together with the end of the body, in
one write; a failure after the first byte becomes one error event (invariant 3).

What of Litestar it relies on: ``SSEStream.to_asgi_response`` is called by Litestar (or
the fast path) with the route's headers by keyword, and returns a subclass of
``ASGIStreamingResponse`` (``litestar.response.streaming``) built with its keyword
arguments, whose ``__call__`` runs ``start_response`` then ``send_body(send, receive)``:
gw replaces ``send_body`` (where Litestar starts its task group) and wraps ``__call__``.
tests/unit/server/runtime/test_internals.py checks those signatures.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, Protocol

from litestar import Response
from litestar.response.base import ASGIResponse
from litestar.response.streaming import ASGIStreamingResponse
from litestar.types import Receive, Scope, Send

from gw.errors import GatewayError
from gw.ir import ErrorEvent, StreamEvent
from gw.server.runtime.direct_body import DirectBody, direct_body
from gw.server.runtime.disconnect import ClientWatch

Deliver = Callable[[list[StreamEvent]], bool]
Relay = Callable[[Deliver, Callable[[], Awaitable[None]]], Awaitable[None]]


class StreamEncoder(Protocol):
    """One client stream's wire format: each event's frames, then the closing frames."""

    def encode(self, event: StreamEvent) -> bytes: ...

    def done(self) -> bytes: ...


class _WatchedStreamingResponse(ASGIStreamingResponse):
    __slots__ = ("direct", "encoder", "events", "on_close", "relay", "watch")

    def __init__(
        self,
        events: AsyncGenerator[StreamEvent, None],
        encoder: StreamEncoder,
        watch: ClientWatch,
        on_close: Callable[[], Awaitable[None]],
        relay: Relay | None,
        **kwargs: Any,
    ) -> None:
        super().__init__(iterator=events, **kwargs)
        self.events = events
        self.encoder = encoder
        self.watch = watch
        self.on_close = on_close
        self.relay = relay
        self.direct: DirectBody | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The whole response, its start included, runs under the watch, and the cleanup
        # runs however it ends: a source that never started has no finally of its own.
        self.direct = direct_body(scope) if self.relay is not None else None
        try:
            await super().__call__(scope, receive, send)
        except asyncio.CancelledError:
            if not self.watch.absorb():
                raise  # cancelled for another reason (shutdown): not ours to swallow
        finally:
            self.watch.close()
            await self.events.aclose()  # a source left at a yield cleans up now
            await self.on_close()

    async def send_body(self, send: Send, receive: Receive) -> None:
        encoder = self.encoder
        waiting: list[bytes] = []  # relayed frames the client has not taken yet
        try:
            if self.relay is not None and self.direct is not None:
                await self._relay(self.relay, self.direct, send, waiting)
            else:
                async for event in self.events:
                    frame = encoder.encode(event)
                    if frame:
                        await send({"type": "http.response.body", "body": frame, "more_body": True})
            last = encoder.done()
        except GatewayError as error:
            last = encoder.encode(ErrorEvent(code=error.code, message=error.client_message))
        body = b"".join([*waiting, last]) if waiting else last
        await send({"type": "http.response.body", "body": body, "more_body": False})

    async def _relay(
        self, relay: Relay, direct: DirectBody, send: Send, waiting: list[bytes]
    ) -> None:
        encode = self.encoder.encode

        def deliver(events: list[StreamEvent]) -> bool:  # runs in the upstream's read callback
            frames = encode(events[0]) if len(events) == 1 else b"".join(map(encode, events))
            if not frames or (not waiting and direct.write(frames)):
                return True
            waiting.append(frames)  # the client is not taking more now: the task sends
            return False

        async def flush() -> None:
            body = b"".join(waiting)
            waiting.clear()
            await send({"type": "http.response.body", "body": body, "more_body": True})

        await relay(deliver, flush)


class SSEStream(Response[bytes]):
    """A ``text/event-stream`` response of ``events`` in ``encoder``'s format, under
    ``watch``; ``on_close`` runs once the response is over, however it ended. ``relay``
    pushes the same events (``StreamSession.relay``), used when gw's server runs it."""

    def __init__(
        self,
        events: AsyncGenerator[StreamEvent, None],
        encoder: StreamEncoder,
        *,
        watch: ClientWatch,
        on_close: Callable[[], Awaitable[None]],
        headers: dict[str, str],
        relay: Relay | None = None,
    ) -> None:
        super().__init__(b"", status_code=200, media_type="text/event-stream", headers=headers)
        self._events = events
        self._encoder = encoder
        self._watch = watch
        self._on_close = on_close
        self._relay = relay

    def to_asgi_response(  # Litestar passes every argument by keyword
        self,
        app: Any,
        request: Any,
        *,
        headers: dict[str, str] | None = None,
        **_: Any,
    ) -> ASGIResponse:
        # gw's routes set no cookies or background tasks, so only headers are merged.
        return _WatchedStreamingResponse(
            self._events,
            self._encoder,
            self._watch,
            self._on_close,
            self._relay,
            headers={**(headers or {}), **self.headers},
            media_type=self.media_type,
            status_code=self.status_code,
            content_length=0,
        )

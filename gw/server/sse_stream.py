"""A streaming response of IR events, encoded as they come, in the request's own task.

Litestar's ``Stream`` runs every stream in an anyio task group (a second task and a
cancel scope) just to notice a client that hangs up. Here the loop runs in the request's
own task, which the request's ``ClientWatch`` cancels on a disconnect: the event source
then sees ``CancelledError`` where it waits and closes the upstream request. Events are
encoded in the sending loop itself, not in a generator between it and the source: every
generator layer costs each chunk of each stream a resume. The closing frames go out
together with the end of the body, in one write; a failure after the first byte becomes
one error event (invariant 3).
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
from gw.server.disconnect import ClientWatch


class StreamEncoder(Protocol):
    """One client stream's wire format: each event's frames, then the closing frames."""

    def encode(self, event: StreamEvent) -> bytes: ...

    def done(self) -> bytes: ...


class _WatchedStreamingResponse(ASGIStreamingResponse):
    __slots__ = ("encoder", "events", "on_close", "watch")

    def __init__(
        self,
        events: AsyncGenerator[StreamEvent, None],
        encoder: StreamEncoder,
        watch: ClientWatch,
        on_close: Callable[[], Awaitable[None]],
        **kwargs: Any,
    ) -> None:
        super().__init__(iterator=events, **kwargs)
        self.events = events
        self.encoder = encoder
        self.watch = watch
        self.on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The whole response, its start included, runs under the watch, and the cleanup
        # runs however it ends: a source that never started has no finally of its own.
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
        try:
            async for event in self.events:
                frame = encoder.encode(event)
                if frame:
                    await send({"type": "http.response.body", "body": frame, "more_body": True})
            last = encoder.done()
        except GatewayError as error:
            last = encoder.encode(ErrorEvent(code=error.code, message=error.client_message))
        await send({"type": "http.response.body", "body": last, "more_body": False})


class SSEStream(Response[bytes]):
    """A ``text/event-stream`` response of ``events`` in ``encoder``'s format, under
    ``watch``; ``on_close`` runs once the response is over, however it ended."""

    def __init__(
        self,
        events: AsyncGenerator[StreamEvent, None],
        encoder: StreamEncoder,
        *,
        watch: ClientWatch,
        on_close: Callable[[], Awaitable[None]],
        headers: dict[str, str],
    ) -> None:
        super().__init__(b"", status_code=200, media_type="text/event-stream", headers=headers)
        self._events = events
        self._encoder = encoder
        self._watch = watch
        self._on_close = on_close

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
            headers={**(headers or {}), **self.headers},
            media_type=self.media_type,
            status_code=self.status_code,
            content_length=0,
        )

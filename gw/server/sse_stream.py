"""A streaming response that costs one task per request, not an anyio task group.

Litestar's ``Stream`` runs every stream in an anyio task group (a second task and a
cancel scope) just to notice a client that hangs up. Here the loop runs in the request's
own task, which the request's ``ClientWatch`` cancels on a disconnect: the generator
then sees ``CancelledError`` where it waits and closes the upstream request. A chunk
marked ``LastChunk`` goes out together with the end of the body, in one write.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from litestar import Response
from litestar.response.base import ASGIResponse
from litestar.response.streaming import ASGIStreamingResponse
from litestar.types import HTTPResponseBodyEvent, Receive, Scope, Send

from gw.server.disconnect import ClientWatch


class LastChunk(bytes):
    """The final bytes of a stream: sent with ``more_body=False``, and nothing after."""


class _WatchedStreamingResponse(ASGIStreamingResponse):
    __slots__ = ("generator", "on_close", "watch")

    def __init__(
        self,
        generator: AsyncGenerator[bytes, None],
        watch: ClientWatch,
        on_close: Callable[[], Awaitable[None]],
        **kwargs: Any,
    ) -> None:
        super().__init__(iterator=generator, **kwargs)
        self.generator = generator
        self.watch = watch
        self.on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The whole response, its start included, runs under the watch, and the cleanup
        # runs however it ends: a generator that never started has no finally of its own.
        try:
            await super().__call__(scope, receive, send)
        except asyncio.CancelledError:
            if not self.watch.absorb():
                raise  # cancelled for another reason (shutdown): not ours to swallow
        finally:
            self.watch.close()
            await self.generator.aclose()  # a stream left at a yield cleans up now
            await self.on_close()

    async def send_body(self, send: Send, receive: Receive) -> None:
        async for chunk in self.generator:
            last = isinstance(chunk, LastChunk)
            event: HTTPResponseBodyEvent = {
                "type": "http.response.body",
                "body": chunk,
                "more_body": not last,
            }
            await send(event)
            if last:
                return
        await send({"type": "http.response.body", "body": b"", "more_body": False})


class SSEStream(Response[bytes]):
    """A ``text/event-stream`` response of ``generator`` under ``watch``; ``on_close`` runs
    once the response is over, however it ended."""

    def __init__(
        self,
        generator: AsyncGenerator[bytes, None],
        *,
        watch: ClientWatch,
        on_close: Callable[[], Awaitable[None]],
        headers: dict[str, str],
    ) -> None:
        super().__init__(b"", status_code=200, media_type="text/event-stream", headers=headers)
        self._generator = generator
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
            self._generator,
            self._watch,
            self._on_close,
            headers={**(headers or {}), **self.headers},
            media_type=self.media_type,
            status_code=self.status_code,
            content_length=0,
        )

"""Notice a client that hangs up while gw is still working on its answer.

A Litestar handler and the streaming response it returns run in one task, the server's
task for the request. One watcher task per request cancels that task when the client
disconnects, whether gw is awaiting the upstream or streaming the answer: the upstream
request is then cancelled at once instead of running to its end for nobody.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from gw.server.services import HttpRequest

T = TypeVar("T")


class ClientGoneError(Exception):
    """The client disconnected; the work was cancelled (and traced as client_aborted)."""


class ClientWatch:
    """Watches one request from the moment its body is read until ``close()``."""

    def __init__(self, request: HttpRequest) -> None:
        task = asyncio.current_task()
        assert task is not None  # noqa: S101 - always called from a request's task
        self._task = task
        self.left = False
        self._watcher = asyncio.ensure_future(self._watch(request))

    async def _watch(self, request: HttpRequest) -> None:
        # With the body read, the server's receive() only returns on a disconnect.
        while (await request.receive())["type"] != "http.disconnect":
            pass
        self.left = True
        self._task.cancel()

    def absorb(self) -> bool:
        """After a ``CancelledError``: True, and the cancel undone, if the client left.

        False means the cancel came from elsewhere (shutdown) and must propagate.
        """
        if not self.left:
            return False
        self._task.uncancel()
        return True

    async def run(self, work: Coroutine[Any, Any, T]) -> T:
        """Await ``work``; raise ``ClientGoneError`` if the client leaves first."""
        try:
            return await work
        except asyncio.CancelledError:
            if not self.absorb():
                raise
            raise ClientGoneError from None

    def close(self) -> None:
        self._watcher.cancel()

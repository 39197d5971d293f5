"""Notice a client that hangs up while gw is still working on its answer.

A Litestar handler and the streaming response it returns run in one task, the server's
task for the request. ``ClientWatch`` cancels that task when the client disconnects,
whether gw is awaiting the upstream or streaming the answer: the upstream request is then
cancelled at once instead of running to its end for nobody.

gw's own server protocol (gw/server/runtime/protocol.py) says so directly, from the lost
connection, through a hook in the request's scope: no task per request. Under any other
ASGI server (test clients) a watcher task waits on ``receive()`` for ``http.disconnect``
instead, which costs a task per request (about 3% of a stream's CPU).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from litestar import Request

T = TypeVar("T")
CLIENT_GONE = "gw.client_gone"  # the ASGI scope extension: {"hook": ClientGoneHook}


class ClientGoneHook:
    """Where the server's protocol reaches the watch of one request. ``gone`` stays set
    for a watch made after the hang-up (the client left while gw read or queued it)."""

    __slots__ = ("callback", "gone")

    def __init__(self) -> None:
        self.callback: Callable[[], None] | None = None
        self.gone = False

    def client_left(self) -> None:
        """The server saw the connection go while the request's response was unfinished."""
        self.gone = True
        if self.callback is not None:
            self.callback()


def client_gone_hook(scope: Any) -> ClientGoneHook | None:
    """The request's hook, when the server that made ``scope`` is gw's own."""
    extension = (scope.get("extensions") or {}).get(CLIENT_GONE) or {}
    hook = extension.get("hook")
    return hook if isinstance(hook, ClientGoneHook) else None


class ClientGoneError(Exception):
    """The client disconnected; the work was cancelled (and traced as client_aborted)."""


class ClientWatch:
    """Watches one request from the moment its body is read until ``close()``."""

    def __init__(self, request: Request[Any, Any, Any]) -> None:
        task = asyncio.current_task()
        assert task is not None  # noqa: S101 - always called from a request's task
        self._task = task
        self.left = False
        self._watcher: asyncio.Future[None] | None = None
        self._hook = client_gone_hook(request.scope)
        if self._hook is not None:
            self._hook.callback = self._client_left
            if self._hook.gone:  # left before this watch began: the cancel lands in run()
                self._client_left()
        else:
            self._watcher = asyncio.ensure_future(self._watch(request))

    async def _watch(self, request: Request[Any, Any, Any]) -> None:
        # With the body read, the server's receive() only returns on a disconnect.
        while (await request.receive())["type"] != "http.disconnect":
            pass
        self._client_left()

    def _client_left(self) -> None:
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
        if self._hook is not None:
            self._hook.callback = None
        if self._watcher is not None:
            self._watcher.cancel()

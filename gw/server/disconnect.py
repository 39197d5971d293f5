"""Notice a client that hangs up while gw is still working on its answer.

Litestar cancels a streaming response by itself once the client is gone, but not a
handler that is still awaiting the upstream: without this, the upstream call would run
to its end for nobody.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from gw.server.services import HttpRequest

T = TypeVar("T")


class ClientGoneError(Exception):
    """The client disconnected; the work was cancelled (and traced as client_aborted)."""


async def _until_disconnected(request: HttpRequest) -> None:
    # With the body read, the server's receive() only returns on a disconnect.
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def unless_client_leaves(request: HttpRequest, work: Coroutine[Any, Any, T]) -> T:
    """Await ``work``; cancel it and raise ``ClientGoneError`` if the client leaves first.

    ``work`` runs in the handler's own task, which a watcher cancels on a disconnect:
    one extra task per request instead of two and a wait.
    """
    handler = asyncio.current_task()
    assert handler is not None  # noqa: S101 - always called from a request's task
    left = False

    async def watch() -> None:
        nonlocal left
        await _until_disconnected(request)
        left = True
        handler.cancel()

    watcher = asyncio.ensure_future(watch())
    try:
        return await work
    except asyncio.CancelledError:
        if not left:
            raise  # cancelled for another reason (shutdown): not ours to swallow
        handler.uncancel()
        raise ClientGoneError from None
    finally:
        watcher.cancel()

"""Notice a client that hangs up while gw is still working on its answer.

Litestar cancels a streaming response by itself once the client is gone, but not a
handler that is still awaiting the upstream: without this, the upstream call would run
to its end for nobody.
"""

from __future__ import annotations

import asyncio
import contextlib
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
    """Await ``work``; cancel it and raise ``ClientGoneError`` if the client leaves first."""
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(_until_disconnected(request))
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        watcher.cancel()
    if task.done():
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    raise ClientGoneError

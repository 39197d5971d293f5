"""One config across a fleet (``state.url`` names PostgreSQL): every gateway follows the
newest config revision any of them recorded.

The fleet's config is its newest revision in PostgreSQL. Whatever makes a new revision on
any gateway (an admin write, an edit its file watch saw, SIGHUP, a rollback, a start from
a file that differs) records it there, and the store announces it on ``gw_config``
(gw/store/postgres/revisions.py). ``FleetConfig`` listens on a connection of its own and
hands each newer revision to ``Reloader.adopt``: the same validate-and-swap as a reload
(one assignment; requests keep the snapshot they pinned), with the revision's text also
written to this gateway's config file so the file stays what it serves. The connection
is reopened with backoff when it ends, and each (re)connect re-reads the newest revision
first, so a notice sent meanwhile is not missed; a slow safety re-read covers a
connection that died without saying so.

So, for a gateway started from a file: the file it starts from is recorded like any
edit (as a single gateway does today), and becomes the fleet's config when it differs
from the newest revision; after that, the fleet's newest revision wins, and is written
back to the file.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Final

from gw.config import Snapshot
from gw.reload import Reloader
from gw.store.postgres.config_notices import ConfigNotices, NoticesLost
from gw.store.revisions import StoredRevision

log = logging.getLogger("gw.fleet")

FIRST_BACKOFF_S: Final = 0.1
MAX_BACKOFF_S: Final = 5.0
SAFETY_REREAD_S: Final = 30.0  # a connection may die silently (a partition): re-read anyway


class FleetConfig:
    """Follows the fleet's config revisions (see the module docstring); a background
    task, started and stopped with the server."""

    def __init__(
        self,
        url: str,
        reloader: Reloader,
        newest: Callable[[], Awaitable[StoredRevision | None]],
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._url = url
        self._reloader = reloader
        self._newest = newest
        self._sleep = sleep
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._follow())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def catch_up(self) -> Snapshot | None:
        """Apply the fleet's newest revision if it is newer than the running one."""
        stored = await self._newest()
        return await self._reloader.adopt(stored) if stored is not None else None

    async def _follow(self) -> None:
        backoff = FIRST_BACKOFF_S
        while True:
            try:
                notices = await ConfigNotices.listen(self._url)
            except NoticesLost as lost:
                log.warning("cannot listen for fleet config revisions (retrying): %s", lost)
                await self._sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_S)
                continue
            try:
                backoff = await self._listen(notices, backoff)
            finally:
                await notices.close()
            await self._sleep(backoff)

    async def _listen(self, notices: ConfigNotices, backoff: float) -> float:
        """Catch up, then once per notice, until the connection ends; the next backoff."""
        try:
            await self.catch_up()
            backoff = FIRST_BACKOFF_S  # connected and read: the next loss starts over
            while True:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(notices.wait(), timeout=SAFETY_REREAD_S)
                await self.catch_up()
        except NoticesLost as lost:
            log.warning("fleet config notices lost (reconnecting): %s", lost)
        except Exception as error:  # noqa: BLE001 -- the store failed a read: retry, never stop
            log.warning("reading the fleet's config revision failed (retrying): %s: %s",
                        type(error).__name__, error)  # fmt: skip
        return min(backoff * 2, MAX_BACKOFF_S)

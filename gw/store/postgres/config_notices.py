"""``LISTEN gw_config``: the fleet's new config revisions as they are recorded.

A dedicated connection (not one of the pool's: a listening connection must stay open and
idle). ``ConfigNotices.wait`` returns the next revision number announced, and raises
``NoticesLost`` when the connection ends, after which the caller reconnects and re-reads
the newest revision, so a notice sent while it was away is never missed.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final, Self

import asyncpg  # type: ignore[import-untyped]  # asyncpg 0.30 ships no type information

from gw.config.state_url import safe_url
from gw.store.postgres.errors import DRIVER_ERRORS
from gw.store.postgres.revisions import CONFIG_CHANNEL

CONNECT_TIMEOUT_S: Final = 10.0
LISTENER_NAME: Final = "gw config listener"  # pg_stat_activity.application_name
_ERRORS: Final[tuple[type[BaseException], ...]] = (OSError, TimeoutError, *DRIVER_ERRORS)


class NoticesLost(Exception):  # noqa: N818 -- a condition the caller recovers from
    """The listening connection could not be opened, or ended."""


class ConfigNotices:
    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self._queue: asyncio.Queue[int | None] = asyncio.Queue()  # None: connection ended
        conn.add_termination_listener(lambda _conn: self._queue.put_nowait(None))

    @classmethod
    async def listen(cls, url: str) -> Self:
        """Connect and LISTEN; ``NoticesLost`` when the server cannot be reached."""
        try:
            conn = await asyncpg.connect(
                url, timeout=CONNECT_TIMEOUT_S, server_settings={"application_name": LISTENER_NAME}
            )
        except _ERRORS as exc:
            raise NoticesLost(f"{safe_url(url)}: {type(exc).__name__}: {exc}") from None
        notices = cls(conn)
        try:
            await conn.add_listener(CONFIG_CHANNEL, notices._heard)
        except BaseException:
            conn.terminate()
            raise
        return notices

    def _heard(self, _conn: object, _pid: int, _channel: str, payload: str) -> None:
        if payload.isdigit():
            self._queue.put_nowait(int(payload))

    async def wait(self) -> int:
        """The next revision announced; ``NoticesLost`` once the connection ends."""
        revision = await self._queue.get()
        if revision is None:
            raise NoticesLost("the listening connection ended")
        return revision

    async def close(self) -> None:
        if not self._conn.is_closed():
            try:
                await asyncio.wait_for(self._conn.close(), timeout=2.0)
            except _ERRORS:
                self._conn.terminate()

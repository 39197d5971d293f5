"""A gateway's identity as a runner of background jobs, and whether another one lives.

At its start a gateway fails the jobs left ``in_progress`` by a gateway that ended
mid-run (gw/store/response_jobs.py ``interrupted``). With one database shared by a
fleet, "in progress" may also mean "running on another gateway right now". So each
store that claims a job first takes a random runner id and holds a session advisory lock
on it, on a connection of its own, for as long as it is open; a job records its
runner. A runner whose lock can be taken is gone (its process, or its connection, ended),
and only its jobs are failed. Runs of ``gw serve`` record theirs too, so a start takes
for "the last run" one that has ended, not one another gateway is serving (runs.py). The
lock is taken at the first claim or run: a CLI command opens no extra connection.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import Any, Final

import asyncpg  # type: ignore[import-untyped]  # asyncpg 0.30 ships no type information

RUNNER_CLASS: Final = 0x6777  # the first key of pg_advisory_lock(int, int): "gw"


class RunnerLock:
    def __init__(self, url: str) -> None:
        self._url = url
        self.id = secrets.randbits(31)
        self._conn: Any = None
        self._lock = asyncio.Lock()

    async def hold(self) -> int:
        """This runner's id, its lock held from now until ``release``."""
        async with self._lock:
            if self._conn is None:
                conn = await asyncpg.connect(self._url)
                try:
                    await conn.execute("SELECT pg_advisory_lock($1, $2)", RUNNER_CLASS, self.id)
                except BaseException:
                    await conn.close()
                    raise
                self._conn = conn
        return self.id

    async def release(self) -> None:
        async with self._lock:
            conn, self._conn = self._conn, None
            if conn is None:
                return
            try:
                # Said at once: the server ends a closed session's backend (and its locks)
                # a moment after the close, and a start meanwhile would see this one live.
                await conn.execute("SELECT pg_advisory_unlock($1, $2)", RUNNER_CLASS, self.id)
            finally:
                await conn.close()


async def gone(conn: Any, runners: list[int]) -> list[int]:
    """Those of ``runners`` no session holds (their gateway ended): a lock that can be
    taken is released again at once."""
    dead = []
    for runner in runners:
        if await conn.fetchval("SELECT pg_try_advisory_lock($1, $2)", RUNNER_CLASS, runner):
            await conn.execute("SELECT pg_advisory_unlock($1, $2)", RUNNER_CLASS, runner)
            dead.append(runner)
    return dead

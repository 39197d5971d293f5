"""Whether the state store can be written now: what ``/readyz`` answers, and a log line
each time that changes (a problem that persists is logged again at most once a minute).

Checked: the database is still the file gw opened, in a directory that exists
(gw/store/file_checks.py); its -shm can be written; the disk beside it has room; the
usage recorder's last write did not fail; the database answers a query. A monitor task
runs the checks every ``CHECK_INTERVAL_S`` too, so the log says so while no probe asks.
While unready gw keeps answering requests: usage rows wait in the recorder's queue and
are written once the store is back (the recorder retries; the store reopens a database
whose directory was recreated).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Final

from gw.store.file_checks import StoreProblem, StoreUnavailableError
from gw.store.port import StateStore
from gw.telemetry.throttled_log import ThrottledLog

logger = logging.getLogger("gw.store")

CHECK_INTERVAL_S: Final = 5.0


class StoreHealth:
    """``check`` raises ``StoreUnavailableError`` while the store cannot be written."""

    def __init__(
        self, store: StateStore, usage_failing: Callable[[], str | None] = lambda: None
    ) -> None:
        self._store = store
        self._usage_failing = usage_failing  # UsageRecorder.failing
        self._log = ThrottledLog(logger)
        self._problem: StoreProblem | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def problem(self) -> StoreProblem | None:
        """What the last check found (None: writable, or not checked yet)."""
        return self._problem

    async def check(self) -> None:
        with contextlib.suppress(StoreUnavailableError):  # reported below
            await self._store.writable()  # a recreated directory: its database reopened now
        problem = await self._store.local_problem()
        failing = self._usage_failing()
        if problem is None and failing is not None:
            problem = StoreProblem(
                "writes_failing",
                f"usage rows cannot be written to {self._store.location} ({failing}); they wait "
                "in memory and are retried",
            )
        self._note(problem)
        if problem is not None:
            raise StoreUnavailableError(problem)
        await self._store.ping()

    def _note(self, problem: StoreProblem | None) -> None:
        if problem is not None:
            self._log.warning(
                "the state store cannot be written (%s): %s; /readyz answers 503 until it can",
                problem.code,
                problem.message,
                kind=problem.code,
            )
        elif self._problem is not None:
            logger.info("the state store can be written again (%s is over)", self._problem.code)
            self._log = ThrottledLog(logger)  # a new problem is logged at once
        self._problem = problem

    async def start(self) -> None:
        self._task = asyncio.create_task(self._monitor(), name="gw-store-health")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task

    async def _monitor(self) -> None:
        while True:
            with contextlib.suppress(Exception):  # the outcome is logged by check itself
                await self.check()
            await asyncio.sleep(CHECK_INTERVAL_S)

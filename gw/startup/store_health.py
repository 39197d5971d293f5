"""Whether the state store can be written now: what ``/readyz`` answers, and a log line
each time that changes (a problem that persists is logged again at most once a minute).

Checked: the database is still the file gw opened, in a directory that exists
(gw/store/file_checks.py); its -shm can be written; the disk beside it has room; the
usage recorder's last write did not fail; the database answers a query. A monitor task
runs the checks every ``CHECK_INTERVAL_S`` too, so the log says so while no probe asks.
While unready gw keeps answering requests: usage rows wait in the recorder's queue and
are written once the store is back (the recorder retries; the store reopens a database
whose directory was recreated).

A shared store (``state.url``: one PostgreSQL for a fleet) is different. Its outage hits
every gateway at once, and a load balancer that saw every ``/readyz`` answer 503 would
take the whole fleet out although each gateway can still serve: keys it has seen are
cached (gw/server/key_cache.py), routing and limits need no database, and usage rows spool
(gw/telemetry/usage.py). So with ``spool_full`` given, an unreachable store is reported
(``/readyz``'s body, ``gw status``, the log) but the gateway stays ready; it goes unready
only once its usage spool is full, when serving on would lose rows. The query that checks
the store is bounded by ``PING_TIMEOUT_S``: a store that hangs must not hang the probe.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Final

from gw.store.file_checks import StoreProblem, StoreUnavailableError
from gw.store.port import StateStore
from gw.telemetry.throttled_log import ThrottledLog, error_kind

logger = logging.getLogger("gw.store")

CHECK_INTERVAL_S: Final = 5.0
PING_TIMEOUT_S: Final = 2.0


class StoreHealth:
    """``check`` raises ``StoreUnavailableError`` while this gateway should not be sent
    requests, and returns a problem it serves through (a shared store unreachable)."""

    def __init__(
        self,
        store: StateStore,
        usage_failing: Callable[[], str | None] = lambda: None,
        *,
        spool_full: Callable[[], bool] | None = None,
        ping_timeout: float = PING_TIMEOUT_S,
    ) -> None:
        self._store = store
        self._usage_failing = usage_failing  # UsageRecorder.failing
        self._spool_full = spool_full  # UsageRecorder.spool_full; given: a shared store
        self._ping_timeout = ping_timeout
        self._log = ThrottledLog(logger)
        self._problem: StoreProblem | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def problem(self) -> StoreProblem | None:
        """What the last check found (None: writable, or not checked yet)."""
        return self._problem

    async def check(self) -> StoreProblem | None:
        if self._spool_full is not None:
            return await self._check_shared(self._spool_full)
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
        self._note(problem, unready=problem is not None)
        if problem is not None:
            raise StoreUnavailableError(problem)
        await self._store.ping()
        return None

    async def _check_shared(self, spool_full: Callable[[], bool]) -> StoreProblem | None:
        problem = None
        try:
            async with asyncio.timeout(self._ping_timeout):
                await self._store.ping()
        except Exception as exc:  # noqa: BLE001 -- any engine's failure means "does not answer"; only its type is reported
            problem = StoreProblem(
                "store_unreachable",
                f"{self._store.location} does not answer ({error_kind(exc)}); requests are"
                " served, usage rows spool on this gateway and are written when it answers",
            )
        failing = self._usage_failing()
        if problem is None and failing is not None:
            problem = StoreProblem(
                "writes_failing",
                f"usage rows cannot be written to {self._store.location} ({failing}); they"
                " spool on this gateway and are retried",
            )
        full = spool_full()
        if full:
            problem = StoreProblem(
                "usage_spool_full",
                f"the usage spool is full: {self._store.location} has not taken usage rows"
                f" for a while ({failing or 'unreachable'}); new rows are lost until it does",
            )
        self._note(problem, unready=full)
        if full and problem is not None:
            raise StoreUnavailableError(problem)
        return problem

    def _note(self, problem: StoreProblem | None, *, unready: bool) -> None:
        if problem is not None:
            self._log.warning(
                "the state store cannot be written (%s): %s; %s",
                problem.code,
                problem.message,
                "/readyz answers 503 until it can" if unready else "this gateway stays ready",
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

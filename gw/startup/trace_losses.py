"""TraceLosses: the traces this run lost, kept in the state store, and the last run's.

Traces are lossy (invariant 8): the trace queue drops them under pressure, on a failed
write, or when a stop runs out of time, and a kill -9 takes whatever is still queued. Each
loss is counted, and the count outlives the process:

- this run's drops, split by kind (``routed``: the request has a usage row; ``unrouted``:
  it was refused before routing and has none), are written to its row in the ``runs``
  table (gw/store/runs.py) after each trace batch that follows a drop, and at a clean stop;
- a killed run wrote neither its last drops nor the traces still queued. Its usage rows are
  durable (the usage journal), so the next start counts the run's usage rows without a
  trace (in a thread, after the start: it reads every row of the run) and writes that as
  its ``routed`` loss. Its ``unrouted`` figure is the one last written: a request refused
  before routing leaves no durable trace of its own, so those dropped after the run's last
  trace batch are not counted. In a fleet the count covers the usage rows of the killed
  run's own gateway only (each run and each row names its gateway).

``gw status`` shows both runs' figures and the start logs the last run's losses.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from collections.abc import Callable, Sequence

import msgspec

from gw.record import TraceRecord
from gw.store.port import RunLog, StateStore
from gw.store.runs import RunRow
from gw.telemetry.throttled_log import ThrottledLog, error_kind

logger = logging.getLogger("gw.telemetry")


class TraceLosses:
    """This run's trace losses (``count`` is the trace queue's ``on_drop``), written with
    ``write`` and ``stopped``; ``previous`` is the run before, counted by ``start`` when it
    was killed. Never raises from ``write``, ``stopped`` or the count: a store that fails
    is logged by error type, and the counts stay in memory."""

    def __init__(
        self,
        runs: RunLog,
        run: int,
        *,
        started_at: float,
        previous: RunRow | None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._runs = runs
        self._run = run
        self._started_at = started_at
        self._clock = clock
        self.previous = previous
        self.routed = 0
        self.unrouted = 0
        self._written = (0, 0)
        self._task: asyncio.Task[None] | None = None
        self._log = ThrottledLog(logger)

    @classmethod
    async def begin(cls, store: StateStore, gateway: str | None = None) -> TraceLosses | None:
        """Record this run of ``gateway`` in ``store`` (before it serves: the last run's
        usage rows are those timed before this start); None, logged, when the store cannot
        be written: losses are then counted in memory only, as the trace queue always
        counts them."""
        started_at = time.time()
        try:
            run, previous = await store.runs().begin(started_at, gateway=gateway)
        except Exception as exc:  # noqa: BLE001 -- any engine's failure (sqlite3, asyncpg, StoreUnavailableError) leaves the counts in memory, as documented
            failure = error_kind(exc)
        else:
            return cls(store.runs(), run, started_at=started_at, previous=previous)
        logger.error(
            "cannot record this run in the state store (%s): the traces it loses are counted"
            " in memory only",
            failure,
        )
        return None

    def count(self, traces: Sequence[TraceRecord]) -> None:
        """Count dropped traces by kind (a trace without a routing decision has no usage
        row: gw/execution/usage_row.py)."""
        for trace in traces:
            if trace.decision is None:
                self.unrouted += 1
            else:
                self.routed += 1

    async def write(self) -> None:
        """Write this run's counts when they changed since the last write."""
        counts = (self.routed, self.unrouted)
        if counts != self._written:
            await self._record(counts, stopped_at=None)

    async def stopped(self) -> None:
        """Write the final counts and the clean stop (after the trace queue has stopped)."""
        if self._task is not None:
            self._task.cancel()
        await self._record((self.routed, self.unrouted), stopped_at=self._clock())

    async def start(self) -> None:
        """Log the last run's losses; a killed run's are counted first, in the background."""
        previous = self.previous
        if previous is None:
            return
        if previous.routed_lost is not None:
            _log_previous(previous)
        else:
            self._task = asyncio.create_task(self._count_previous(previous), name="gw-trace-losses")

    def report(self) -> dict[str, object]:
        """``trace_losses`` in ``gw status --json`` (gw/server/admin/status.py documents it)."""
        previous = self.previous
        return {
            "this_run": {"routed": self.routed, "unrouted": self.unrouted},
            "last_run": None if previous is None else last_run_report(previous),
        }

    async def _record(self, counts: tuple[int, int], *, stopped_at: float | None) -> None:
        routed, unrouted = counts
        try:
            await self._runs.record_lost(
                self._run, routed=routed, unrouted=unrouted, stopped_at=stopped_at
            )
        except Exception as exc:  # noqa: BLE001 -- a count that cannot be written stays in memory and is written with a later batch; telemetry never fails a request
            self._log.warning("cannot write the trace loss counts: %s", error_kind(exc))
        else:
            self._written = counts

    async def _count_previous(self, previous: RunRow) -> None:
        try:
            lost, since = await self._runs.count_routed_lost(
                previous.started_at, self._started_at, gateway=previous.gateway
            )
            await self._runs.record_counted(previous.id, routed_lost=lost, counted_from=since)
        except Exception as exc:  # noqa: BLE001 -- the count is a report: failing it must not stop the server
            logger.warning("cannot count the traces the last run lost: %s", error_kind(exc))
            return
        self.previous = msgspec.structs.replace(previous, routed_lost=lost, counted_from=since)
        _log_previous(self.previous)


def last_run_report(run: RunRow) -> dict[str, object]:
    return {
        "started_at": run.started_at,
        "stopped_at": run.stopped_at,
        "ended": "stopped" if run.stopped_at is not None else "killed",
        "routed": run.routed_lost,  # None: being counted (after a kill)
        "unrouted": run.unrouted_lost,
        "counted_from": run.counted_from,  # after a kill: the count's start
    }


def _log_previous(run: RunRow) -> None:
    routed = run.routed_lost or 0
    if run.stopped_at is not None and not (routed or run.unrouted_lost):
        return
    counted = ""
    if run.counted_from is not None and run.counted_from > run.started_at:
        since = datetime.datetime.fromtimestamp(run.counted_from, datetime.UTC)
        counted = f" (counted from {since:%Y-%m-%dT%H:%M:%SZ}: older traces were pruned)"
    how = "stopped" if run.stopped_at is not None else "was killed"
    logger.warning(
        "the last run %s having lost %d traces: %d of requests in the usage ledger%s, %d of"
        " requests refused before routing",
        how,
        routed + run.unrouted_lost,
        routed,
        counted,
        run.unrouted_lost,
    )

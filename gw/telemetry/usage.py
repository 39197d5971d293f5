"""UsageRecorder: the usage ledger's queue, written in batches by one task, never lossy.

Strategy: usage rows are durable (invariant 8), so unlike traces nothing is dropped for
being inconvenient. ``submit`` appends to a queue and returns (no I/O on the hot path);
one task writes what is queued in batches of up to ``batch_size``, lingering
``flush_interval`` for more. A failed write keeps its rows and is retried with backoff
(the store ignores a request id it already has, so a retry never counts twice).

Bounded by backpressure, not by loss: ``maxsize`` rows may wait. While that many are
queued, ``wait_for_room`` (which the gateway awaits before routing a request) holds new
requests until the writer makes room, for at most ``room_timeout`` each; a request that
waited that long goes ahead anyway, and its row is queued beyond ``maxsize``
(``overflowed`` counts them). Only past ``hard_limit`` rows, when the store has been
failing for a long while, is a row let go, counted in ``lost`` and logged as an error: an
out-of-memory crash would lose every queued row, not just the newest.

The spool: while the store is unreachable (its last write failed, as against merely
slow: writes that succeed late), holding requests would not make room, it would only
make every request of a gateway wait ``room_timeout`` for minutes. So ``wait_for_room``
returns at once then, and rows spool: queued in memory (up to ``hard_limit`` rows, the
spool's bound) and appended to the journal as always, so a spooled row survives a kill
too (up to the journal's ``max_bytes``: 64 MiB, some 140,000 rows of 450 bytes, more
than the default ``hard_limit`` of 100,000; past it rows stay in memory only, and the
spool counts as full for /readyz). ``spooled`` counts rows submitted while the
store was unreachable. When the store answers again the writer's retry drains the queue
oldest first; a retried batch may hold rows already written (a commit whose answer was
lost), which the store ignores by request id. Past ``hard_limit`` the spool is full: a
row is let go, counted in ``lost`` (metrics: ``gw_telemetry_dropped_total{queue="usage"}``,
``gw status``: ``usage_journal.spool``) and logged, rather than holding requests or
growing without bound.

``stop`` writes everything queued (retrying failed writes) for at most its timeout; rows
still queued then are counted in ``lost`` and logged. At quiescence
``submitted == written + lost + queued``.

With a ``UsageJournal`` (gw/telemetry/usage_journal.py), each queued row is also appended
to a file as it is submitted, and the journal is told after each batch how many rows are
in the database: a kill -9 then loses no row, since the next start reads back what the
database lacks. Rows ``stop`` could not write stay in the journal for that start too.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Sequence
from itertools import islice
from typing import Protocol

from gw.ports import UsageRow
from gw.telemetry.throttled_log import ThrottledLog, error_kind
from gw.telemetry.usage_journal import UsageJournal

logger = logging.getLogger("gw.telemetry")


class UsageWriter(Protocol):
    """Where batches go; ``SqliteStore`` is one."""

    async def write_usage(self, rows: Sequence[UsageRow]) -> None: ...


class UsageRecorder:
    """A ``UsageSink`` that queues rows and writes them in batches with a ``UsageWriter``.

    Counters (plain ints, read them for metrics): ``submitted``, ``written``,
    ``write_errors`` (failed write calls, each retried), ``waited`` (requests that waited
    for room), ``overflowed`` (rows queued beyond ``maxsize``), ``spooled`` (rows
    submitted while the store was unreachable) and ``lost``.
    """

    def __init__(
        self,
        writer: UsageWriter,
        *,
        maxsize: int = 10_000,
        batch_size: int = 1024,
        flush_interval: float = 0.05,
        room_timeout: float = 1.0,
        retry_backoff: float = 0.1,
        max_retry_backoff: float = 5.0,
        hard_limit: int | None = None,
        write_timeout: float = 30.0,
        journal: UsageJournal | None = None,
    ) -> None:
        if maxsize < 1 or batch_size < 1:
            raise ValueError("maxsize and batch_size must be >= 1")
        self._writer = writer
        self.journal = journal
        self._rows: deque[UsageRow] = deque()
        self._maxsize = maxsize
        self._hard_limit = max(hard_limit or 10 * maxsize, maxsize)
        self._batch_size = batch_size
        self._flush_interval = flush_interval
        self._room_timeout = room_timeout
        self._retry_backoff = retry_backoff
        self._max_retry_backoff = max_retry_backoff
        self._write_timeout = write_timeout  # a store that hangs counts as unreachable
        self._arrived = asyncio.Event()  # rows were queued: wake the writer
        self._room = asyncio.Event()  # the writer made room: wake waiting requests
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._closed = False
        self._log = ThrottledLog(logger)  # only counts and error types, never a row (invariant 9)
        self.submitted = 0
        self.written = 0
        self.write_errors = 0
        self.waited = 0
        self.overflowed = 0
        self.spooled = 0
        self.lost = 0
        self._failing: str | None = None
        self._failing_since: float | None = None  # loop time of the first failed write

    @property
    def queued(self) -> int:
        return len(self._rows)

    @property
    def failing(self) -> str | None:
        """The error kind of the last write, while no write has succeeded since (/readyz)."""
        return self._failing

    @property
    def spool_full(self) -> bool:
        """Whether a row submitted now would be lost (the queue is at ``hard_limit``) or
        not durable (the journal is at its ``max_bytes``): /readyz goes unready then."""
        journal_full = self.journal is not None and self.journal.full
        return len(self._rows) >= self._hard_limit or journal_full

    def spool_report(self) -> dict[str, object]:
        """``usage_journal.spool`` in ``gw status --json``: whether rows are spooling now
        (the store unreachable, since when, by what error), how many rows wait, the
        bound, and the rows spooled and lost since start."""
        return {
            "active": self._failing is not None,
            "error": self._failing,
            "failing_for_s": None
            if self._failing_since is None
            else round(asyncio.get_running_loop().time() - self._failing_since, 3),
            "queued": len(self._rows),
            "limit": self._hard_limit,
            "full": self.spool_full,
            "journal_full": self.journal is not None and self.journal.full,
            "spooled": self.spooled,
            "lost": self.lost,
        }

    def submit(self, row: UsageRow) -> None:
        """Queue a row; never blocks, never raises (see the module docstring for limits)."""
        self.submitted += 1
        if self._closed or len(self._rows) >= self._hard_limit:
            self.lost += 1
            why = (
                "after the recorder stopped"
                if self._closed
                else f"the usage spool is full ({self._hard_limit} rows waiting for the store)"
            )
            message = f"usage row not recorded: {why} (lost: {self.lost})"
            self._log.log(logging.ERROR, "%s", message, kind="lost")
            return
        if self._failing is not None:
            self.spooled += 1
        if len(self._rows) >= self._maxsize:
            self.overflowed += 1
        if self.journal is not None:
            self.journal.append(row)  # before the answer's last bytes (see the journal)
        self._rows.append(row)
        self._arrived.set()

    async def wait_for_room(self) -> None:
        """Return once fewer than ``maxsize`` rows are queued, or after ``room_timeout``; at
        once while the store is unreachable (the spool, see the module docstring)."""
        if len(self._rows) < self._maxsize or self._closed or self._failing is not None:
            return
        self.waited += 1
        try:
            async with asyncio.timeout(self._room_timeout):
                while (
                    len(self._rows) >= self._maxsize and not self._closed and self._failing is None
                ):
                    self._room.clear()
                    await self._room.wait()
        except TimeoutError:
            self._log.warning(
                "usage queue full (%d rows): the store is slow", len(self._rows), kind="full"
            )

    async def start(self) -> None:
        """Start the writer task (call from the event loop that will submit)."""
        if self._task is None and not self._closed:
            self._task = asyncio.create_task(self._run(), name="gw-usage-recorder")

    async def stop(self, timeout: float = 15.0) -> None:  # noqa: ASYNC109 -- rows left when the time runs out are counted as lost, which a caller's asyncio.timeout could not do
        """Write everything queued (for at most ``timeout`` seconds), then stop."""
        if self._closed:
            return
        self._stopping = True
        self._arrived.set()
        if self._rows:  # said before the flush, which may wait on a locked database
            logger.log(
                logging.WARNING if self.write_errors else logging.INFO,
                "usage recorder stopping with %d rows queued (%d failed writes so far):"
                " flushing for up to %.0f s",
                len(self._rows),
                self.write_errors,
                timeout,
            )
        if self._task is None:  # never started: drain now, so stop() always flushes
            self._task = asyncio.create_task(self._run(), name="gw-usage-recorder")
        task = self._task
        _done, pending = await asyncio.wait({task}, timeout=timeout)
        if pending:
            task.cancel()
            await asyncio.wait({task})
        self._closed = True
        self._task = None
        self._room.set()
        if self.journal is not None:
            self.journal.close(all_committed=not self._rows)
        if self._rows:
            self.lost += len(self._rows)
            logger.error(
                "usage recorder stopped with %d rows unwritten (write errors: %d)%s",
                len(self._rows),
                self.write_errors,
                ""
                if self.journal is None
                else "; the usage journal keeps those it holds for the next start",
            )
            self._rows.clear()

    async def _run(self) -> None:
        backoff = self._retry_backoff
        while True:
            if not self._rows:
                if self._stopping:
                    return
                self._arrived.clear()
                await self._arrived.wait()
                continue
            if len(self._rows) < self._batch_size and not self._stopping:
                await asyncio.sleep(self._flush_interval)  # linger: fewer, larger writes
            if await self._write_batch():
                backoff = self._retry_backoff
            else:
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self._max_retry_backoff)

    async def _write_batch(self) -> bool:
        """Write the oldest rows; they leave the queue only once written."""
        batch = list(islice(self._rows, self._batch_size))
        try:
            async with asyncio.timeout(self._write_timeout):
                await self._writer.write_usage(batch)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 -- any writer error is counted, logged and retried: the rows stay queued
            self.write_errors += 1
            if self._failing is None:
                self._failing_since = asyncio.get_running_loop().time()
                logger.warning(
                    "usage rows cannot be written (%s): spooling them (journal and memory,"
                    " up to %d rows) until the store answers",
                    error_kind(exc),
                    self._hard_limit,
                )
            self._failing = error_kind(exc)
            self._room.set()  # requests waiting for room go ahead: rows spool now
            self._log.warning(
                "usage write failed: %s; %d rows kept",
                error_kind(exc),
                len(self._rows),
                kind="write",
            )
            return False
        if self._failing is not None:
            logger.info(
                "usage rows can be written again (%s is over): draining %d spooled rows",
                self._failing,
                len(self._rows),
            )
        self._failing = None
        self._failing_since = None
        for _ in batch:
            self._rows.popleft()
        self.written += len(batch)
        if self.journal is not None:
            self.journal.committed(self.written)
        if len(self._rows) < self._maxsize:
            self._room.set()
        return True

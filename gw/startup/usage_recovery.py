"""The usage journal at start-up: what a killed run left is put back before gw serves, then
this run's journal is opened (gw/telemetry/usage_journal.py).

Runs under the state directory's serve lock (gw/store/serve_lock.py), so no other server
writes the journal meanwhile; CLI commands never touch it. Before the tenant budgets are
seeded from the ledger, so spend the killed run recorded only in the journal counts.
A journal that cannot be read or put back never stops the start: the error is logged and
shown in ``gw status``, and its segments are kept for the next start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path

from gw.startup.trace_losses import TraceLosses
from gw.store.port import StateStore
from gw.store.private_files import DIR_MODE
from gw.telemetry.hub import TelemetryHub
from gw.telemetry.throttled_log import error_kind
from gw.telemetry.usage_journal import (
    JOURNAL_DIR,
    JournalRecovery,
    UsageJournal,
    os_error,
    read_journal,
)

logger = logging.getLogger("gw.telemetry")


async def recover_usage(home: Path, store: StateStore) -> JournalRecovery:
    """Put back the rows the ledger lacks from ``<home>/usage-journal``, log what came back,
    and delete the segments read; see the module docstring."""
    directory = home / JOURNAL_DIR
    try:
        found = await asyncio.to_thread(read_journal, directory)
    except OSError as exc:
        return _failed(directory, f"cannot read it: {os_error(exc)}")
    if not found.segments:
        return JournalRecovery()
    try:
        counts = await store.usage_recovery().insert(found.rows)
    except Exception as exc:  # noqa: BLE001 -- any engine's failure (sqlite3, asyncpg): the segments stay for the next start, as documented
        return _failed(directory, f"cannot write to the database: {error_kind(exc)}")
    await asyncio.to_thread(_delete, found.segments)
    recovery = JournalRecovery(
        rows=counts.inserted, without_trace=counts.without_trace, torn_lines=found.torn
    )
    if recovery.rows or recovery.torn_lines:
        logger.warning(
            "usage journal: the last run ended without writing %d usage rows; they are"
            " recovered (gw usage counts them as recovered), %d of them without a trace,"
            " which was lost with the process; %d torn lines skipped",
            recovery.rows,
            recovery.without_trace,
            recovery.torn_lines,
        )
    return recovery


async def journaled_telemetry(home: Path, store: StateStore, gateway: str) -> TelemetryHub:
    """The telemetry hub, its usage ledger journaled, once the last run's journal is
    recovered (``recover_usage``), its trace losses kept in the store from now on
    (gw/startup/trace_losses.py)."""
    recovery = await recover_usage(home, store)
    losses = await TraceLosses.begin(store, gateway)
    return TelemetryHub(store, journal=open_journal(home), recovery=recovery, losses=losses)


def open_journal(home: Path) -> UsageJournal:
    """This run's journal. A directory that cannot be made is logged here; each append
    then fails, counted and throttled, and rows go through the queue alone."""
    directory = home / JOURNAL_DIR
    failure = None
    try:
        directory.mkdir(mode=DIR_MODE, exist_ok=True)
    except OSError as exc:
        failure = os_error(exc)
    if failure is not None:
        logger.error(
            "usage journal: cannot create %s (%s): usage rows are not protected against a"
            " crash until it can be",
            directory,
            failure,
        )
    return UsageJournal(directory)


def _failed(directory: Path, why: str) -> JournalRecovery:
    logger.error("usage journal %s: %s; its rows are kept for the next start", directory, why)
    return JournalRecovery(error=why)


def _delete(segments: list[Path]) -> None:
    for path in segments:  # one left behind is read again next time: its rows are known
        with contextlib.suppress(OSError):
            path.unlink()

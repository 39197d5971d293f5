"""Usage rows from the journal back into the ledger, at start-up (gw/startup/usage_recovery.py).

The journal (gw/telemetry/usage_journal.py) holds rows a killed run may not have
committed. Each chunk is one transaction: the rows whose request id the ledger lacks go
in marked ``recovered``; a row the ledger has already (its batch was committed before the
kill) is left alone, so a start that is itself killed mid-recovery and runs again counts
nothing twice. Of the rows put back, those with no trace are counted too: their trace
was still queued (traces are lossy) when the process died.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Final, NamedTuple

import aiosqlite
import msgspec

from gw.ports import UsageRow
from gw.store.batch_insert import insert_statements
from gw.store.usage import INSERT_USAGE

Transaction = Callable[[], AbstractAsyncContextManager[None]]
CHUNK: Final = 500  # request ids bound in one IN (...) list


class RecoveredRows(NamedTuple):
    inserted: int  # rows the ledger lacked, now in it marked recovered
    without_trace: int  # ... of which no trace was written


class UsageRecovery:
    """On the state store's own connection and lock (``SqliteStore.usage_recovery``)."""

    def __init__(self, conn: aiosqlite.Connection, transaction: Transaction) -> None:
        self._conn = conn
        self._transaction = transaction

    async def insert(self, rows: Sequence[UsageRow]) -> RecoveredRows:
        """Put back the rows the ledger lacks (see the module docstring)."""
        inserted = untraced = 0
        unique = list({row.request_id: row for row in rows}.values())
        for start in range(0, len(unique), CHUNK):
            part = unique[start : start + CHUNK]
            async with self._transaction():
                known = await self._present("usage", [row.request_id for row in part])
                new = [row for row in part if row.request_id not in known]
                if not new:
                    continue
                values = [msgspec.structs.astuple(_recovered(row)) for row in new]
                for sql, params in insert_statements(INSERT_USAGE, values):
                    await self._conn.execute(sql, params)
                traced = await self._present("traces", [row.request_id for row in new])
            inserted += len(new)
            untraced += len(new) - len(traced)
        return RecoveredRows(inserted, untraced)

    async def _present(self, table: str, ids: list[str]) -> set[str]:
        marks = ", ".join("?" * len(ids))
        # ``table`` is one of two fixed names, never the caller's text.
        sql = f"SELECT request_id FROM {table} WHERE request_id IN ({marks})"  # noqa: S608
        return {str(row[0]) for row in await self._conn.execute_fetchall(sql, ids)}


def _recovered(row: UsageRow) -> UsageRow:
    return msgspec.structs.replace(row, recovered=True)

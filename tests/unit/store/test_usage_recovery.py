"""Journal rows back into a real SQLite ledger: only those it lacks, marked recovered, the
ones without a trace counted, and a second recovery of the same rows adding nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from unit.store.test_sqlite_store import make_trace
from unit.store.test_usage_ledger import row, run_with_store

from gw.store import SqliteStore
from gw.store.usage_recovery import CHUNK, RecoveredRows


def test_only_missing_rows_go_in_marked_recovered_and_untraced_ones_are_counted(
    tmp_path: Path,
) -> None:
    path = tmp_path / "gw.db"
    committed = row("r-committed", input_tokens=1)
    journal = [
        row("r-committed", input_tokens=999),  # its batch was committed before the kill
        row("r-traced"),
        row("r-untraced-1"),
        row("r-untraced-2"),
    ]

    async def body(store: SqliteStore) -> tuple[RecoveredRows, RecoveredRows]:
        await store.write_usage([committed])
        await store.write_traces([make_trace("r-traced", 1.0)])
        first = await store.usage_recovery().insert(journal)
        again = await store.usage_recovery().insert(journal)  # a start killed mid-way, rerun
        return first, again

    first, again = run_with_store(path, body)
    assert first == RecoveredRows(inserted=3, without_trace=2)
    assert again == RecoveredRows(inserted=0, without_trace=0)
    with sqlite3.connect(path) as db:
        stored = dict(db.execute("SELECT request_id, recovered FROM usage").fetchall())
        tokens = db.execute("SELECT input_tokens FROM usage WHERE request_id = 'r-committed'")
        assert tokens.fetchone() == (1,)  # the committed row is kept as it was
    assert stored == {"r-committed": 0, "r-traced": 1, "r-untraced-1": 1, "r-untraced-2": 1}

    [totals] = run_with_store(path, lambda store: store.usage_report("tenant"))
    assert (totals.requests, totals.recovered) == (4, 3)


def test_more_rows_than_one_chunk(tmp_path: Path) -> None:
    rows = [row(f"r{n:05d}") for n in range(CHUNK * 2 + 7)]

    async def body(store: SqliteStore) -> RecoveredRows:
        return await store.usage_recovery().insert(rows)

    assert run_with_store(tmp_path / "gw.db", body) == RecoveredRows(len(rows), len(rows))

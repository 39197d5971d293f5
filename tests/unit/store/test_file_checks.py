"""The store's own checks on its files: a write to a database whose directory is gone is
refused (its rows stay with the caller) and goes to a new database once the directory is
back; an unwritable -shm stops every database call, and ``open``."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_usage_ledger import row

from gw.store import SqliteStore, StoreError
from gw.store.file_checks import DatabaseFile, StoreUnavailableError, shm_problem


def test_a_replaced_or_removed_database_is_told_apart(tmp_path: Path) -> None:
    path = tmp_path / "state" / "gw.db"
    path.parent.mkdir()
    path.write_bytes(b"")
    watched = DatabaseFile(path)
    assert watched.gone() is None
    path.unlink()
    path.write_bytes(b"")  # a new file at the path: another inode
    replaced = watched.gone()
    assert replaced is not None
    assert replaced.code == "database_replaced"
    watched.rebind()
    assert watched.gone() is None
    shutil.rmtree(path.parent)
    removed = watched.gone()
    assert removed is not None
    assert removed.code == "state_dir_removed"
    assert str(path.parent) in removed.message
    assert not watched.directory_back()


def test_usage_written_while_the_directory_is_gone_is_refused_then_lands_in_a_new_database(
    tmp_path: Path,
) -> None:
    async def scenario() -> tuple[int, int]:
        state = tmp_path / "state"
        store = await SqliteStore.open(state / "gw.db")
        try:
            await store.write_usage([row("before")])
            shutil.rmtree(state)
            with pytest.raises(StoreUnavailableError, match="was removed"):
                await store.write_usage([row("during")])
            state.mkdir()
            await store.write_usage([row("during")])  # the caller retried: a new gw.db
            totals = await store.usage_report("tenant")
            return sum(total.requests for total in totals), len(os.listdir(state))
        finally:
            await store.close()

    requests, files = asyncio.run(scenario())
    assert requests == 1  # only the retried row: "before" went with the old directory
    assert files >= 1


def chattr(flag: str, path: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["chattr", flag, str(path)], capture_output=True, check=False)


def test_an_immutable_shm_stops_every_call_and_a_new_open(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("chattr +i needs root")
    path = tmp_path / "gw.db"

    async def scenario() -> None:
        store = await SqliteStore.open(path)
        shm = path.with_name("gw.db-shm")
        done = await asyncio.to_thread(chattr, "+i", shm)
        if done.returncode != 0:
            await store.close()
            pytest.skip(f"chattr +i is not supported here: {done.stderr.decode().strip()}")
        try:
            problem = shm_problem(path)
            assert problem is not None
            assert problem.code == "shm_unwritable"
            with pytest.raises(StoreUnavailableError, match="cannot write"):
                await store.ping()  # a read too: SQLite readers write to the -shm
            with pytest.raises(StoreError, match="SQLite maps it into memory"):
                await SqliteStore.open(path)
        finally:
            await asyncio.to_thread(chattr, "-i", shm)
        await store.ping()
        await store.close()

    asyncio.run(scenario())


_LOCKS_KEPT = """
import os, sqlite3, sys
from pathlib import Path
from gw.store.file_checks import shm_problem

path = Path(sys.argv[1])
db = sqlite3.connect(path, isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("CREATE TABLE t (x)")
shm = os.stat(path.with_name(path.name + "-shm"))
mark = f":{shm.st_ino:d} "  # /proc/locks names a file by major:minor:inode

def shm_locks():
    with open("/proc/locks") as locks:
        return [line for line in locks if mark in line and f" {os.getpid()} " in line]

held = shm_locks()
assert held, "SQLite holds no lock on its -shm: nothing to check"
assert shm_problem(path) is None
assert shm_locks() == held, f"the check dropped SQLite's locks: {held} -> {shm_locks()}"
print("ok")
"""


def test_the_shm_check_keeps_sqlites_locks(tmp_path: Path) -> None:
    """Checking the -shm must not close a descriptor of it: that drops every POSIX lock
    this process holds on it, SQLite's included; another process then takes itself for the
    first user and truncates the -shm this one has mapped, and the next statement here
    dies of SIGBUS (seen under load). Run in a child, as /proc/locks is read by pid."""
    if not Path("/proc/locks").exists():
        pytest.skip("needs /proc/locks (Linux) to see the locks")
    done = subprocess.run(
        [sys.executable, "-c", _LOCKS_KEPT, str(tmp_path / "gw.db")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stdout.strip()) == (0, "ok"), done.stderr[-2000:]

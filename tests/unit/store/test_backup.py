"""gw.store.backup on real SQLite files: a backup never lands on the live database, backup
files are private, a restore keeps revision numbers going up and never overwrites a file
when it moves the replaced database aside."""

from __future__ import annotations

import asyncio
import hashlib
import os
import sqlite3
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gw.store import SqliteStore
from gw.store.backup import LiveDatabaseError, backup, restore, summarize
from gw.store.migrations import MIGRATIONS, SCHEMA_VERSION_TABLE
from gw.store.revisions import RevisionRow

NOW = 1_773_583_323.0


def record(path: Path, *hashes: str) -> list[int]:
    """Apply one config revision per hash to the database at ``path``; their numbers."""

    async def body() -> list[int]:
        async with await SqliteStore.open(path) as store:
            return [
                await store.record_revision(
                    config_hash=h, source="file", time=NOW, content=f"# {h}\n", redacted="{}"
                )
                for h in hashes
            ]

    return asyncio.run(body())


def history(path: Path) -> list[RevisionRow]:
    async def body() -> list[RevisionRow]:
        async with await SqliteStore.open(path) as store:
            return await store.list_revisions()

    return asyncio.run(body())


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def live(tmp_path: Path) -> Path:
    """A live gw database, left in WAL mode with its -wal and -shm files, as a server has it."""
    home = tmp_path / "state"
    home.mkdir()
    database = home / "gw.db"
    record(database, "h1", "h2")
    keep_open = sqlite3.connect(database)  # a reader keeps -wal and -shm on disk
    keep_open.execute("SELECT count(*) FROM config_revisions").fetchone()
    keep_open.close()
    return database


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


# -- (a) the live database is never a backup destination ---------------------------------


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm", "-journal"])
def test_backup_onto_the_live_database_or_a_sidecar_is_refused_even_with_force(
    live: Path, suffix: str
) -> None:
    target = live.with_name(live.name + suffix)
    before = digest(live)

    with pytest.raises(LiveDatabaseError, match="live state database") as raised:
        backup(live, target, force=True)

    assert "gw-backup.db" in str(raised.value)  # says what to do instead
    assert digest(live) == before
    assert [row.revision for row in history(live)] == [2, 1]


def test_backup_onto_the_live_database_through_another_path_is_refused(
    live: Path, tmp_path: Path
) -> None:
    link_dir = tmp_path / "elsewhere"
    link_dir.symlink_to(live.parent)
    symlink = tmp_path / "gw-link.db"
    symlink.symlink_to(live)
    hard = tmp_path / "gw-hard.db"
    hard.hardlink_to(live)
    dangling = tmp_path / "journal-link"
    dangling.symlink_to(live.with_name("gw.db-journal"))  # the sidecar does not exist
    before = digest(live)

    for target in (
        live.parent / ".." / live.parent.name / "gw.db",
        link_dir / "gw.db",
        link_dir / "gw.db-wal",
        symlink,
        hard,
        dangling,
    ):
        with pytest.raises(LiveDatabaseError):
            backup(live, target, force=True)

    assert digest(live) == before
    assert not live.with_name("gw.db-journal").exists()


def test_a_backup_beside_the_live_database_is_still_allowed(live: Path) -> None:
    summary = backup(live, live.with_name("gw-backup.db"))
    assert summary.config_revisions == 2


# -- (e) backup files are private ----------------------------------------------------------


@pytest.mark.usefixtures("umask_022")
def test_backup_and_its_temporary_file_are_created_0600(
    live: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, int] = {}
    connect = sqlite3.connect

    def spy(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn: sqlite3.Connection = connect(database, *args, **kwargs)
        if str(database).endswith(".partial"):
            seen[str(database)] = stat.S_IMODE(os.stat(database).st_mode)
        return conn

    monkeypatch.setattr(sqlite3, "connect", spy)
    dest = tmp_path / "backups" / "copy.db"
    dest.parent.mkdir()
    dest.write_bytes(b"")
    dest.chmod(0o644)  # an existing file replaced with --force gets the private mode too

    backup(live, dest, force=True)

    assert stat.S_IMODE(dest.stat().st_mode) == 0o600
    assert seen
    assert set(seen.values()) == {0o600}
    assert not dest.with_name("copy.db.partial").exists()


@pytest.mark.usefixtures("umask_022")
def test_a_restored_database_is_0600(live: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy.db"
    backup(live, copy)

    restore(copy, live, now=NOW)

    assert stat.S_IMODE(live.stat().st_mode) == 0o600


# -- (b) revision numbers never go back across a restore --------------------------------


def test_restoring_an_older_backup_keeps_the_newer_revisions_so_numbers_go_on(
    live: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "copy.db"
    backup(live, copy)  # revisions 1-2
    assert record(live, "h3", "h4") == [3, 4]

    result = restore(copy, live, now=NOW)

    rows = history(live)
    assert [(row.revision, row.hash) for row in rows] == [
        (4, "h4"),
        (3, "h3"),
        (2, "h2"),
        (1, "h1"),
    ]
    assert record(live, "h4") == [4]  # the config last applied keeps its number ...
    assert record(live, "h5") == [5]  # ... and a new one goes above every number handed out
    assert result.carried_revisions == (3, 4)
    assert result.warning is None


def test_a_newer_backup_carries_nothing(live: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    record(other, "a", "b", "c")

    result = restore(other, live, now=NOW)

    assert result.carried_revisions == ()
    assert [row.hash for row in history(live)] == ["c", "b", "a"]


def test_an_old_schema_backup_takes_the_columns_it_has(live: Path, tmp_path: Path) -> None:
    old = tmp_path / "v2.db"
    with sqlite3.connect(old) as conn:
        for migration in MIGRATIONS[:2]:
            for statement in migration.statements:
                conn.execute(statement)
        conn.execute(SCHEMA_VERSION_TABLE)
        conn.execute("PRAGMA user_version = 2")
        conn.execute(
            "INSERT INTO config_revisions (revision, time, source, hash) VALUES (1, 1.0, 'x', 'h1')"
        )
    conn.close()

    result = restore(old, live, now=NOW)

    assert result.carried_revisions == (2,)
    assert record(live, "h9") == [3]


def test_an_unreadable_replaced_database_is_still_replaced_with_a_warning(
    tmp_path: Path,
) -> None:
    database = tmp_path / "gw.db"
    database.write_bytes(b"damaged beyond reading" * 100)
    copy = tmp_path / "copy.db"
    record(copy, "h1")

    result = restore(copy, database, now=NOW)

    assert result.carried_revisions == ()
    assert result.warning is not None
    assert "may be used again" in result.warning
    assert result.moved_aside is not None
    assert Path(result.moved_aside).read_bytes() == b"damaged beyond reading" * 100
    assert summarize(database).config_revisions == 1


# -- (d) the replaced database never overwrites a file ----------------------------------


def test_two_restores_in_one_second_keep_both_replaced_databases(
    live: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "copy.db"
    backup(live, copy)
    record(live, "h3")

    first = restore(copy, live, now=NOW)
    record(live, "h4")  # the restored database changes before the second restore
    second = restore(copy, live, now=NOW)

    assert first.moved_aside is not None
    assert second.moved_aside is not None
    assert first.moved_aside != second.moved_aside
    assert Path(second.moved_aside).name == Path(first.moved_aside).name + "-2"
    assert history(Path(first.moved_aside))[0].hash == "h3"
    assert history(Path(second.moved_aside))[0].hash == "h4"


def test_a_name_whose_sidecar_exists_is_skipped(live: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy.db"
    backup(live, copy)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.localtime(NOW))
    stale = live.with_name(f"gw.db.bak-{stamp}-wal")
    stale.write_bytes(b"a WAL from another database")

    result = restore(copy, live, now=NOW)

    assert result.moved_aside == str(stale.with_name(stale.name.removesuffix("-wal") + "-2"))
    assert stale.read_bytes() == b"a WAL from another database"

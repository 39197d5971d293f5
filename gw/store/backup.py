"""Whole-database copies for ``gw state backup`` and ``gw state restore`` (blocking calls).

Strategy: a backup goes through SQLite's online backup API from a connection that only
reads, in one step, so it copies one consistent snapshot while a running server keeps
writing (in WAL mode the server's commits go to the WAL and never wait for the copy). It is
written beside its destination and renamed into place, so a failed copy leaves nothing
half-written, and it is switched to ``journal_mode = DELETE`` so the copy is one
self-contained file. A restore copies the backup the same way into the state dir, moves
the current database (with its WAL, which may hold committed data) aside to
``gw.db.bak-<time>``, drops the stale shared-memory file and renames the copy into place.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from pathlib import Path
from typing import Final

import msgspec

from gw.store.migrations import StoreError, pending_migrations

BUSY_TIMEOUT_MS: Final = 5_000
SIDECARS: Final = ("-wal", "-shm", "-journal")


class NotAGwDatabaseError(StoreError):
    """The file is not an SQLite database written by gw."""


class DatabaseSummary(msgspec.Struct, frozen=True, kw_only=True):
    """What a database file holds; ``gw state backup --json`` prints these fields."""

    path: str
    bytes: int
    schema_version: int
    traces: int
    usage: int
    config_revisions: int


class RestoreResult(msgspec.Struct, frozen=True, kw_only=True):
    """``gw state restore --json`` prints these fields."""

    restored_from: str
    moved_aside: str | None  # where the replaced database went; None when there was none
    database: DatabaseSummary


def summarize(path: Path) -> DatabaseSummary:
    """Check that ``path`` is a gw database this gw can read, and count what it holds.

    Raises ``NotAGwDatabaseError`` for anything else and ``SchemaTooNewError`` for a
    database written by a newer gw.
    """
    if not path.is_file():
        raise NotAGwDatabaseError(f"{path} does not exist or is not a file")
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as error:
        raise NotAGwDatabaseError(f"{path} cannot be opened: {error}") from None
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        if version < 1 or "schema_version" not in tables:
            raise NotAGwDatabaseError(f"{path} is an SQLite file but not a gw database")
        pending_migrations(version, location=str(path))  # raises SchemaTooNewError
        check = conn.execute("PRAGMA quick_check").fetchone()[0]
        if check != "ok":
            raise NotAGwDatabaseError(f"{path} is damaged: {check}")
        counts = {
            table: int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])  # noqa: S608 - fixed table names
            if table in tables
            else 0
            for table in ("traces", "usage", "config_revisions")
        }
    except sqlite3.DatabaseError as error:
        raise NotAGwDatabaseError(f"{path} is not a gw database: {error}") from None
    finally:
        conn.close()
    return DatabaseSummary(
        path=str(path),
        bytes=path.stat().st_size,
        schema_version=version,
        traces=counts["traces"],
        usage=counts["usage"],
        config_revisions=counts["config_revisions"],
    )


def copy_database(source: Path, dest: Path) -> None:
    """Copy ``source`` to ``dest`` (replacing it) with the backup API, atomically."""
    if not source.is_file():
        raise StoreError(f"{source} does not exist")
    partial = dest.with_name(f"{dest.name}.partial")
    _remove_with_sidecars(partial)
    # A read-write connection that only reads: read-only ones cannot open a WAL database
    # whose -shm file is missing (the server is stopped), and this one writes nothing.
    src = sqlite3.connect(source)
    try:
        src.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        out = sqlite3.connect(partial)
        try:
            src.backup(out)  # pages=-1: everything in one step, one consistent snapshot
            out.execute("PRAGMA journal_mode = DELETE")
        finally:
            out.close()
    except BaseException:
        _remove_with_sidecars(partial)
        raise
    finally:
        src.close()
    partial.replace(dest)


def backup(source: Path, dest: Path, *, force: bool = False) -> DatabaseSummary:
    """Take an online copy of the database at ``source`` into ``dest`` and describe it."""
    if dest.exists() and not force:
        raise StoreError(f"{dest} exists; pass --force to overwrite it")
    if dest.is_dir():
        raise StoreError(f"{dest} is a directory; give a file path")
    summarize(source)  # refuse to copy something that is not a gw database
    dest.parent.mkdir(parents=True, exist_ok=True)
    copy_database(source, dest)
    return summarize(dest)


def restore(backup_file: Path, database: Path, *, now: float | None = None) -> RestoreResult:
    """Put ``backup_file`` in place of ``database``; the caller checks no server runs.

    The current database is moved aside, never deleted.
    """
    summarize(backup_file)
    database.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    staged = database.with_name(f"{database.name}.restoring")
    copy_database(backup_file, staged)
    aside: Path | None = None
    if database.exists():
        stamp = time.strftime("%Y%m%dT%H%M%S", time.localtime(now))
        aside = database.with_name(f"{database.name}.bak-{stamp}")
        database.replace(aside)
        wal = database.with_name(database.name + "-wal")
        if wal.exists():  # keeps the aside copy whole: SQLite finds it by name
            wal.replace(aside.with_name(aside.name + "-wal"))
    for suffix in SIDECARS:
        with contextlib.suppress(FileNotFoundError):
            database.with_name(database.name + suffix).unlink()
    staged.replace(database)
    return RestoreResult(
        restored_from=str(backup_file),
        moved_aside=None if aside is None else str(aside),
        database=summarize(database),
    )


def _remove_with_sidecars(path: Path) -> None:
    for name in (path.name, *(path.name + suffix for suffix in SIDECARS)):
        with contextlib.suppress(FileNotFoundError):
            path.with_name(name).unlink()

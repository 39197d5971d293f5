"""Whole-database copies for ``gw state backup`` and ``gw state restore`` (blocking calls).

Strategy: a backup goes through SQLite's online backup API from a connection that only
reads, in one step, so it copies one consistent snapshot while a running server keeps
writing (in WAL mode the server's commits go to the WAL and never wait for the copy). It is
written beside its destination, into a file created 0600 (it holds key digests, usage and
config text), and renamed into place, so a failed copy leaves nothing half-written; it is
switched to ``journal_mode = DELETE`` so the copy is one self-contained file. A backup
never lands on the live database or its ``-wal``/``-shm``/``-journal`` files.

A restore copies the backup the same way into the state dir, carries over the replaced
database's config revisions numbered above the backup's newest (see ``carry_revisions``),
moves the current database (with its WAL, which may hold committed data) aside to a name
no file has (``gw.db.bak-<time>``, then ``-2``, ``-3``, ...), drops the stale
shared-memory file and renames the copy into place.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sqlite3
import time
from pathlib import Path
from typing import Any, Final

import msgspec

from gw.store.migrations import StoreError, pending_migrations
from gw.store.private_files import create_private

BUSY_TIMEOUT_MS: Final = 5_000
SIDECARS: Final = ("-wal", "-shm", "-journal")


class NotAGwDatabaseError(StoreError):
    """The file is not an SQLite database written by gw."""


class LiveDatabaseError(StoreError):
    """A backup was asked to overwrite the database it copies, or one of its sidecars."""


class _UnreadableRevisionsError(StoreError):
    """The replaced database's config revisions cannot be read."""


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
    # Revision numbers of the replaced database's config revisions, newer than the backup's
    # newest, kept in the restored one so that revision numbers never go back.
    carried_revisions: tuple[int, ...] = ()
    # Set when the replaced database's revisions could not be read (it is damaged, say):
    # the restore went ahead, but later revisions may reuse numbers it had handed out.
    warning: str | None = None


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
    """Copy ``source`` to ``dest`` (replacing it) with the backup API, atomically; ``dest``
    ends up with mode 0600 whatever the umask."""
    if not source.is_file():
        raise StoreError(f"{source} does not exist")
    partial = dest.with_name(f"{dest.name}.partial")
    _remove_with_sidecars(partial)
    # Created here rather than by sqlite3.connect, which would apply the umask; SQLite
    # gives the copy's journal the mode of the file it belongs to. An empty file is a valid
    # empty database.
    create_private(partial)
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
    """Take an online copy of the database at ``source`` into ``dest`` and describe it.

    Raises ``LiveDatabaseError`` when ``dest`` is ``source`` or one of its sidecar files
    (even through another path, a symlink or a hard link), with or without ``force``.
    """
    refuse_live_destination(source, dest)
    if dest.exists() and not force:
        raise StoreError(f"{dest} exists; pass --force to overwrite it")
    if dest.is_dir():
        raise StoreError(f"{dest} is a directory; give a file path")
    summarize(source)  # refuse to copy something that is not a gw database
    dest.parent.mkdir(parents=True, exist_ok=True)
    copy_database(source, dest)
    return summarize(dest)


def refuse_live_destination(database: Path, dest: Path) -> None:
    """Raise ``LiveDatabaseError`` when writing ``dest`` would replace ``database`` or one of
    its ``-wal``, ``-shm`` or ``-journal`` files (which SQLite reads as part of it)."""
    for live in (database, *(database.with_name(database.name + s) for s in SIDECARS)):
        if _same_file(live, dest):
            suffix = live.name.removeprefix(database.name)
            what = (
                f"the live state database's {suffix} file" if suffix else "the live state database"
            )
            raise LiveDatabaseError(
                f"refusing to write the backup to {dest}: it is {what} ({live}), and"
                f" writing there would destroy {database}. Give a path that is not the"
                f" database or its -wal, -shm or -journal file, for example"
                f" {database.with_name('gw-backup.db')}"
            )


def restore(backup_file: Path, database: Path, *, now: float | None = None) -> RestoreResult:
    """Put ``backup_file`` in place of ``database``; the caller checks no server runs.

    The current database is moved aside, never deleted, under a name no file had; its
    config revisions newer than the backup's are kept (``carry_revisions``).
    """
    summarize(backup_file)
    database.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    staged = database.with_name(f"{database.name}.restoring")
    copy_database(backup_file, staged)
    carried: tuple[int, ...] = ()
    warning: str | None = None
    aside: Path | None = None
    if database.exists():
        try:
            try:
                carried = carry_revisions(database, staged)
            except _UnreadableRevisionsError as error:
                warning = str(error)
            aside = _reserve_aside_name(database, now)
        except BaseException:
            _remove_with_sidecars(staged)
            raise
        try:
            database.replace(aside)
        except BaseException:
            aside.unlink(missing_ok=True)  # the empty file that reserved the name
            raise
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
        carried_revisions=carried,
        warning=warning,
    )


def carry_revisions(replaced: Path, restored: Path) -> tuple[int, ...]:
    """Copy into ``restored`` the config revision rows of ``replaced`` numbered above the
    newest one ``restored`` holds, and return their numbers.

    Why: ``x-gw-revision`` never goes back, and the store numbers the next revision one
    above the newest row. Restoring an older backup would otherwise hand out numbers that
    clients already saw with another config. The carried rows are real history (configs
    that were applied on this state dir), so ``gw config history`` stays truthful, and when
    the config file is still the one last applied, the next start reuses its number instead
    of making a new one. Only the columns both schemas have are copied (the store fills
    ``content`` of the newest row on the next start when the config is the same).
    """
    out = sqlite3.connect(restored)
    try:
        own_columns = _revision_columns(out)
        newest = int(
            out.execute("SELECT coalesce(max(revision), 0) FROM config_revisions").fetchone()[0]
        )
        columns, rows = _revisions_above(replaced, newest, own_columns)
        if rows:
            with out:  # one transaction
                out.executemany(
                    f"INSERT INTO config_revisions ({', '.join(columns)})"  # noqa: S608 - column names come from PRAGMA table_info
                    f" VALUES ({', '.join('?' * len(columns))})",
                    rows,
                )
    finally:
        out.close()
    revision_at = columns.index("revision") if rows else 0
    return tuple(int(row[revision_at]) for row in rows)


def _revisions_above(
    database: Path, newest: int, wanted: list[str]
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The ``wanted`` columns ``database`` has, and its config revision rows numbered above
    ``newest``; raises ``_UnreadableRevisionsError`` when they cannot be read."""
    try:
        src = sqlite3.connect(database)  # read-write, only reads: see copy_database
        try:
            src.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            present = set(_revision_columns(src))
            columns = [c for c in wanted if c in present]
            if "revision" not in columns:
                return columns, []  # no config revisions there: nothing to carry
            rows = src.execute(
                f"SELECT {', '.join(columns)} FROM config_revisions"  # noqa: S608 - column names come from PRAGMA table_info
                " WHERE revision > ? ORDER BY revision",
                (newest,),
            ).fetchall()
        finally:
            src.close()
    except sqlite3.Error as error:
        raise _UnreadableRevisionsError(
            f"the config revisions of the replaced database {database} could not be read"
            f" ({error}); revision numbers it handed out may be used again"
        ) from None
    return columns, rows


def _revision_columns(conn: sqlite3.Connection) -> list[str]:
    return [str(row[1]) for row in conn.execute("PRAGMA table_info(config_revisions)")]


def _reserve_aside_name(database: Path, now: float | None) -> Path:
    """A name for the replaced database that no file has, neither it nor its sidecars
    (a stale ``-wal`` would be read as part of it), reserved by creating it empty."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.localtime(now))
    base = f"{database.name}.bak-{stamp}"
    for n in itertools.count(1):
        aside = database.with_name(base if n == 1 else f"{base}-{n}")
        if any(os.path.lexists(aside.with_name(aside.name + s)) for s in SIDECARS):
            continue
        with contextlib.suppress(FileExistsError):
            create_private(aside)
            return aside
    raise AssertionError("unreachable: itertools.count never ends")


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file: the same inode when both exist, else the same
    path once symlinks and ``..`` are resolved."""
    with contextlib.suppress(OSError):
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    return os.path.normcase(a.resolve()) == os.path.normcase(b.resolve())


def _remove_with_sidecars(path: Path) -> None:
    for name in (path.name, *(path.name + suffix for suffix in SIDECARS)):
        with contextlib.suppress(FileNotFoundError):
            path.with_name(name).unlink()

"""What the SQLite store checks about its files, outside SQLite: that the database is still
the file it opened, that its -shm can be written, that the disk has room.

Why: an open SQLite connection writes on into a database whose directory was deleted (the
rows go to an unlinked file and are lost at close), and SQLite maps the WAL index (-shm)
into memory: a -shm the process cannot write, or a full disk under it, can end the process
with SIGBUS instead of an error. Each check returns a ``StoreProblem`` (a stable code and
a message a person can act on), or None.
"""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Final, Literal

import msgspec

_EFFECTIVE_IDS: Final = os.access in os.supports_effective_ids

MIN_FREE_BYTES: Final = 256 * 1024
"""Below this much free space beside the database, the store counts as full: SQLite needs
room for the WAL and the -shm, and a write that finds none fails."""


ProblemCode = Literal[
    "state_dir_removed", "database_replaced", "shm_unwritable", "disk_full", "writes_failing",
    "store_unreachable", "usage_spool_full",  # a shared store (gw/startup/store_health.py)
]  # fmt: skip


class StoreProblem(msgspec.Struct, frozen=True):
    code: ProblemCode
    message: str


class StoreUnavailableError(OSError):
    """The database cannot be written now (its file is gone, say); the write is not
    attempted, so a caller that retries (the usage recorder) keeps its rows."""

    def __init__(self, problem: StoreProblem) -> None:
        super().__init__(problem.message)
        self.problem = problem


class DatabaseFile:
    """The database file as opened, held by a descriptor of its own: its link count says
    when it was deleted (an inode number alone does not: a new file may reuse it), its
    device and inode tell it from a file put at its path."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)

    def rebind(self) -> None:
        """The store reopened ``path``: that file is the one to watch now."""
        old, self._fd = self._fd, os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        os.close(old)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def gone(self) -> StoreProblem | None:
        """Why the opened file is no longer at its path; None while it is."""
        opened = os.fstat(self._fd)
        if opened.st_nlink > 0 and _identity(self.path) == (opened.st_dev, opened.st_ino):
            return None
        directory = self.path.parent
        if not directory.is_dir():
            return StoreProblem(
                "state_dir_removed",
                f"the state directory {directory} was removed: gw records nothing until it "
                "is back (usage rows wait in memory); recreate it, or restart gw",
            )
        what = "removed" if opened.st_nlink == 0 else "replaced"
        return StoreProblem(
            "database_replaced",
            f"the database {self.path} was {what} while gw had it open; the next write "
            "opens the file at that path",
        )

    def directory_back(self) -> bool:
        """Whether the database's directory exists again (the store may reopen)."""
        return self.path.parent.is_dir()


class GuardedLock(asyncio.Lock):
    """The store's lock, which every database call takes: refused (``StoreUnavailableError``)
    while ``check`` finds a problem. SQLite readers write to the memory-mapped -shm too,
    so a -shm that became unwritable (``chattr +i``, measured: SIGBUS on the next
    statement) must stop every call, not only writes; the check (one ``open``) costs
    microseconds against a statement's tens."""

    def __init__(self, check: Callable[[], StoreProblem | None]) -> None:
        super().__init__()
        self._check = check

    async def acquire(self) -> Literal[True]:
        problem = self._check()
        if problem is not None:
            raise StoreUnavailableError(problem)
        return await super().acquire()


def shm_problem(database: Path) -> StoreProblem | None:
    """Why the database's -shm (if there is one) cannot be written by this process.

    Asked with access(2), never by opening the file: closing any descriptor of a file
    drops every POSIX lock this process holds on it, SQLite's included. With its lock on
    the -shm gone, another process's connection takes itself for the first, truncates
    the -shm, and this process's mapping of it ends gw with SIGBUS (seen in the tests).
    """
    shm = database.with_name(database.name + "-shm")
    if os.access(shm, os.W_OK, effective_ids=_EFFECTIVE_IDS):
        return None
    try:
        os.lstat(shm)
    except FileNotFoundError:
        return None  # SQLite creates it
    except OSError as exc:
        reason = exc.strerror
    else:
        reason = "not writable"
    return StoreProblem(
        "shm_unwritable",
        f"cannot write {shm} ({reason}): SQLite maps it into memory, where an "
        "unwritable one can crash gw; fix its owner and permissions, or delete it while "
        "no gw process uses the database",
    )


def space_problem(database: Path) -> StoreProblem | None:
    """Why the disk holding the database has no room for writes; None when it has."""
    try:
        stats = os.statvfs(database.parent)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None  # DatabaseFile.gone says so
        return StoreProblem(
            "disk_full", f"cannot check the free space beside {database}: {exc.strerror}"
        )
    free = stats.f_bavail * stats.f_frsize
    if free < MIN_FREE_BYTES:
        return StoreProblem(
            "disk_full",
            f"the disk holding {database} is full ({free // 1024} KiB free): usage rows "
            "wait in memory until space is freed",
        )
    return None


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        stats = os.stat(path)
    except OSError:
        return None
    return stats.st_dev, stats.st_ino


def database_size(path: Path) -> int | None:
    """The database's bytes on disk, its write-ahead log included; None when missing."""
    try:
        size = path.stat().st_size
    except OSError:
        return None
    wal = path.with_name(path.name + "-wal")
    return size + (wal.stat().st_size if wal.exists() else 0)

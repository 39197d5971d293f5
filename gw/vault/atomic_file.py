"""Whole-file replacement that a crash cannot tear, and a lock shared across processes.

Strategy: write a temporary file in the target's directory (same filesystem, so the
rename is atomic), fsync it, ``os.replace`` it over the target, then fsync the directory
so the rename itself survives a power cut. A reader sees the old file or the new one,
never a mix. Read-modify-write cycles hold an exclusive ``flock`` on a separate lock file
(the target is replaced, so locking it would lock a file that is about to vanish).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

PRIVATE_MODE = 0o600


def write_atomic(path: Path, data: bytes, *, mode: int = PRIVATE_MODE) -> None:
    """Replace ``path`` with ``data``; on any failure ``path`` is left as it was."""
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=temporary_prefix(path), suffix=".tmp")
    try:
        with open(fd, "wb", closefd=True) as out:
            os.fchmod(out.fileno(), mode)
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    fsync_directory(path.parent)


def temporary_prefix(path: Path) -> str:
    return f".{path.name}."


def remove_leftovers(path: Path) -> None:
    """Delete temporary files a killed writer of ``path`` left behind; call it only while
    holding the lock that every writer of ``path`` holds."""
    for leftover in path.parent.glob(f"{temporary_prefix(path)}*.tmp"):
        with contextlib.suppress(OSError):
            leftover.unlink()


def fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def locked(path: Path, *, shared: bool = False) -> Iterator[None]:
    """Hold ``flock`` on ``path`` (created 0600 when missing) for the ``with`` block;
    ``shared`` lets readers in together while a writer waits for them."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, PRIVATE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock

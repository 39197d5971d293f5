"""Files only gw's own user may read: the database (traces, usage, key hashes) and its copies.

SQLite gives a database's -wal and -shm files the mode of the database file, so a database
created private stays private.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import Final

FILE_MODE: Final = 0o600
DIR_MODE: Final = 0o700
_SIDECARS = ("", "-wal", "-shm")


def create_private(path: Path) -> None:
    """Create ``path`` empty with mode 0600, whatever the umask; ``FileExistsError`` when
    any file (or symlink) has that name."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)  # os.open applied the umask: 0o277 would leave it 0400
    finally:
        os.close(fd)


def make_database_private(path: Path) -> None:
    """Create the database file at ``path`` private if it does not exist; take group and
    other access away from an existing one (and its -wal and -shm) made by an older gw."""
    with contextlib.suppress(FileExistsError):
        create_private(path)
    for suffix in _SIDECARS:
        sidecar = path.with_name(path.name + suffix)
        with contextlib.suppress(FileNotFoundError):
            mode = stat.S_IMODE(sidecar.stat().st_mode)
            if mode & 0o077:
                sidecar.chmod(mode & 0o700)

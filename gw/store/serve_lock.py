"""One ``gw serve`` per state directory: an exclusive lock on ``<state-dir>/serve.lock``,
held for the server's life. The kernel drops it when the process ends, however it ends,
so a crash leaves no stale lock behind.

Two servers on one state directory would overwrite each other's ``server.json``: the CLI
would lose track of the first, and ``gw state restore`` could replace the database under it.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_FILE_NAME = "serve.lock"


class StateDirBusyError(Exception):
    """Another process holds the state directory's serve lock."""


class ServeLock:
    """``acquire`` once; the lock is held until ``release`` or the process ends."""

    def __init__(self, home: Path) -> None:
        self.path = home / LOCK_FILE_NAME
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise ``StateDirBusyError`` at once (never waits)."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StateDirBusyError(str(self.path)) from None
        except OSError:
            os.close(fd)
            raise
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the descriptor drops the lock

"""The local admin token, ``<state-dir>/admin-token``: how the gw CLI on this machine (and
anything else run by the same user) proves itself to the admin API without a configured key.

``gw serve`` writes a fresh random token (256 bits) at every start, so a copy that leaked
dies with the next restart, and removes the file when it stops (gw/wiring.py). The file
is owner-only (0600) from its first byte: the token is written to a temporary file that
``mkstemp`` creates 0600 with ``O_EXCL``, then renamed over the old file, so no reader ever
sees the file world-readable or half written, and whatever stood at that name (a file with
a looser mode, a symlink) is replaced rather than written through. A reader refuses a token file
that group or others may read: someone loosened it, and the token may be known.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Final

ADMIN_TOKEN_FILE_NAME: Final = "admin-token"  # noqa: S105 - a file name, not a secret
TOKEN_BYTES: Final = 32  # 256 bits
# Tells it from an API key in a shell history or a leak scan; a prefix, not a secret.
TOKEN_PREFIX: Final = "gw-local-"  # noqa: S105


class AdminTokenError(Exception):
    """The token file exists but may not be used (a loose mode, unreadable)."""


def admin_token_path(home: Path) -> Path:
    return home / ADMIN_TOKEN_FILE_NAME


def new_admin_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)


def write_admin_token(home: Path, make: Callable[[], str] = new_admin_token) -> str:
    """A new token, written to ``<home>/admin-token`` (0600, atomically); the token."""
    token = make()
    path = admin_token_path(home)
    # mkstemp: O_CREAT | O_EXCL with mode 0600, whatever the umask.
    fd, temp = tempfile.mkstemp(dir=home, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with open(fd, "w", encoding="ascii", closefd=True) as out:
            os.fchmod(out.fileno(), 0o600)
            out.write(token + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)  # a rename: a symlink at ``path`` is replaced, not followed
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return token


def read_admin_token(home: Path) -> str | None:
    """The token ``gw serve`` wrote in ``home``; None when there is no file. Raises
    ``AdminTokenError`` for a file others may read, or one that cannot be read."""
    path = admin_token_path(home)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise AdminTokenError(f"cannot read the admin token {path}: {error.strerror}") from None
    try:
        mode = stat.S_IMODE(os.fstat(fd).st_mode)
        if mode & 0o077:
            raise AdminTokenError(
                f"the admin token {path} has mode {mode:04o}, so others may read it; gw "
                "refuses to use it: restart gw serve, which writes a new one (mode 0600)"
            )
        with open(fd, encoding="ascii", errors="replace", closefd=False) as handle:
            token = handle.read().strip()
    finally:
        os.close(fd)
    return token or None

"""The key file, ``<state-dir>/vault.key``: the identity's home when there is neither
``GW_VAULT_KEY`` nor a usable OS keyring. Owner-only (0600); a looser mode is refused
rather than used, because anyone who can read the file can read every secret."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from gw.vault.atomic_file import PRIVATE_MODE, write_atomic
from gw.vault.errors import IdentityError
from gw.vault.identity import Identity


def read_key_file(path: Path) -> Identity | None:
    """The identity in ``path``, or None when there is no such file."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise IdentityError(f"cannot read the vault key file {path}: {exc.strerror}") from None
    try:
        mode = stat.S_IMODE(os.fstat(fd).st_mode)
        if mode & 0o077:
            raise IdentityError(
                f"the vault key file {path} has mode {mode:04o}, so others may read it; "
                f"gw refuses to use it: run `chmod 600 {path}` (and consider `gw vault rotate`)"
            )
        with open(fd, encoding="utf-8", errors="replace", closefd=False) as handle:
            text = handle.read()
    finally:
        os.close(fd)
    return Identity.parse(text, where=f"the vault key file {path}")


def write_key_file(path: Path, identity: Identity) -> None:
    """Write (or replace) ``path`` atomically, owner-only, in age-keygen's format."""
    try:
        write_atomic(path, identity.key_file_text().encode(), mode=PRIVATE_MODE)
    except OSError as exc:
        raise IdentityError(f"cannot write the vault key file {path}: {exc.strerror}") from None

"""Content gw must hold for a while (a background Responses job's request and answer),
encrypted at rest with the vault's identity.

The identity is the vault's own (``GW_VAULT_KEY``, the OS keyring, or ``vault.key``:
gw/vault/sources.py), so the content survives a restart and no second key store exists.
When no identity exists yet one is created where ``gw vault init`` would create it, and
``gw vault init`` later adopts it. It is looked for only when content is first sealed or
opened: a gw that never holds content never touches the keyring.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path

import pyrage  # type: ignore[import-untyped]  # pyrage ships no type information

from gw.vault.errors import VaultUnreadableError
from gw.vault.identity import Identity
from gw.vault.os_keyring import OsKeyring
from gw.vault.sealing import is_age_file
from gw.vault.sources import IdentityChain


class ContentSeal:
    """Seals bytes to the vault identity and opens them again. Thread-safe: the first
    use may run in a worker thread (the keyring may block)."""

    def __init__(
        self,
        home: Path,
        environ: Mapping[str, str],
        keyring: Callable[[], OsKeyring] = OsKeyring.detect,
    ) -> None:
        self._home = home
        self._chain = IdentityChain(home, environ, keyring)
        self._identity: Identity | None = None
        self._where = ""
        self._lock = threading.Lock()

    def identity(self) -> Identity:
        """The vault identity, found (or created) on first use; ``IdentityError`` when
        one exists but cannot be read."""
        with self._lock:
            if self._identity is None:
                located = self._chain.locate()
                if located is None:
                    self._home.mkdir(parents=True, exist_ok=True, mode=0o700)
                    located = self._chain.create()
                self._identity, self._where = located.identity, located.where
            return self._identity

    def seal(self, plain: bytes) -> bytes:
        """``plain`` as a binary age file, for this identity only."""
        return bytes(pyrage.encrypt(plain, [self.identity().native_recipient()]))

    def open(self, sealed: bytes) -> bytes:
        """What ``seal`` sealed; ``VaultUnreadableError`` when it was sealed to another
        identity (the vault key changed since) or is damaged."""
        identity = self.identity()
        if not is_age_file(sealed):
            raise VaultUnreadableError("stored content is not age-encrypted (damaged)")
        try:
            return bytes(pyrage.decrypt(sealed, [identity.native]))
        except pyrage.DecryptError:
            raise VaultUnreadableError(
                f"stored content does not decrypt with the vault identity from {self._where}"
                f" (recipient {identity.recipient}): it was sealed to another identity"
            ) from None

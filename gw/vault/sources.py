"""Where the vault identity comes from, in order: ``GW_VAULT_KEY``, then the OS keyring
(when a backend is usable and holds an entry for this state dir), then the key file
``<state-dir>/vault.key`` (mode 0600). A new identity goes to the keyring when it is
usable, else to the key file; ``GW_VAULT_KEY`` is the user's to set, never gw's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from gw.vault.errors import IdentityError
from gw.vault.identity import Identity
from gw.vault.keyfile import read_key_file, write_key_file
from gw.vault.os_keyring import SERVICE, OsKeyring, keyring_username

ENV_VAR: Final = "GW_VAULT_KEY"
KEY_FILE_NAME: Final = "vault.key"

IdentitySource = Literal["env", "keyring", "file"]


@dataclass(frozen=True)
class LocatedIdentity:
    """An identity and where it lives (``where`` is for people: a variable, a keyring
    entry or a path). The identity's repr shows its recipient only."""

    identity: Identity
    source: IdentitySource
    where: str


class IdentityChain:
    """Finds, creates and replaces the identity of the vault in ``home``."""

    def __init__(
        self, home: Path, environ: Mapping[str, str], keyring: Callable[[], OsKeyring]
    ) -> None:
        self.key_path = home / KEY_FILE_NAME
        self.username = keyring_username(home)
        self._environ = environ
        self._keyring_factory = keyring
        self._keyring: OsKeyring | None = None

    @property
    def keyring(self) -> OsKeyring:
        """Detected on first use: with ``GW_VAULT_KEY`` set it is never touched."""
        if self._keyring is None:
            self._keyring = self._keyring_factory()
        return self._keyring

    def keyring_where(self) -> str:
        return f"the OS keyring (service {SERVICE!r}, user {self.username!r})"

    def locate(self) -> LocatedIdentity | None:
        """The identity in use, or None when no source has one."""
        if self._environ.get(ENV_VAR):
            identity = Identity.parse(self._environ[ENV_VAR], where=f"${ENV_VAR}")
            return LocatedIdentity(identity=identity, source="env", where=f"${ENV_VAR}")
        stored = self.keyring.read(self.username)
        if stored:
            where = self.keyring_where()
            return LocatedIdentity(
                identity=Identity.parse(stored, where=where), source="keyring", where=where
            )
        from_file = read_key_file(self.key_path)
        if from_file is not None:
            return LocatedIdentity(identity=from_file, source="file", where=str(self.key_path))
        return None

    def require(self) -> LocatedIdentity:
        located = self.locate()
        if located is None:
            raise IdentityError(self.missing_explanation())
        return located

    def missing_explanation(self) -> str:
        keyring = (
            f"{self.keyring_where()} has no entry"
            if self.keyring.usable
            else f"the OS keyring is unusable ({self.keyring.reason})"
        )
        return (
            f"no vault identity: ${ENV_VAR} is not set, {keyring}, and {self.key_path} "
            "does not exist; run `gw vault init` (or set the identity the vault was made "
            f"for in ${ENV_VAR})"
        )

    def create(self) -> LocatedIdentity:
        """A new identity, stored in the keyring when usable, else in the key file."""
        identity = Identity.generate()
        if self.keyring.write(self.username, identity.secret_text()):
            return LocatedIdentity(identity=identity, source="keyring", where=self.keyring_where())
        write_key_file(self.key_path, identity)
        return LocatedIdentity(identity=identity, source="file", where=str(self.key_path))

    def replace(self, current: LocatedIdentity, identity: Identity) -> LocatedIdentity:
        """Store ``identity`` where ``current`` lives, in place of it."""
        self.check_replaceable(current)
        if current.source == "keyring":
            if not self.keyring.write(self.username, identity.secret_text()):
                raise IdentityError(
                    f"cannot store the new identity in {self.keyring_where()}: "
                    f"{self.keyring.reason}; the vault still opens with the old identity"
                )
            return LocatedIdentity(identity=identity, source="keyring", where=current.where)
        write_key_file(self.key_path, identity)
        return LocatedIdentity(identity=identity, source="file", where=current.where)

    def check_replaceable(self, current: LocatedIdentity) -> None:
        """Refuse before anything is written when gw could not store a new identity."""
        if current.source == "env":
            raise IdentityError(
                f"the vault identity comes from ${ENV_VAR}, which gw cannot change: write "
                f"that key to {self.key_path} (mode 0600), unset ${ENV_VAR}, run "
                "`gw vault rotate` again, then use the new key from that file"
            )

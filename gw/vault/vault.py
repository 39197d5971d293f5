"""The vault: ``<state-dir>/vault.age``, an age file holding NAME -> secret as JSON.

Every change is a read-modify-write under an exclusive lock on ``vault.lock``, so
concurrent ``gw vault set`` calls in several processes never lose each other's writes;
the file is replaced atomically, so a crash leaves the old vault or the new one. A file
that cannot be opened (not age, another identity, not a gw vault) stops every change
before anything is written: nothing is ever overwritten that could not be read.

Rotation writes the vault to both the old and the new identity, then stores the new
identity in place of the old, then drops the old recipient: at every step the stored
identity opens the file on disk.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Final

import msgspec

from gw.vault.atomic_file import locked, remove_leftovers, write_atomic
from gw.vault.contents import Secrets, check_name
from gw.vault.errors import (
    IdentityError,
    NoVaultError,
    UnknownSecretError,
    VaultError,
    VaultExistsError,
    VaultUnreadableError,
)
from gw.vault.identity import Identity
from gw.vault.os_keyring import OsKeyring
from gw.vault.sealing import seal, unseal
from gw.vault.sources import IdentityChain, IdentitySource, LocatedIdentity

VAULT_FILE_NAME: Final = "vault.age"
LOCK_FILE_NAME: Final = "vault.lock"


class VaultStatus(msgspec.Struct, frozen=True, kw_only=True):
    """What ``gw vault status`` reports; no secret, no identity."""

    path: str
    exists: bool
    identity_source: IdentitySource | None
    identity_location: str | None
    recipient: str | None
    secrets: int | None
    key_file: str
    keyring: str


class InitResult(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    identity_source: IdentitySource
    identity_location: str
    recipient: str
    created_identity: bool


class RotateResult(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    identity_source: IdentitySource
    identity_location: str
    old_recipient: str
    recipient: str
    secrets: int


class Vault:
    """The vault of the state dir ``home``; ``keyring`` is called when the keyring is
    first needed (never while ``GW_VAULT_KEY`` is set)."""

    def __init__(
        self,
        home: Path,
        environ: Mapping[str, str],
        keyring: Callable[[], OsKeyring] = OsKeyring.detect,
    ) -> None:
        self.home = home
        self.path = home / VAULT_FILE_NAME
        self.lock_path = home / LOCK_FILE_NAME
        self.identities = IdentityChain(home, environ, keyring)

    def read(self) -> Secrets:
        """Every secret, for the server to resolve ``vault:NAME`` references."""
        self.require_exists()
        with self._locked(shared=True):
            return self._open(self.identities.require())

    def names(self) -> list[str]:
        return self.read().names()

    def init(self) -> InitResult:
        """An empty vault, for the identity in use, or a new one when there is none."""
        self.home.mkdir(parents=True, exist_ok=True, mode=0o700)
        with self._locked():
            if self.path.exists():
                raise VaultExistsError(
                    f"{self.path} already exists; nothing changed: `gw vault set NAME` adds "
                    "a secret, `gw vault rotate` changes the identity; to start over, move "
                    "the file away first"
                )
            located = self.identities.locate()
            created = located is None
            if located is None:
                located = self.identities.create()
            self._write(Secrets(), [located.identity])
        return InitResult(
            path=str(self.path),
            identity_source=located.source,
            identity_location=located.where,
            recipient=located.identity.recipient,
            created_identity=created,
        )

    def set(self, name: str, secret: str) -> int:
        """Store ``secret`` under ``name`` (replacing any); the number of secrets after."""
        check_name(name)
        if not secret:
            raise VaultError(f"the secret for {name} is empty; nothing stored")
        return len(self._change(lambda secrets: secrets.with_secret(name, secret)))

    def remove(self, name: str) -> int:
        """Forget ``name``; the number of secrets after."""

        def without(secrets: Secrets) -> Secrets:
            if name not in secrets:
                raise UnknownSecretError(
                    f"the vault {self.path} holds no secret named {name!r}; "
                    "`gw vault list` shows the names"
                )
            return secrets.without(name)

        return len(self._change(without))

    def rotate(self) -> RotateResult:
        """A new identity; the old one opens the vault until the new one is stored."""
        self.require_exists()
        with self._locked():
            old = self.identities.require()
            secrets = self._open(old)
            self.identities.check_replaceable(old)
            new = Identity.generate()
            self._write(secrets, [old.identity, new])
            try:
                stored = self.identities.replace(old, new)
            except BaseException:
                # Best effort: drop the recipient nobody kept. The file opens with the old
                # identity either way, so a failure here changes nothing that matters.
                with contextlib.suppress(VaultError):
                    self._write(secrets, [old.identity])
                raise
            self._write(secrets, [new])
        return RotateResult(
            path=str(self.path),
            identity_source=stored.source,
            identity_location=stored.where,
            old_recipient=old.identity.recipient,
            recipient=new.recipient,
            secrets=len(secrets),
        )

    def status(self) -> VaultStatus:
        exists = self.path.exists()
        located = self.identities.locate()
        count = None
        if exists:
            if located is None:
                raise IdentityError(self.identities.missing_explanation())
            with self._locked(shared=True):
                count = len(self._open(located))
        return VaultStatus(
            path=str(self.path),
            exists=exists,
            identity_source=located.source if located else None,
            identity_location=located.where if located else None,
            recipient=located.identity.recipient if located else None,
            secrets=count,
            key_file=str(self.identities.key_path),
            keyring=self.identities.keyring.describe(),
        )

    def _change(self, change: Callable[[Secrets], Secrets]) -> Secrets:
        self.require_exists()
        with self._locked():
            located = self.identities.require()
            updated = change(self._open(located))
            self._write(updated, [located.identity])
        return updated

    def require_exists(self) -> None:
        """Raise NoVaultError (which says to run `gw vault init`) when there is no vault."""
        if not self.path.exists():
            raise self._missing()

    def _missing(self) -> NoVaultError:
        return NoVaultError(
            f"no vault at {self.path}; run `gw vault init` first "
            "(or pass the --state-dir that holds it)"
        )

    def _open(self, located: LocatedIdentity) -> Secrets:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            raise self._missing() from None
        except OSError as exc:
            raise VaultUnreadableError(f"cannot read {self.path}: {exc.strerror}") from None
        return unseal(data, located.identity, path=self.path, where=located.where)

    def _write(self, secrets: Secrets, recipients: Sequence[Identity]) -> None:
        try:
            write_atomic(self.path, seal(secrets, recipients))
        except OSError as exc:
            raise VaultError(
                f"cannot write {self.path}: {exc.strerror}; the previous vault is unchanged"
            ) from None

    @contextlib.contextmanager
    def _locked(self, *, shared: bool = False) -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            try:
                stack.enter_context(locked(self.lock_path, shared=shared))
            except OSError as exc:
                raise VaultError(f"cannot lock {self.lock_path}: {exc.strerror}") from None
            if not shared:  # every writer holds this lock: what a killed one left is stale
                remove_leftovers(self.path)
                remove_leftovers(self.identities.key_path)
            yield

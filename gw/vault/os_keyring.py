"""The OS keyring, when it is usable, as a place for the vault identity.

Headless Linux and CI have no keyring backend (``keyring`` picks its ``fail`` backend,
which raises ``NoKeyringError``), or a D-Bus without a secret-service daemon (a
``RuntimeError`` or ``KeyringError`` on first use); a chainer with nothing to chain and
the ``null`` backend store nothing. All of these count as "no keyring", and the reason is
kept for ``gw vault status``. keyrings.alt is deliberately not used: its "encryption" is
base64.

``keyring`` is imported on first use (it takes ~70 ms), so commands and a server that
never need the keyring never pay for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from keyring.backend import KeyringBackend

SERVICE: Final = "gw"


def backend_errors() -> tuple[type[Exception], ...]:
    """What a broken or absent backend raises: keyring's own errors (NoKeyringError,
    KeyringLocked, InitError, PasswordSetError, ...), D-Bus failures surfacing as
    RuntimeError, and socket-level OSError."""
    from keyring.errors import KeyringError  # noqa: PLC0415  (see module docstring)

    return (KeyringError, RuntimeError, OSError)


def keyring_username(home: Path) -> str:
    """One keyring entry per state dir, so two gw homes keep two vaults apart."""
    return f"vault:{home.resolve()}"


def unusable_reason(backend: KeyringBackend) -> str | None:
    """Why ``backend`` cannot hold the identity, or None when it can."""
    from keyring.backends import chainer, fail, null  # noqa: PLC0415  (see module docstring)

    if isinstance(backend, fail.Keyring):
        return "no keyring backend is available (no secret service or keychain)"
    if isinstance(backend, null.Keyring):
        return "the keyring is disabled (null backend)"
    if isinstance(backend, chainer.ChainerBackend) and not backend.backends:
        return "no keyring backend is available (the chainer has nothing to chain)"
    return None


def backend_error(exc: BaseException) -> str:
    """A keyring failure for the user: its type and text (keyring messages carry no secret)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class OsKeyring:
    """Reads and writes the identity in one backend; once a call fails, it is unusable
    for the rest of the process and ``reason`` says why."""

    def __init__(self, backend: KeyringBackend | None, reason: str | None = None) -> None:
        self._backend = backend
        self._reason = reason
        if backend is not None and reason is None:
            self._reason = unusable_reason(backend)
            if self._reason is not None:
                self._backend = None

    @classmethod
    def detect(cls) -> OsKeyring:
        """The process's keyring (``PYTHON_KEYRING_BACKEND`` and keyringrc apply)."""
        import keyring  # noqa: PLC0415  (see module docstring)

        try:
            return cls(keyring.get_keyring())
        except backend_errors() as exc:
            return cls(None, f"the keyring failed to load ({backend_error(exc)})")

    @classmethod
    def disabled(cls, reason: str) -> OsKeyring:
        return cls(None, reason)

    @property
    def usable(self) -> bool:
        return self._backend is not None

    @property
    def reason(self) -> str:
        """Why the keyring is unusable ('' while it is usable)."""
        return self._reason or ""

    def describe(self) -> str:
        if self._backend is None:
            return f"unavailable: {self.reason}"
        return f"usable: {type(self._backend).__module__}.{type(self._backend).__name__}"

    def read(self, username: str) -> str | None:
        """The stored value, or None when absent or when the keyring turns out unusable."""
        if self._backend is None:
            return None
        try:
            return self._backend.get_password(SERVICE, username)
        except backend_errors() as exc:
            self._give_up(exc)
            return None

    def write(self, username: str, value: str) -> bool:
        """Store ``value`` and read it back; False (and unusable) when that fails."""
        if self._backend is None:
            return False
        try:
            self._backend.set_password(SERVICE, username, value)
            stored = self._backend.get_password(SERVICE, username)
        except backend_errors() as exc:
            self._give_up(exc)
            return False
        if stored != value:
            self._give_up(RuntimeError("the keyring did not keep the value it was given"))
            return False
        return True

    def _give_up(self, exc: BaseException) -> None:
        self._backend = None
        self._reason = f"the keyring failed ({backend_error(exc)})"

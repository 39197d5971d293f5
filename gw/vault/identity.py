"""An age x25519 identity, held so that it never shows in a repr, a log line or a traceback.

The text forms are age's own: ``AGE-SECRET-KEY-1...`` for the identity and ``age1...`` for
its recipient, and a key file is what ``age-keygen`` writes (comment lines, then the key),
so ``age -d -i vault.key vault.age`` works on gw's files.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pyrage  # type: ignore[import-untyped]  # pyrage ships no type information

from gw.vault.errors import IdentityError

SECRET_PREFIX = "AGE-SECRET-KEY-1"  # noqa: S105  (the format's prefix, not a secret)


class Identity:
    """A private key and its public recipient. ``repr`` shows the recipient only."""

    __slots__ = ("_native", "recipient")

    def __init__(self, native: Any) -> None:
        self._native = native
        self.recipient: str = str(native.to_public())

    @classmethod
    def generate(cls) -> Identity:
        return cls(pyrage.x25519.Identity.generate())

    @classmethod
    def parse(cls, text: str, *, where: str) -> Identity:
        """A bare ``AGE-SECRET-KEY-1...`` or a key file's text; ``where`` names the source
        for the error (the text itself is never quoted)."""
        lines = (line.strip() for line in text.splitlines())
        keys = [line for line in lines if line and not line.startswith("#")]
        if len(keys) != 1 or not keys[0].startswith(SECRET_PREFIX):
            raise IdentityError(
                f"{where} does not hold one age identity (a line AGE-SECRET-KEY-1..., "
                "as age-keygen writes it)"
            )
        try:
            return cls(pyrage.x25519.Identity.from_str(keys[0]))
        except pyrage.IdentityError:
            raise IdentityError(
                f"{where} holds a malformed age identity (AGE-SECRET-KEY-1...); "
                "check that it was copied whole"
            ) from None

    @property
    def native(self) -> Any:
        """pyrage's identity object, for decryption."""
        return self._native

    def native_recipient(self) -> Any:
        return self._native.to_public()

    def secret_text(self) -> str:
        """The ``AGE-SECRET-KEY-1...`` string: only for storing it where it belongs."""
        return str(self._native)

    def key_file_text(self, now: datetime | None = None) -> str:
        """What ``age-keygen`` writes: readable by ``age -d -i``."""
        created = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return f"# created: {created}\n# public key: {self.recipient}\n{self.secret_text()}\n"

    def __repr__(self) -> str:
        return f"Identity(recipient={self.recipient!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Identity) and other.recipient == self.recipient

    def __hash__(self) -> int:
        return hash(self.recipient)

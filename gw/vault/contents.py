"""What a vault holds: a JSON object of NAME -> secret, and the rule for names."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Final

import msgspec

from gw.vault.errors import InvalidNameError

NAME_PATTERN: Final = re.compile(r"[A-Za-z0-9_.-]{1,64}")
NAME_RULE: Final = "1 to 64 of A-Z a-z 0-9 _ . -"

_decode = msgspec.json.Decoder(dict[str, str]).decode


def is_valid_name(name: str) -> bool:
    return NAME_PATTERN.fullmatch(name) is not None


def check_name(name: str) -> str:
    if not is_valid_name(name):
        raise InvalidNameError(f"invalid secret name {name!r}: use {NAME_RULE}")
    return name


class Secrets(Mapping[str, str]):
    """NAME -> secret, read-only. Its ``repr`` lists the names, never a value."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        self._values = dict(values or {})

    def __getitem__(self, name: str) -> str:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def names(self) -> list[str]:
        return sorted(self._values)

    def with_secret(self, name: str, secret: str) -> Secrets:
        return Secrets({**self._values, check_name(name): secret})

    def without(self, name: str) -> Secrets:
        return Secrets({key: value for key, value in self._values.items() if key != name})

    def __repr__(self) -> str:
        return f"Secrets(names={self.names()!r})"


def encode_secrets(secrets: Secrets) -> bytes:
    """Sorted by name, so that ``age -d`` shows a stable document."""
    return msgspec.json.encode({name: secrets[name] for name in secrets.names()})


def decode_secrets(document: bytes) -> Secrets | str:
    """The secrets, or why ``document`` is not a gw vault (never quoting a value)."""
    try:
        values = _decode(document)
    except msgspec.ValidationError:
        return "it is JSON, but not an object of NAME -> secret string"
    except msgspec.DecodeError:
        return "its contents are not JSON"
    bad = sorted(name for name in values if not is_valid_name(name))
    if bad:
        return (
            f"it holds names gw does not accept ({', '.join(map(repr, bad[:3]))}; use {NAME_RULE})"
        )
    return Secrets(values)

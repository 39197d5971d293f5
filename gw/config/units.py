"""Human units in config: durations ("150ms", "2s", "10m") and sizes ("8MiB")."""

from __future__ import annotations

import re
from typing import Any

# Also the patterns of gw's JSON Schema (gw/config/json_schema.py): ECMA-262 reads them too.
DURATION_PATTERN = r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$"
SIZE_PATTERN = r"^\s*(\d+(?:\.\d+)?)\s*(B|KB|KiB|MB|MiB|GB|GiB)?\s*$"
_DURATION = re.compile(DURATION_PATTERN)
_DURATION_FACTORS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}
_SIZE = re.compile(SIZE_PATTERN)
_SIZE_FACTORS = {
    None: 1,
    "B": 1,
    "KB": 1000,
    "KiB": 1024,
    "MB": 1000**2,
    "MiB": 1024**2,
    "GB": 1000**3,
    "GiB": 1024**3,
}


class Duration:
    """A length of time; a bare number means seconds."""

    __slots__ = ("seconds",)

    def __init__(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a duration cannot be negative")
        self.seconds = float(seconds)

    @classmethod
    def parse(cls, value: Any) -> Duration:
        if isinstance(value, bool):
            raise TypeError("expected a duration such as 150ms, 2s or 10m")
        if isinstance(value, int | float):
            return cls(float(value))
        if isinstance(value, str) and (match := _DURATION.match(value)):
            return cls(float(match.group(1)) * _DURATION_FACTORS[match.group(2)])
        raise ValueError(f"{value!r} is not a duration; write e.g. 150ms, 2s, 10m, 1h or 7d")

    def __str__(self) -> str:
        ms = round(self.seconds * 1000)
        for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
            if ms >= size and ms % size == 0:
                return f"{ms // size}{unit}"
        return f"{ms}ms"

    def __repr__(self) -> str:
        return f"Duration({self})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Duration) and other.seconds == self.seconds

    def __hash__(self) -> int:
        return hash(self.seconds)


class ByteSize:
    """A number of bytes; a bare number means bytes."""

    __slots__ = ("bytes",)

    def __init__(self, count: int) -> None:
        if count <= 0:
            raise ValueError("a size must be positive")
        self.bytes = int(count)

    @classmethod
    def parse(cls, value: Any) -> ByteSize:
        if isinstance(value, bool):
            raise TypeError("expected a size such as 512KiB or 8MiB")
        if isinstance(value, int):
            return cls(value)
        if isinstance(value, str) and (match := _SIZE.match(value)):
            return cls(int(float(match.group(1)) * _SIZE_FACTORS[match.group(2)]))
        raise ValueError(f"{value!r} is not a size; write e.g. 512KiB or 8MiB")

    def __str__(self) -> str:
        for unit in ("GiB", "MiB", "KiB"):
            size = _SIZE_FACTORS[unit]
            if self.bytes % size == 0:
                return f"{self.bytes // size}{unit}"
        return str(self.bytes)

    def __repr__(self) -> str:
        return f"ByteSize({self})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ByteSize) and other.bytes == self.bytes

    def __hash__(self) -> int:
        return hash(self.bytes)


def decode_unit(kind: type, value: Any) -> Any:
    """msgspec dec_hook: turn config scalars into units; errors get the field path."""
    if kind is Duration:
        return Duration.parse(value)
    if kind is ByteSize:
        return ByteSize.parse(value)
    raise NotImplementedError(f"no decoder for {kind!r}")


def encode_unit(value: Any) -> Any:
    """msgspec enc_hook: units back to the text a user would write."""
    if isinstance(value, Duration | ByteSize):
        return str(value)
    raise NotImplementedError(f"cannot encode {type(value)!r}")

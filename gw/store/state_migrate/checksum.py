"""A checksum of a table's rows that both engines give alike (no I/O).

Each row is encoded canonically, hashed (SHA-256), and the hashes are summed modulo
2**256: the sum does not depend on the order rows are read in, so neither engine's
collation nor its NULL ordering can make equal tables differ, while a row changed,
missing or duplicated changes it. Before encoding, values are brought to one form per
kind, erasing only what differs by engine and never by content: a boolean is the
integer SQLite stores (0/1), a float with an integral value the integer (SQLite may
give ``5`` where PostgreSQL gives ``5.0``), and text and bytes are one kind (SQLite keeps
a trace's JSON as a BLOB, PostgreSQL as text).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from typing import Final

_MODULUS: Final = 1 << 256


def encode_value(value: object) -> bytes:
    """One value, tagged by kind and length-prefixed so adjacent values cannot run together."""
    if value is None:
        return b"n"
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        data, tag = str(value).encode(), b"i"
    elif isinstance(value, float):
        data, tag = repr(value).encode(), b"f"
    elif isinstance(value, str):
        data, tag = value.encode(), b"s"
    elif isinstance(value, bytes | bytearray | memoryview):
        data, tag = bytes(value), b"s"
    else:
        raise TypeError(f"no canonical form for a {type(value).__name__}")
    return tag + len(data).to_bytes(8, "big") + data


def row_hash(row: Sequence[object]) -> int:
    digest = hashlib.sha256(b"".join(encode_value(value) for value in row)).digest()
    return int.from_bytes(digest, "big")


class TableChecksum:
    """Rows counted and hashed as they stream past, in any order."""

    def __init__(self) -> None:
        self.rows = 0
        self._sum = 0

    def add(self, rows: Iterable[Sequence[object]]) -> None:
        for row in rows:
            self.rows += 1
            self._sum = (self._sum + row_hash(row)) % _MODULUS

    @property
    def hexdigest(self) -> str:
        return f"{self._sum:064x}"

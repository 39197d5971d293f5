"""Which tables and columns a migration copies, and how a value fits its new column
(no I/O).

The column lists come from both databases' own schemas, so a migration that adds a
column needs no change here: a column both sides have is copied; one only the
destination has takes its default; one only the source has stops the migration (its
data would be lost), except the few that mean something only inside one database
(``LOCAL_COLUMNS``), which are never copied.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Final, Literal

import msgspec

from gw.store.migrations import StoreError

Kind = Literal["text", "blob", "integer", "real", "boolean"]

LOCAL_COLUMNS: Final = frozenset(
    {
        # PostgreSQL's stand-in for SQLite's rowid (``gw traces --follow``): numbered afresh
        # in the order the traces are copied, which is the source's.
        ("traces", "seq"),
        # The gateway running a job or a run (gw/store/postgres/runner.py): a random id held
        # by a live connection to the source database, meaningless in another.
        ("response_jobs", "runner"),
        ("runs", "runner"),
    }
)

DERIVED_TABLES: Final = ("policy_spend", "usage_rollup")
"""Tables a trigger fills from another one's inserts: copied last, after the rows the
trigger made from the copy are cleared, so they hold the source's own rows (verified like
any other) rather than a recomputation that may round differently."""

SKIPPED_TABLES: Final = frozenset(
    {
        "schema_version",  # each side's own migration history
        # A fleet's registry of the gateways running on that database (PostgreSQL only): each
        # registers itself when it starts, so a copy would only list gateways that are gone.
        "gateways",
    }
)
"""Tables that are not gw state to carry over: neither copied nor counted as data."""


class TableShape(msgspec.Struct, frozen=True, kw_only=True):
    """A table as one database has it: its columns (in order) and their kinds."""

    name: str
    columns: Mapping[str, Kind]


class TablePlan(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    columns: tuple[str, ...]  # copied and checksummed, in this order (by name)
    kinds: tuple[Kind, ...]  # the destination's kind of each


def plan_tables(
    source: Mapping[str, TableShape], destination: Mapping[str, TableShape]
) -> tuple[TablePlan, ...]:
    """The tables to copy, in order; raises ``StoreError`` naming every source table or
    column the destination has no place for."""
    problems: list[str] = []
    plans: list[TablePlan] = []
    for name in sorted(set(source) - SKIPPED_TABLES, key=_order):
        theirs = destination.get(name)
        if theirs is None:
            problems.append(f"table {name}")
            continue
        ours = source[name].columns
        missing = [c for c in ours if c not in theirs.columns and (name, c) not in LOCAL_COLUMNS]
        problems.extend(f"column {name}.{c}" for c in missing)
        # By name, not position: a column added by a migration comes last in SQLite but
        # may sit elsewhere in PostgreSQL's baseline, and a checksum must not depend on it.
        columns = tuple(
            sorted(c for c in ours if c in theirs.columns and (name, c) not in LOCAL_COLUMNS)
        )
        plans.append(
            TablePlan(name=name, columns=columns, kinds=tuple(theirs.columns[c] for c in columns))
        )
    if problems:
        raise StoreError(
            "the destination has no place for the source's "
            + ", ".join(problems)
            + ": both must be at the same schema version (run this with the gw that wrote"
            " the source)"
        )
    return tuple(plans)


def _order(name: str) -> tuple[bool, str]:
    return (name in DERIVED_TABLES, name)


def fit(value: object, kind: Kind) -> object:
    """``value`` as the destination's column of ``kind`` takes it (the checksum treats
    both forms alike: checksum.py)."""
    if value is None:
        return None
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode() if kind == "text" else value
    if kind == "blob" and isinstance(value, str):
        return value.encode()
    if isinstance(value, int | float):
        return _NUMBER_FITS.get(kind, _same)(value)
    return value


def _same(value: float) -> object:
    return value


_NUMBER_FITS: Final[Mapping[Kind, Callable[[float], object]]] = {
    "boolean": bool,
    "integer": int,  # a bool, or a float where a column said REAL
    "real": float,
}


def fit_rows(rows: Sequence[Sequence[object]], kinds: Sequence[Kind]) -> list[tuple[object, ...]]:
    return [tuple(fit(v, k) for v, k in zip(row, kinds, strict=True)) for row in rows]


def sqlite_kind(declared: str) -> Kind:
    """A SQLite column's kind from its declared type, by SQLite's own affinity rules."""
    upper = declared.upper()
    if "INT" in upper:
        return "integer"
    if any(word in upper for word in ("CHAR", "CLOB", "TEXT")):
        return "text"
    if not upper or "BLOB" in upper:
        return "blob"
    return "real"


_POSTGRES_KINDS: Final[Mapping[str, Kind]] = {
    "text": "text",
    "character varying": "text",
    "character": "text",
    "bytea": "blob",
    "boolean": "boolean",
    "smallint": "integer",
    "integer": "integer",
    "bigint": "integer",
    "double precision": "real",
    "real": "real",
    "numeric": "real",
}


def postgres_kind(data_type: str) -> Kind:
    """A PostgreSQL column's kind from ``information_schema.columns.data_type``."""
    kind = _POSTGRES_KINDS.get(data_type)
    if kind is None:
        raise StoreError(f"gw state migrate cannot copy a PostgreSQL column of type {data_type}")
    return kind

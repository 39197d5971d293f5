"""What the copier asks of each database, whichever its engine (the ``Side`` protocol)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Protocol

from gw.store.state_migrate.tables import TableShape


class Side(Protocol):
    """One database inside one transaction: a consistent snapshot when read from, all or
    nothing when written to (``commit``; closing without it rolls back)."""

    @property
    def label(self) -> str: ...

    async def shapes(self) -> Mapping[str, TableShape]: ...

    async def count(self, table: str) -> int: ...

    def rows(
        self, table: str, columns: Sequence[str], batch: int
    ) -> AsyncIterator[list[tuple[object, ...]]]:
        """The rows in batches of at most ``batch``, in the order they were written (so
        a copy numbers them alike where the engine numbers rows)."""
        ...

    async def clear(self, table: str) -> None: ...

    async def pause_triggers(self, tables: Sequence[str], *, paused: bool) -> None:
        """Stop (or restart) the tables' own triggers, where the engine allows it inside
        the transaction: a derived table is copied, so what they add is thrown away."""
        ...

    async def insert(
        self, table: str, columns: Sequence[str], rows: Sequence[Sequence[object]]
    ) -> None: ...

    async def renumber(self) -> None:
        """Move each generated-number counter past the highest number copied."""
        ...

    async def commit(self) -> None: ...

    async def close(self) -> None: ...

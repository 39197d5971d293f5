"""The ``config_revisions`` table: every applied config, numbered, with the file's text
and the redacted config beside it (for rollback and diff). Runs on the state store's own
connection and lock (``SqliteStore.revisions``)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

import aiosqlite
import msgspec

Transaction = Callable[[], AbstractAsyncContextManager[None]]


class RevisionRow(msgspec.Struct, frozen=True, kw_only=True):
    """One applied config revision; ``gw config history --json`` prints these fields."""

    revision: int
    time: float
    source: str
    hash: str


class StoredRevision(RevisionRow, frozen=True, kw_only=True):
    """A revision with what was stored beside it (schema version 3 on; NULL before)."""

    content: str | None  # the config file's text as applied; None: built-in default
    redacted: str | None  # the resolved config, redacted, as JSON


class RevisionMovedError(Exception):
    """The newest revision is no longer the one an edit started from."""

    def __init__(self, parent: int, newest: int | None) -> None:
        super().__init__(f"revision {newest} was recorded after {parent}, which this edit is from")
        self.newest = newest


def check_parent(parent: int | None, newest: int | None) -> None:
    if parent is not None and newest != parent:
        raise RevisionMovedError(parent, newest)


class ConfigRevisions:
    def __init__(
        self,
        conn: Callable[[], aiosqlite.Connection],
        lock: AbstractAsyncContextManager[object],
        transaction: Transaction,
    ) -> None:
        self._conn = conn  # read at each use: the store reopens a database that vanished
        self._lock = lock
        self._transaction = transaction

    async def record(
        self,
        *,
        config_hash: str,
        source: str,
        time: float,
        content: str | None = None,
        redacted: str | None = None,
        parent: int | None = None,
    ) -> int:
        """Record an applied config and return its revision number.

        ``content`` is the config file's text as applied (None: the built-in default) and
        ``redacted`` the resolved config as redacted JSON; both are kept for rollback and
        diff. The number grows by one per distinct config and never goes back: when the
        latest stored revision has the same hash (a restart with an unchanged config), its
        number is returned and nothing is written, except that a row stored before these
        columns existed gets its missing ``content`` and ``redacted`` filled in.

        ``parent``: the revision this config was edited from; ``RevisionMovedError`` (and
        nothing recorded) when the newest is another, which another gateway of a fleet
        recorded meanwhile (an If-Match that held when the edit began no longer does).
        """
        async with self._transaction():
            rows = await self._conn().execute_fetchall(
                "SELECT revision, hash FROM config_revisions ORDER BY revision DESC LIMIT 1"
            )
            latest = next(iter(rows), None)
            check_parent(parent, None if latest is None else int(latest[0]))
            if latest is not None and latest[1] == config_hash:
                await self._conn().execute(
                    "UPDATE config_revisions SET content = coalesce(content, ?),"
                    " redacted = coalesce(redacted, ?) WHERE revision = ?",
                    (content, redacted, latest[0]),
                )
                return int(latest[0])
            revision = (int(latest[0]) if latest is not None else 0) + 1
            await self._conn().execute(
                "INSERT INTO config_revisions (revision, time, source, hash, content, redacted)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (revision, time, source, config_hash, content, redacted),
            )
        return revision

    async def list(self, *, limit: int | None = None) -> list[RevisionRow]:
        """Applied config revisions, newest first."""
        sql = "SELECT revision, time, source, hash FROM config_revisions ORDER BY revision DESC"
        async with self._lock:
            rows = await self._conn().execute_fetchall(
                sql + " LIMIT ?", (-1 if limit is None else limit,)
            )
        return [
            RevisionRow(revision=int(r[0]), time=float(r[1]), source=str(r[2]), hash=str(r[3]))
            for r in rows
        ]

    async def get(self, revision: int) -> StoredRevision | None:
        """One revision with its stored file text and redacted config; None when unknown."""
        async with self._lock:
            rows = await self._conn().execute_fetchall(
                "SELECT revision, time, source, hash, content, redacted FROM config_revisions"
                " WHERE revision = ?",
                (revision,),
            )
        row = next(iter(rows), None)
        if row is None:
            return None
        number, time, source, digest, content, redacted = row
        return StoredRevision(
            revision=int(number),
            time=float(time),
            source=str(source),
            hash=str(digest),
            content=content,
            redacted=redacted,
        )

"""The ``config_revisions`` table: every applied config, numbered, with the file's text
and the redacted config beside it (for rollback and diff). Runs on the state store's own
connection and lock (``SqliteStore.revisions``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Final

import aiosqlite
import msgspec

Transaction = Callable[[], AbstractAsyncContextManager[None]]


class RevisionRow(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One applied config revision; ``gw config history --json`` prints these fields, the
    audit (``actor``, ``reason``) only where there is one: an admin write's."""

    revision: int
    time: float
    source: str
    hash: str
    actor: str | None = None  # who made an admin write: a key id, "admin" or "local-admin"
    reason: str | None = None  # the reason it gave


class Audit(msgspec.Struct, frozen=True, kw_only=True):
    """Who made an admin write (a key id, ``admin``, or ``local-admin`` for the local
    token), and why: recorded with the revision it makes."""

    actor: str | None = None
    reason: str | None = None


class StoredRevision(RevisionRow, frozen=True, kw_only=True):
    """A revision with what was stored beside it (schema version 3 on; NULL before)."""

    content: str | None  # the config file's text as applied; None: built-in default
    redacted: str | None  # the resolved config, redacted, as JSON


# Both engines' reads; "?" placeholders, as each store's SQL helpers take them.
LIST_REVISIONS: Final = (
    "SELECT revision, time, source, hash, actor, reason FROM config_revisions"
    " ORDER BY revision DESC LIMIT ?"
)
GET_REVISION: Final = (
    "SELECT revision, time, source, hash, actor, reason, content, redacted"
    " FROM config_revisions WHERE revision = ?"
)


def revision_row(row: Sequence[Any]) -> RevisionRow:
    """A row of ``LIST_REVISIONS`` (either engine)."""
    number, time, source, digest, actor, reason = row[:6]
    return RevisionRow(
        revision=int(number),
        time=float(time),
        source=str(source),
        hash=str(digest),
        actor=actor,
        reason=reason,
    )


def stored_revision(row: Sequence[Any]) -> StoredRevision:
    """A row of ``GET_REVISION`` (either engine)."""
    head = revision_row(row)
    return StoredRevision(**msgspec.structs.asdict(head), content=row[6], redacted=row[7])


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
        actor: str | None = None,
        reason: str | None = None,
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
        ``actor`` and ``reason``: who made an admin write and why (the audit).
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
                "INSERT INTO config_revisions (revision, time, source, hash, content, redacted,"
                " actor, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (revision, time, source, config_hash, content, redacted, actor, reason),
            )
        return revision

    async def list(self, *, limit: int | None = None) -> list[RevisionRow]:
        """Applied config revisions, newest first."""
        async with self._lock:
            rows = await self._conn().execute_fetchall(
                LIST_REVISIONS, (-1 if limit is None else limit,)
            )
        return [revision_row(row) for row in rows]

    async def get(self, revision: int) -> StoredRevision | None:
        """One revision with its stored file text and redacted config; None when unknown."""
        async with self._lock:
            rows = await self._conn().execute_fetchall(GET_REVISION, (revision,))
        row = next(iter(rows), None)
        return None if row is None else stored_revision(row)

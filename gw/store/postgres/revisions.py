"""Config revisions in PostgreSQL (the SQLite store's ``ConfigRevisions``, shared).

Several gateways may record a revision at once (each start records ``start``): the
read-then-insert runs under a transaction-scoped advisory lock, so the numbers stay one
sequence that grows by one per distinct config. A new revision is announced on the
``gw_config`` channel (``NOTIFY``, the revision number as payload) when it commits; every
gateway of the fleet listens (gw/store/postgres/config_notices.py) and applies it.
"""

from __future__ import annotations

from typing import Final

from gw.store.postgres.database import Database
from gw.store.postgres.sql import numbered
from gw.store.revisions import (
    GET_REVISION,
    LIST_REVISIONS,
    RevisionRow,
    StoredRevision,
    check_parent,
    revision_row,
    stored_revision,
)

REVISIONS_LOCK: Final = 0x67770001  # pg_advisory_xact_lock key: "gw", revisions
CONFIG_CHANNEL: Final = "gw_config"  # NOTIFY payload: the new revision's number


class Revisions:
    def __init__(self, db: Database) -> None:
        self._db = db

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
        """As ``ConfigRevisions.record``."""
        async with self._db.transaction() as conn:
            await conn.execute("SELECT pg_advisory_xact_lock($1)", REVISIONS_LOCK)
            latest = await conn.fetchrow(
                "SELECT revision, hash FROM config_revisions ORDER BY revision DESC LIMIT 1"
            )
            # Under the lock: two gateways' admin writes from one revision, one recorded.
            check_parent(parent, None if latest is None else int(latest[0]))
            if latest is not None and latest[1] == config_hash:
                await conn.execute(
                    numbered(
                        "UPDATE config_revisions SET content = coalesce(content, ?),"
                        " redacted = coalesce(redacted, ?) WHERE revision = ?"
                    ),
                    content,
                    redacted,
                    latest[0],
                )
                return int(latest[0])
            revision = (int(latest[0]) if latest is not None else 0) + 1
            await conn.execute(
                numbered(
                    "INSERT INTO config_revisions (revision, time, source, hash, content,"
                    " redacted, actor, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                ),
                revision,
                time,
                source,
                config_hash,
                content,
                redacted,
                actor,
                reason,
            )
            # Delivered at commit, so a listener that hears it can read the row.
            await conn.execute("SELECT pg_notify($1, $2)", CONFIG_CHANNEL, str(revision))
        return revision

    async def list(self, *, limit: int | None = None) -> list[RevisionRow]:
        rows = await self._db.fetch(LIST_REVISIONS, limit)
        return [revision_row(row) for row in rows]

    async def get(self, revision: int) -> StoredRevision | None:
        row = await self._db.fetchrow(GET_REVISION, revision)
        return None if row is None else stored_revision(row)

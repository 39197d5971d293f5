"""Traces in PostgreSQL: writing (a known request id replaced), reading, and pruning.

The rows and the JSON body are the SQLite store's (gw/store/trace_rows.py); ``seq`` takes
the place of SQLite's rowid as the cursor of ``gw traces --follow``.

Trace batches of all gateways take turns under a transaction-scoped advisory lock, so
``seq`` numbers become visible in order: were two gateways to write at once, the one
that drew the lower numbers could commit after a follower had read past them, and its
traces would never be shown. The lock is held for one batch's insert (a few ms).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import msgspec

from gw.record import TraceRecord, kept_client_request_id, request_id_of
from gw.store.postgres.database import Database, execute_many
from gw.store.trace_reads import MIN_PREFIX, AmbiguousRequestIdError, UnreadableTraceError
from gw.store.trace_rows import TRACE_ROW_OVERHEAD, TRACES_BETWEEN, readable_traces, trace_row

_COLUMNS: Final = (
    "request_id", "time", "status", "error_code", "route", "provider", "model", "latency_ms",
    "client_request_id", "revision", "body", "size", "gateway",
)  # fmt: skip
INSERT_TRACE: Final = (
    f"INSERT INTO traces ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})"  # noqa: S608 - fixed column names
    " ON CONFLICT (request_id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS[1:])
    + ", seq = nextval('traces_seq')"
)
TRACES_LOCK: Final = 0x67770003  # pg_advisory_xact_lock key: "gw", trace writes
DELETE_BEFORE: Final = """
DELETE FROM traces WHERE request_id IN
    (SELECT request_id FROM traces WHERE time < ? ORDER BY time LIMIT ?)
RETURNING size
"""
DELETE_OLDEST: Final = """
DELETE FROM traces WHERE request_id IN (SELECT request_id FROM traces ORDER BY time LIMIT ?)
RETURNING size
"""


class Traces:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._encoder = msgspec.json.Encoder()
        self._decoder = msgspec.json.Decoder(TraceRecord)

    async def write(self, traces: Sequence[TraceRecord]) -> None:
        """Store traces in one transaction; the last of a request id in a batch wins."""
        if not traces:
            return
        latest = {trace.request_id: trace for trace in traces}
        rows = [trace_row(trace, self._encoder.encode(trace)) for trace in latest.values()]
        async with self._db.transaction() as conn:
            await conn.execute("SELECT pg_advisory_xact_lock($1)", TRACES_LOCK)
            await execute_many(conn, INSERT_TRACE, rows)

    async def newest(self, *, limit: int, client_request_id: str | None) -> list[TraceRecord]:
        if limit < 0:
            raise ValueError("limit must be >= 0")
        sql = "SELECT request_id, body FROM traces"
        params: tuple[str | int, ...] = (limit,)
        if client_request_id is not None:
            sql += " WHERE client_request_id = ?"
            params = (kept_client_request_id(client_request_id), limit)
        sql += " ORDER BY time DESC, request_id DESC LIMIT ?"
        return readable_traces(await self._db.fetch(sql, *params), self._decoder)

    async def between(self, since: float, until: float, *, limit: int) -> list[TraceRecord]:
        """As ``TraceReads.traces_between``."""
        if limit < 0:
            raise ValueError("limit must be >= 0")
        rows = await self._db.fetch(TRACES_BETWEEN, since, until, limit)
        return readable_traces(rows, self._decoder)

    async def written_after(
        self, cursor: int | None, *, limit: int
    ) -> tuple[list[TraceRecord], int]:
        """As ``TraceReads.traces_written_after``, ``seq`` for the rowid."""
        if limit < 1:
            raise ValueError("limit must be >= 1")
        if cursor is None:
            rows = await self._db.fetch(
                "SELECT seq, request_id, body FROM traces ORDER BY seq DESC LIMIT ?", limit
            )
            rows.reverse()
        else:
            rows = await self._db.fetch(
                "SELECT seq, request_id, body FROM traces WHERE seq > ? ORDER BY seq LIMIT ?",
                cursor,
                limit,
            )
        return readable_traces(rows, self._decoder), int(rows[-1][0]) if rows else (cursor or 0)

    async def get(self, request_id: str) -> TraceRecord | None:
        """As ``TraceReads.get_trace``: exact id, else a unique prefix of ``MIN_PREFIX``+."""
        request_id = request_id_of(request_id)
        found = await self._db.fetch(
            "SELECT request_id, body FROM traces WHERE request_id = ?", request_id
        )
        if not found and len(request_id) >= MIN_PREFIX:
            # A range on the primary key (collation "C": byte order) finds the prefix.
            found = await self._db.fetch(
                "SELECT request_id, body FROM traces WHERE request_id >= ? AND request_id < ?"
                " AND left(request_id, ?) = ? ORDER BY request_id LIMIT 3",
                request_id,
                request_id + "\U0010ffff",
                len(request_id),
                request_id,
            )
        if not found:
            return None
        if len(found) > 1:
            ids = ", ".join(str(row[0]) for row in found[:2])
            raise AmbiguousRequestIdError(
                f"request id prefix {request_id!r} matches several traces ({ids}, ...);"
                " give more characters"
            )
        full_id, body = found[0]
        try:
            return self._decoder.decode(body)
        except msgspec.DecodeError as exc:
            raise UnreadableTraceError(
                f"trace {full_id} cannot be read by this gw ({type(exc).__name__}); it was"
                " probably written by a different version"
            ) from exc

    # -- retention ------------------------------------------------------------------------

    async def volume(self) -> tuple[int, int]:
        row = await self._db.fetchrow("SELECT count(*), coalesce(sum(size), 0) FROM traces")
        count, body = (0, 0) if row is None else (int(row[0]), int(row[1]))
        return count, body + count * TRACE_ROW_OVERHEAD

    async def delete_before(self, cutoff: float, *, limit: int) -> tuple[int, int]:
        return _freed(await self._db.fetch(DELETE_BEFORE, cutoff, limit))

    async def delete_oldest(self, *, limit: int) -> tuple[int, int]:
        return _freed(await self._db.fetch(DELETE_OLDEST, limit))


def _freed(rows: Sequence[Sequence[object]]) -> tuple[int, int]:
    sizes = [int(str(row[0])) for row in rows]
    return len(sizes), sum(sizes) + len(sizes) * TRACE_ROW_OVERHEAD

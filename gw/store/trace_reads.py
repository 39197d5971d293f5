"""Reading traces back: the newest, those written after a cursor, one by id or prefix.

On the store's read connection (gw/store/read_connection.py), so a listing never holds
the connection that writes traces and usage rows.
"""

from __future__ import annotations

from typing import Final

import msgspec

from gw.record import TraceRecord, kept_client_request_id, request_id_of
from gw.store.migrations import StoreError
from gw.store.read_connection import ReadConnection
from gw.store.trace_rows import TRACES_BETWEEN, readable_traces

MIN_PREFIX: Final = 8
"""Shortest request id prefix ``get_trace`` resolves (shorter ones only match exactly)."""


class AmbiguousRequestIdError(StoreError):
    """A request id prefix matches more than one trace."""


class UnreadableTraceError(StoreError):
    """A stored trace does not decode (written by an incompatible gw)."""


class TraceReads:
    """The trace reads of ``SqliteStore`` (its methods of the same names delegate here)."""

    def __init__(self, reads: ReadConnection) -> None:
        self._reads = reads
        self._decoder = msgspec.json.Decoder(TraceRecord)

    async def list_traces(
        self, *, limit: int = 20, client_request_id: str | None = None
    ) -> list[TraceRecord]:
        """The newest ``limit`` traces, newest first, optionally only a client's request id.

        A row that no longer decodes is skipped and logged (``readable_traces``).
        """
        if limit < 0:
            raise ValueError("limit must be >= 0")
        sql = "SELECT request_id, body FROM traces"
        params: tuple[str | int, ...] = (limit,)
        if client_request_id is not None:
            sql += " WHERE client_request_id = ?"
            params = (kept_client_request_id(client_request_id), limit)
        sql += " ORDER BY time DESC, request_id DESC LIMIT ?"
        async with self._reads.use() as conn:
            rows = await conn.execute_fetchall(sql, params)
        return readable_traces(rows, self._decoder)

    async def traces_between(self, since: float, until: float, *, limit: int) -> list[TraceRecord]:
        """The traces of requests that started in ``[since, until)``, newest first, at most
        ``limit`` (``gw replay``'s period)."""
        if limit < 0:
            raise ValueError("limit must be >= 0")
        async with self._reads.use() as conn:
            rows = await conn.execute_fetchall(TRACES_BETWEEN, (since, until, limit))
        return readable_traces(rows, self._decoder)

    async def traces_written_after(
        self, cursor: int | None, *, limit: int
    ) -> tuple[list[TraceRecord], int]:
        """Traces in the order they were written, for ``gw traces --follow``: the next
        ``limit`` after ``cursor`` (a value this method returned), or with ``cursor=None``
        the last ``limit`` written; with the cursor to pass next.

        The cursor is the rowid, not the request's time: a long stream's trace is written
        after those of shorter requests that started later, and would be skipped by a
        cursor on ``time``. Rowids only grow (a replaced trace gets a new one, and is
        shown again); when every row above the cursor was deleted (pruning) and new rows
        reuse lower rowids, the cursor starts over from the lowest.
        """
        if limit < 1:
            raise ValueError("limit must be >= 1")
        async with self._reads.use() as conn:
            if cursor is None:
                rows = list(
                    await conn.execute_fetchall(
                        "SELECT rowid, request_id, body FROM traces ORDER BY rowid DESC LIMIT ?",
                        (limit,),
                    )
                )
                rows.reverse()
            else:
                top = await conn.execute_fetchall("SELECT max(rowid) FROM traces")
                newest = next(iter(top))[0]
                if newest is not None and newest < cursor:
                    cursor = 0
                rows = list(
                    await conn.execute_fetchall(
                        "SELECT rowid, request_id, body FROM traces WHERE rowid > ?"
                        " ORDER BY rowid LIMIT ?",
                        (cursor, limit),
                    )
                )
        return readable_traces(rows, self._decoder), int(rows[-1][0]) if rows else (cursor or 0)

    async def get_trace(self, request_id: str) -> TraceRecord | None:
        """The trace with this request id, or with this id prefix when that is unique.

        An Anthropic message id gw gave (``msg_...``) finds its request too. A prefix
        needs at least ``MIN_PREFIX`` characters. Raises
        ``AmbiguousRequestIdError`` when a prefix matches several traces and
        ``UnreadableTraceError`` when the stored trace does not decode.
        """
        request_id = request_id_of(request_id)
        async with self._reads.use() as conn:
            found = list(
                await conn.execute_fetchall(
                    "SELECT request_id, body FROM traces WHERE request_id = ?", (request_id,)
                )
            )
            if not found and len(request_id) >= MIN_PREFIX:
                # A range on the primary key finds the prefix without a scan; the
                # ``substr`` check keeps the match exact (BINARY collation, case-sensitive).
                found = list(
                    await conn.execute_fetchall(
                        "SELECT request_id, body FROM traces"
                        " WHERE request_id >= ? AND request_id < ?"
                        " AND substr(request_id, 1, ?) = ?"
                        " ORDER BY request_id LIMIT 3",
                        (request_id, request_id + "\U0010ffff", len(request_id), request_id),
                    )
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

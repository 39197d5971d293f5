"""Traces as rows of the ``traces`` table: the SQL, the row a trace is written as, and
reading bodies back, skipping (and logging) any that no longer decode.

A row holds the columns ``gw traces`` filters and sorts on, and the whole trace as JSON
text, which SQLite's JSON functions can read.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterable
from typing import Final

import msgspec

from gw.record import TraceRecord

logger = logging.getLogger("gw.store")

# Traces go in as one multi-row INSERT per ``ROWS_PER_STATEMENT`` rows (batch_insert.py).
INSERT_TRACES: Final = """
INSERT OR REPLACE INTO traces (
    request_id, time, status, error_code, route, provider, model, latency_ms,
    client_request_id, revision, body, size, gateway
)"""
TRACE_ROW_OVERHEAD: Final = 200
"""Estimated bytes a trace takes besides its body: the other columns and index entries."""
TRACES_BETWEEN: Final = """
SELECT request_id, body FROM traces WHERE time >= ? AND time < ?
ORDER BY time DESC, request_id DESC LIMIT ?
"""
# Prune deletes: ORDER BY time alone walks the traces_time_size index and stops at LIMIT (a
# tie-break on request_id would sort every matching row first).
DELETE_TRACES_BEFORE: Final = """
DELETE FROM traces WHERE request_id IN
    (SELECT request_id FROM traces WHERE time < ? ORDER BY time LIMIT ?)
RETURNING size
"""
DELETE_OLDEST_TRACES: Final = """
DELETE FROM traces WHERE request_id IN (SELECT request_id FROM traces ORDER BY time LIMIT ?)
RETURNING size
"""


def trace_row(trace: TraceRecord, body: bytes) -> tuple[object, ...]:
    """``INSERT_TRACES``'s values for ``trace``, whose JSON encoding is ``body``."""
    return (
        trace.request_id,
        trace.time,
        trace.status,
        trace.error_code,
        trace.requested_model,
        trace.provider,
        trace.model,
        trace.latency_ms,
        trace.client_request_id,
        trace.revision,
        body.decode(),  # stored as JSON text, which SQLite's JSON functions read
        len(body),
        trace.gateway,
    )


def readable_traces(
    rows: Iterable[sqlite3.Row], decoder: msgspec.json.Decoder[TraceRecord]
) -> list[TraceRecord]:
    """The traces of rows ending in (request_id, body); a row that no longer decodes is
    skipped and logged (by request id only), so one bad row cannot hide the others."""
    traces: list[TraceRecord] = []
    for *_, request_id, body in rows:
        try:
            traces.append(decoder.decode(body))
        except msgspec.DecodeError as exc:
            logger.warning("skipping unreadable trace %s: %s", request_id, type(exc).__name__)
    return traces

"""``gw traces --follow``: the last traces written, then each new one as it is written.

The store is polled every ``POLL_S`` seconds with a cursor on the order traces are written
(``StateStore.traces_written_after``), at most ``BATCH`` a query, so a burst is printed
in pieces and memory stays bounded. Lines come oldest first, as in ``tail -f``: with
``--json`` one ``gw traces --json`` item per line (JSON lines), else the request log's
line (gw/telemetry/request_log.py). A store that does not exist yet is waited for.

Traces hold client text (an unknown model's name, ``provider/<anything>``) and this prints
to a terminal: the request log's line shows it through ``printable``, and JSON lines are
ASCII, so no control character reaches the terminal raw (JSON escapes only C0 controls,
not C1 ones such as U+009B, a CSI to some terminals).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Final

import typer

from gw.cli.console import stderr, stdout
from gw.cli.state_target import StateTarget
from gw.cli.traces_view import trace_summary_json
from gw.record import TraceRecord, kept_client_request_id
from gw.telemetry.request_log import rich_line

POLL_S: Final = 0.5
BATCH: Final = 500

Emit = Callable[[TraceRecord], None]


def emit_json(trace: TraceRecord) -> None:
    typer.echo(json.dumps(trace_summary_json(trace), ensure_ascii=True))  # flushes


def emit_line(trace: TraceRecord) -> None:
    stdout.print(rich_line(trace), soft_wrap=True)


def wait_for_store(target: StateTarget, poll_s: float = POLL_S) -> None:
    """Until ``gw serve`` creates the database (opening it here would create it); says so
    on stderr, once, when it has to wait. A PostgreSQL store is there already."""
    if not target.exists():
        stderr.print(
            f"waiting for {target.label} (gw serve creates it)", highlight=False, markup=False
        )
    while not target.exists():
        time.sleep(poll_s)


async def follow(
    target: StateTarget,
    emit: Emit,
    *,
    last: int,
    client_request_id: str | None = None,
    poll_s: float = POLL_S,
) -> None:
    """Emit the ``last`` traces written, then every new one; runs until cancelled."""
    wanted = None if client_request_id is None else kept_client_request_id(client_request_id)
    store = await target.open()
    try:
        traces, cursor = await store.traces_written_after(None, limit=last)
        while True:
            for trace in traces:
                if wanted is None or trace.client_request_id == wanted:
                    emit(trace)
            if len(traces) < BATCH:
                await asyncio.sleep(poll_s)
            traces, cursor = await store.traces_written_after(cursor, limit=BATCH)
    finally:
        await store.close()

"""``gw traces``: a table of recent requests, and its ``--json`` shape. Pure rendering.

``gw traces --json`` prints a JSON array, newest first; each item is::

    {
      "request_id": "01J...",            // gw's own request id
      "time": "2026-03-15T14:02:03.120Z",  // request start, ISO 8601 UTC
      "route": "chat",                   // the model or route name the client sent
      "status": 200,                     // HTTP status returned to the client
      "error_code": null,                // gw error code, null when the request succeeded
      "provider": "openai-prod",         // provider that answered (or was last tried); null if none
      "model": "gpt-4o-mini",            // upstream model of that provider; null if none
      "latency_ms": 412.5,               // total time in gw
      "stream": false,
      "client_request_id": null,         // the client's x-request-id, if it sent one
      "input_tokens": 12,                // null when no usage is known
      "output_tokens": 34,               // null when no usage is known
      "cost_usd": 0.000022,              // null when the price is unknown
      "revision": 3,                     // config revision the request ran against
      "attempts": 1,                     // number of upstream calls made
      "gateway": "gw-a"                  // the gateway that served it; null in older traces
    }

The table shows a gateway column only when the traces listed come from more than one.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, tzinfo

from rich.table import Table
from rich.text import Text

from gw.record import TraceRecord
from gw.telemetry.explain import iso_utc  # one format for every --json
from gw.telemetry.printable import printable


def local_time(timestamp: float, tz: tzinfo | None = None) -> str:
    """``2026-03-15 15:02:03`` in ``tz`` (the local zone when None), to the second."""
    moment = datetime.fromtimestamp(timestamp, UTC).astimezone(tz)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def format_ms(value: float | None) -> str:
    """Whole milliseconds, with one decimal below 10 ms so fast paths do not read as 0."""
    if value is None:
        return "-"
    return f"{value:.1f}" if value < 10 else f"{value:,.0f}"


def format_cost(value: float | None) -> str:
    return "-" if value is None else f"${value:.6f}"


def status_text(status: int) -> Text:
    return Text(str(status), style="green" if status < 400 else "red")


def traces_table(traces: Sequence[TraceRecord], *, tz: tzinfo | None = None) -> Table:
    """One row per trace, in the order given (the store returns newest first); with a
    gateway column when they were served by more than one (a fleet on one database)."""
    fleet = len({trace.gateway for trace in traces} - {None}) > 1
    table = Table(title="Recent requests", title_justify="left")
    table.add_column("time")
    table.add_column("request id", no_wrap=True)
    table.add_column("route")
    table.add_column("upstream")
    table.add_column("status", justify="right")
    table.add_column("error code")
    table.add_column("latency ms", justify="right")
    table.add_column("tokens in/out", justify="right")
    table.add_column("cost", justify="right")
    if fleet:
        table.add_column("gateway", no_wrap=True)
    for trace in traces:
        usage = trace.usage
        tokens = "-" if usage is None else f"{usage.input_tokens}/{usage.output_tokens}"
        # Text cells: stored values are shown verbatim, never parsed as Rich markup.
        gateway = [Text(printable(trace.gateway or "-"))] if fleet else []
        table.add_row(
            Text(local_time(trace.time, tz)),
            Text(trace.request_id),
            Text(printable(trace.requested_model)),
            Text(printable(trace.route_header)),
            status_text(trace.status),
            Text(trace.error_code or "-"),
            Text(format_ms(trace.latency_ms)),
            Text(tokens),
            Text(format_cost(trace.cost_usd)),
            *gateway,
        )
    return table


def trace_summary_json(trace: TraceRecord) -> dict[str, object]:
    """One item of ``gw traces --json`` (shape in the module docstring)."""
    usage = trace.usage
    return {
        "request_id": trace.request_id,
        "time": iso_utc(trace.time),
        "route": trace.requested_model,
        "status": trace.status,
        "error_code": trace.error_code,
        "provider": trace.provider,
        "model": trace.model,
        "latency_ms": trace.latency_ms,
        "stream": trace.stream,
        "client_request_id": trace.client_request_id,
        "input_tokens": None if usage is None else usage.input_tokens,
        "output_tokens": None if usage is None else usage.output_tokens,
        "cost_usd": trace.cost_usd,
        "revision": trace.revision,
        "attempts": len(trace.attempts),
        "gateway": trace.gateway,
    }


def traces_json(traces: Sequence[TraceRecord]) -> list[dict[str, object]]:
    """``gw traces --json``: the items in the order given (newest first from the store)."""
    return [trace_summary_json(trace) for trace in traces]

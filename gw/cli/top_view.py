"""``gw top``'s screen: one ``TopFrame`` (gw/cli/top_frame.py) as Rich renderables. Pure
rendering: every cell is a ``Text``, so names from the server are never read as markup."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from gw.cli.top_frame import Breaker, ProviderRow, Quantiles, RouteRow, TopFrame

BREAKER_STYLES = {"half_open": "yellow", "open": "bold red"}
NO_ROUTE = "(no route)"


def format_ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.1f}" if value < 10 else f"{value:,.0f}"


def format_rate(value: float) -> str:
    return f"{value:.1f}" if value < 100 else f"{value:,.0f}"


def format_cost(per_hour: float) -> str:
    return f"${per_hour:.4f}" if per_hour < 1 else f"${per_hour:,.2f}"


def format_quantiles(quantiles: Quantiles) -> str:
    return (
        f"p50 {format_ms(quantiles.p50)}  p90 {format_ms(quantiles.p90)}"
        f"  p99 {format_ms(quantiles.p99)} ms"
    )


def header(frame: TopFrame, url: str) -> Text:
    version = f"gw {frame.version}" if frame.version else "gw"
    revision = "-" if frame.revision is None else str(frame.revision)
    return Text.assemble(
        (version, "bold"),
        f" at {url}  revision {revision}  in flight {frame.in_flight}",
        f"  waiting {frame.waiting}",
        (f"  (last {frame.interval_s:.1f}s)", "dim"),
    )


def summary(frame: TopFrame) -> Text:
    error_rate = "-" if frame.error_rate is None else f"{frame.error_rate:.1%}"
    line = Text.assemble(
        ("requests ", "bold"),
        f"{format_rate(frame.rps)}/s  ",
        ("errors ", "bold"),
        (error_rate, "red" if frame.errors else ""),
    )
    if frame.errors_by_code:
        codes = ", ".join(f"{code} {count}" for code, count in frame.errors_by_code.items())
        line.append(f" ({codes})", style="red")
    line.append("\nlatency ", style="bold")
    line.append(format_quantiles(frame.latency_ms))
    if frame.ttft_ms.p50 is not None:
        line.append("   ttft ", style="bold")
        line.append(format_quantiles(frame.ttft_ms))
    line.append("\ntokens ", style="bold")
    line.append(
        f"{format_rate(frame.input_tokens_per_s)}/s in, "
        f"{format_rate(frame.output_tokens_per_s)}/s out  "
    )
    line.append("cost ", style="bold")
    line.append(f"{format_cost(frame.cost_usd_per_hour)}/h")
    line.append(
        f"   since start {frame.total_requests:,} requests, ${frame.total_cost_usd:.4f}",
        style="dim",
    )
    return line


def _table(title: str, first: str, extra: Sequence[str] = ()) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column(first, no_wrap=True)
    for name in ("req/s", "p50 ms", "p99 ms", "errors", *extra, "tok/s", "cost/h"):
        table.add_column(name, justify="right", no_wrap=True)
    return table


def _cells(row: RouteRow | ProviderRow) -> list[Text]:
    return [
        Text(format_rate(row.rps)),
        Text(format_ms(row.p50_ms)),
        Text(format_ms(row.p99_ms)),
        Text(str(row.errors), style="red" if row.errors else ""),
    ]


def routes_table(rows: Sequence[RouteRow]) -> Table:
    table = _table("Routes", "route")
    for row in rows:
        table.add_row(
            Text(row.route or NO_ROUTE),
            *_cells(row),
            Text(format_rate(row.tokens_per_s)),
            Text(format_cost(row.cost_usd_per_hour)),
        )
    return table


def providers_table(rows: Sequence[ProviderRow]) -> Table:
    table = _table("Providers", "provider", ("failed calls",))
    for row in rows:
        table.add_row(
            Text(row.provider),
            *_cells(row),
            Text(
                f"{row.failed_attempts}/{row.attempts}",
                style="red" if row.failed_attempts else "",
            ),
            Text(format_rate(row.tokens_per_s)),
            Text(format_cost(row.cost_usd_per_hour)),
        )
    return table


def breakers_line(breakers: Sequence[Breaker]) -> Text:
    """Every breaker that is not closed, by name; the closed ones counted."""
    line = Text("breakers ", style="bold")
    if not breakers:
        return line.append("-")
    tripped = sorted((b for b in breakers if b.state != "closed"), key=lambda b: b.state != "open")
    closed = len(breakers) - len(tripped)
    for breaker in tripped:
        line.append(f"{breaker.provider}/{breaker.model} ")
        line.append(breaker.state, style=BREAKER_STYLES.get(breaker.state, "red"))
        line.append("  ")
    line.append(f"{closed} closed", style="green" if closed else "dim")
    return line


def top_renderable(frame: TopFrame, url: str) -> RenderableType:
    """The whole screen for one frame."""
    return Group(
        header(frame, url),
        summary(frame),
        breakers_line(frame.breakers),
        routes_table(frame.routes),
        providers_table(frame.providers),
    )


def waiting_renderable(url: str, interval_s: float) -> RenderableType:
    """Before the second scrape: rates need two."""
    return Text(f"gw at {url}: measuring for {interval_s:g}s …", style="dim")

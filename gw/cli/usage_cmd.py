"""``gw usage``: read the usage ledger in the state dir's database, render a table or JSON.

It reads the file directly, so it works with the server stopped; a running server writes
its rows off the hot path, within about a tenth of a second of each request's end.
"""

from __future__ import annotations

import time
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from gw.cli.console import fail, print_json, stdout
from gw.cli.options import JsonOption, StateDirOption, resolve_home
from gw.cli.state_target import state_target
from gw.store.usage import UsageGroup, UsageTotals, cached_share, parse_since, report_json

ByOption = Annotated[
    UsageGroup,
    typer.Option(
        "--by",
        help="Group by tenant, model, key (API key id), day, route, provider or gateway (the"
        " one that served each request, in a fleet).",
    ),
]
SinceOption = Annotated[
    str | None,
    typer.Option(
        "--since", help="Only requests since a time: a duration (30m, 24h, 7d) or a date."
    ),
]
TenantOption = Annotated[str | None, typer.Option("--tenant", help="Only this tenant's usage.")]


def usage_command(
    by: ByOption = "model",
    since: SinceOption = None,
    tenant: TenantOption = None,
    state_dir: StateDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show requests, tokens and cost, grouped; --json prints the same rows as objects."""
    try:
        start = None if since is None else parse_since(since, now=time.time())
    except ValueError as error:
        fail(f"--since {error}")
    target = state_target(resolve_home(state_dir))
    totals: list[UsageTotals] = []
    if target.exists():
        totals = target.run(lambda store: store.usage_report(by, start, tenant))
    if as_json:
        print_json(report_json(by, totals))
        return
    if not totals:
        filters = [f"for tenant {tenant}" if tenant else "", f"since {since}" if since else ""]
        matching = " ".join(part for part in filters if part) or "yet"
        stdout.print(f"no usage recorded {matching} in {target.label}", highlight=False)
        return
    stdout.print(usage_table(by, totals, since=since))
    for note in usage_notes(totals):
        stdout.print(note, highlight=False)
    if by == "gateway" and any(group.key is None for group in totals):
        stdout.print(GATEWAY_NONE_NOTE, highlight=False)


GATEWAY_NONE_NOTE = (
    "(none): requests served before gw recorded the gateway that served each (schema 10)"
)


def usage_table(by: UsageGroup, totals: list[UsageTotals], *, since: str | None = None) -> Table:
    """One row per group, then the totals as the footer."""
    title = f"Usage by {by}" + (f" since {since}" if since else "")
    table = Table(title=title, title_justify="left", show_footer=True)
    whole = sum_totals(totals)
    table.add_column(by, footer="total")
    for name, value in _numbers(whole):
        table.add_column(name, justify="right", footer=value)
    for group in totals:
        key = Text(group.key) if group.key is not None else Text("(none)", style="dim")
        table.add_row(key, *(value for _name, value in _numbers(group)))
    return table


def usage_notes(totals: list[UsageTotals]) -> list[str]:
    """What the numbers leave out: unknown prices, estimated counts."""
    whole = sum_totals(totals)
    notes: list[str] = []
    if whole.unpriced:
        notes.append(
            f"{_requests(whole.unpriced)} had no catalog price: their cost is not counted"
            " (add the model under models: in the config)"
        )
    if whole.estimated:
        notes.append(
            f"{_requests(whole.estimated)} counted with gw's token estimate (a stream cut"
            " short, or a provider that reported no usage)"
        )
    if whole.recovered:
        notes.append(
            f"{_requests(whole.recovered)} recovered from the usage journal after gw was"
            " killed before writing them (their traces may be missing)"
        )
    return notes


def sum_totals(totals: list[UsageTotals]) -> UsageTotals:
    return UsageTotals(
        key=None,
        requests=sum(t.requests for t in totals),
        errors=sum(t.errors for t in totals),
        input_tokens=sum(t.input_tokens for t in totals),
        cached_input_tokens=sum(t.cached_input_tokens for t in totals),
        output_tokens=sum(t.output_tokens for t in totals),
        reasoning_tokens=sum(t.reasoning_tokens for t in totals),
        cost_usd=round(sum(t.cost_usd for t in totals), 10),
        unpriced=sum(t.unpriced for t in totals),
        estimated=sum(t.estimated for t in totals),
        recovered=sum(t.recovered for t in totals),
    )


def _requests(count: int) -> str:
    return f"{count} request" if count == 1 else f"{count} requests"


def _numbers(group: UsageTotals) -> list[tuple[str, str]]:
    return [
        ("requests", f"{group.requests:,}"),
        ("errors", f"{group.errors:,}"),
        ("input", f"{group.input_tokens:,}"),
        ("cached", f"{group.cached_input_tokens:,}"),
        ("cached %", _share(cached_share(group))),
        ("output", f"{group.output_tokens:,}"),
        ("reasoning", f"{group.reasoning_tokens:,}"),
        ("cost", f"${group.cost_usd:,.6f}" + _unpriced(group.unpriced)),
    ]


def _share(share: float | None) -> str:
    """The prompt cache's share of input tokens; '-' with no input tokens."""
    return "-" if share is None else f"{share:.1%}"


def _unpriced(count: int) -> str:
    """Said in the cost cell: a request without a price would otherwise read as free."""
    return f" + {count} unpriced" if count else ""

"""``gw health``: ask the running server (found through ``<state-dir>/server.json``) for
``GET /admin/v1/health`` and render it; ``--json`` prints the server's JSON unchanged
(shape: gw/server/admin/api.py).

The server and, in ``keys`` mode, the admin key are found as for every admin call
(gw/cli/admin_client.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec
import typer
from rich.table import Table
from rich.text import Text

from gw.cli.admin_client import admin_call_or_fail
from gw.cli.console import fail, stdout
from gw.cli.options import (
    ConfigOption,
    JsonOption,
    StateDirOption,
    resolve_home,
)
from gw.cli.traces_view import format_ms

if TYPE_CHECKING:  # the server's modules load only for `gw serve` (Litestar: ~0.3 s)
    from gw.server.admin.api import HealthReport, LatencyView, TargetView

HEALTH_PATH = "/admin/v1/health"
STATUS_STYLES = {"healthy": "green", "degraded": "yellow", "unhealthy": "red"}
BREAKER_STYLES = {"closed": "green", "half_open": "yellow", "open": "red"}


def health_command(
    state_dir: StateDirOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show each target's health, breaker and latency, locked accounts, and what cannot work.

    What cannot work: providers whose credentials do not resolve in gw's environment or
    vault, and the routes whose requests fall through to another target because of it."""
    home = resolve_home(state_dir)
    answer = admin_call_or_fail(home, config, "GET", HEALTH_PATH)
    if as_json:
        typer.echo(answer.text)
        return
    try:
        from gw.server.admin.api import HealthReport  # noqa: PLC0415

        report = msgspec.json.decode(answer.content, type=HealthReport)
    except msgspec.DecodeError as error:
        fail(f"the server answered an unexpected health report: {error}")
    url = str(answer.url).removesuffix(HEALTH_PATH)
    stdout.print(f"gw at {url}, config revision {report.revision}", highlight=False)
    stdout.print(targets_table(report))
    stdout.print(locks_table(report, url))
    if report.switches:
        stdout.print(Text("Switches in force (gw switch list):", style="yellow"))
        for line in report.switches:
            stdout.print(Text(f"  {line}"))
    if report.credentials is not None and (unusable := report.credentials.warnings()):
        stdout.print(Text("What cannot work (gw's environment and vault):", style="yellow"))
        for line in unusable:
            stdout.print(Text(f"  {line}"))


def targets_table(report: HealthReport) -> Table:
    table = Table(title="Targets", title_justify="left")
    table.add_column("target", no_wrap=True)
    table.add_column("status")
    table.add_column("breaker")
    table.add_column("failures", justify="right")
    table.add_column("cooldown left", justify="right")
    table.add_column("latency ms")
    table.add_column("reason")
    unusable = set(report.credentials.unusable) if report.credentials is not None else set()
    for target in report.targets:
        reason = target.reason
        if target.switched is not None:
            reason = f"{target.switched}; {reason}"
        if target.provider in unusable:
            reason = f"no usable credentials (below); {reason}"
        # Text cells: names and reasons are shown verbatim, never parsed as Rich markup.
        table.add_row(
            Text(f"{target.provider}/{target.model}"),
            Text(target.status, style=STATUS_STYLES.get(target.status, "")),
            Text(target.breaker, style=BREAKER_STYLES.get(target.breaker, "")),
            Text(failures_cell(target)),
            Text(seconds_cell(target.cooldown_remaining_s)),
            Text(latency_cell(target.latency)),
            Text(reason),
        )
    return table


def locks_table(report: HealthReport, url: str) -> Table | Text:
    rows = [(account, lock) for account in report.accounts for lock in account.locks]
    if not rows:
        count = len(report.accounts)
        return Text(f"no account is locked ({count} configured at {url})")
    table = Table(title="Account locks", title_justify="left")
    table.add_column("provider")
    table.add_column("account")
    table.add_column("model")
    table.add_column("locked for", justify="right")
    table.add_column("reason")
    for account, lock in rows:
        table.add_row(
            Text(account.provider),
            Text(account.account),
            Text(lock.model),
            Text(seconds_cell(lock.remaining_s), style="red"),
            Text(lock.reason),
        )
    return table


def failures_cell(target: TargetView) -> str:
    """``2 in a row, 3/5 in window``: the failures since the last success, then failed/all
    calls in the rolling window; ``-`` when neither has any."""
    parts = []
    if target.consecutive_failures:
        parts.append(f"{target.consecutive_failures} in a row")
    if target.window_calls:
        parts.append(f"{target.window_failures}/{target.window_calls} in window")
    return ", ".join(parts) or "-"


def seconds_cell(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds >= 60:
        minutes, rest = divmod(round(seconds), 60)
        return f"{minutes}m{rest:02d}s"
    return f"{seconds:.1f}s"


def latency_cell(latency: LatencyView | None) -> str:
    if latency is None:
        return "-"
    parts = []
    if latency.total_ms is not None:
        parts.append(f"total {format_ms(latency.total_ms)}")
    if latency.ttft_ms is not None:
        parts.append(f"ttft {format_ms(latency.ttft_ms)}")
    return f"{', '.join(parts)} (n={latency.samples})"

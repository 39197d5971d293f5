"""``gw replay --config CANDIDATE [--since 24h] [--until T] [--limit N] [--state-dir DIR]
[--json]``: route the recorded requests of a period again under a candidate config and
show what would change, without calling any upstream or touching the running server.

The traces are read from the store ``gw traces`` reads (the state dir's, or ``state.url``
of the config in use: the candidate names what to compare, not where state lives); the
candidate is compiled as a reload would compile it, with gw's shipped catalog, but no
``GW_*`` overrides and no plugins. The comparison and its assumptions:
gw/execution/replay.py; the ``--json`` shape: gw/execution/replay_report.py and
docs/reference/cli.md.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from gw.cli.console import fail, print_json, stdout
from gw.cli.options import JsonOption, StateDirOption, resolve_home
from gw.cli.replay_view import replay_renderables
from gw.cli.state_target import state_target
from gw.config import ConfigError
from gw.environment import read_config_text, read_shipped_catalog
from gw.execution.replay_report import candidate_snapshot, replay_report
from gw.record import TraceRecord
from gw.store.usage import parse_since

DEFAULT_LIMIT = 100_000


def replay_command(  # keyword-only: one parameter per flag, Typer passes them by name
    *,
    config: Annotated[
        Path,
        typer.Option("--config", help="The candidate config file to replay under."),
    ],
    since: Annotated[
        str,
        typer.Option(
            "--since", help="Start of the period: a duration back (30m, 24h, 7d) or a date."
        ),
    ] = "24h",
    until: Annotated[
        str | None,
        typer.Option("--until", help="End of the period, as --since (default: now)."),
    ] = None,
    limit: Annotated[
        int,
        typer.Option("--limit", "-n", min=1, help="At most this many requests, newest first."),
    ] = DEFAULT_LIMIT,
    state_dir: StateDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show what a candidate config would change for the requests of a period: targets
    chosen, requests refused or degraded and why, cost by route and tenant."""
    now = time.time()
    try:
        start = parse_since(since, now=now)
        end = now if until is None else parse_since(until, now=now)
    except ValueError as error:
        fail(f"--since/--until {error}")
    if end <= start:
        fail(f"--until must be after --since (the period {since} .. {until} is empty)")
    try:
        candidate = candidate_snapshot(
            read_config_text(config), str(config), read_shipped_catalog()
        )
    except ConfigError as error:
        fail(f"the candidate config is not valid: {error}")
    except OSError as error:
        fail(f"cannot read the candidate config {config}: {error.strerror or error}")
    target = state_target(resolve_home(state_dir))
    traces: list[TraceRecord] = []
    if target.exists():
        traces = target.run(lambda store: store.traces_between(start, end, limit=limit + 1))
    report = replay_report(
        traces[:limit],
        candidate,
        since=start,
        until=end,
        source=str(config),
        truncated=len(traces) > limit,
    )
    if as_json:
        print_json(report)
        return
    for renderable in replay_renderables(report, store=target.label):
        stdout.print(renderable)

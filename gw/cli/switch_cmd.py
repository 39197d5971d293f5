"""``gw switch``: kill switches on the running server (``/admin/v1/switches``).

    gw switch off provider NAME --reason TEXT
    gw switch off route NAME --reason TEXT
    gw switch off target PROVIDER/MODEL [--route NAME] --reason TEXT
    gw switch on provider|route|target ... [--reason TEXT]
    gw switch breaker PROVIDER/MODEL open|closed|auto [--reason TEXT]
    gw switch list [--json]

Each change is a new config revision, audited with who made it (the admin key, an API
key's id, or ``local-admin`` for the local admin token) and why; ``gw config history``
shows both. ``--json`` prints the server's answer (gw/server/admin/switches_api.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.table import Table
from rich.text import Text

from gw.cli.admin_client import admin_call_or_fail
from gw.cli.console import fail, stdout
from gw.cli.options import ConfigOption, JsonOption, StateDirOption, resolve_home

SWITCHES_PATH = "/admin/v1/switches"
Subject = Literal["provider", "route", "target"]
BreakerState = Literal["open", "closed", "auto"]

switch_app = typer.Typer(
    help="Kill switches: take a provider, route or target out of service, force a breaker.",
    no_args_is_help=True,
)

RouteOption = Annotated[
    str | None, typer.Option("--route", help="For a target: in this route only (default: all).")
]
SubjectArgument = Annotated[Subject, typer.Argument(help="provider, route or target.")]
NameArgument = Annotated[str, typer.Argument(help="Its name; a target as provider/model.")]
SAY_WHY = "say why: --reason TEXT (clients and gw explain are told it)"
ReasonOption = Annotated[
    str | None, typer.Option("--reason", help="Why: clients and gw explain are told it.")
]


@switch_app.command("off")
def off_command(  # keyword-only: one parameter per flag, Typer passes them by name
    *,
    subject: SubjectArgument,
    name: NameArgument,
    route: RouteOption = None,
    reason: ReasonOption = None,
    state_dir: StateDirOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Take a provider, a route or a target out of service (a new config revision)."""
    if not reason:
        fail(SAY_WHY)
    body = _subject(subject, name, route) | {"state": "disabled", "reason": reason}
    _send(body, state_dir, config, as_json=as_json)


@switch_app.command("on")
def on_command(
    *,
    subject: SubjectArgument,
    name: NameArgument,
    route: RouteOption = None,
    reason: ReasonOption = None,
    state_dir: StateDirOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Put a provider, a route or a target back in service."""
    body = _subject(subject, name, route) | {"state": "enabled", "reason": reason}
    _send(body, state_dir, config, as_json=as_json)


@switch_app.command("breaker")
def breaker_command(
    *,
    target: Annotated[str, typer.Argument(help="The target, as provider/model.")],
    state: Annotated[BreakerState, typer.Argument(help="open, closed, or auto (health decides).")],
    reason: ReasonOption = None,
    state_dir: StateDirOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Force a target's breaker open (never called) or closed (always tried), or auto."""
    if state != "auto" and not reason:
        fail(SAY_WHY)
    body = {"target": target, "state": f"breaker_{state}", "reason": reason}
    _send(body, state_dir, config, as_json=as_json)


@switch_app.command("list")
def list_command(
    state_dir: StateDirOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """The switches in force, with who set each, when and why."""
    answer = admin_call_or_fail(resolve_home(state_dir), config, "GET", SWITCHES_PATH)
    if as_json:
        typer.echo(answer.text)
        return
    listing = answer.json()
    switches = listing["switches"]
    if not switches:
        stdout.print(f"No switches (revision {listing['revision']}).", highlight=False)
        return
    stdout.print(switches_table(switches))


def switches_table(switches: list[dict[str, Any]]) -> Table:
    table = Table(title="Switches", title_justify="left")
    for column in ("subject", "state", "by", "at", "reason"):
        table.add_column(column)
    for switch in switches:
        subject = " ".join(
            f"{name} {switch[name]}" for name in ("provider", "route", "target") if switch[name]
        )
        values = (subject, switch["state"], switch["by"], switch["at"], switch["reason"])
        table.add_row(*(Text(str(value or "-")) for value in values))
    return table


def _subject(subject: Subject, name: str, route: str | None) -> dict[str, str]:
    if route is not None and subject != "target":
        fail("--route is for a target only")
    body = {str(subject): name}
    if route is not None:
        body["route"] = route
    return body


def _send(
    body: dict[str, Any], state_dir: Path | None, config: Path | None, *, as_json: bool
) -> None:
    answer = admin_call_or_fail(resolve_home(state_dir), config, "POST", SWITCHES_PATH, body)
    if as_json:
        typer.echo(answer.text)
        return
    result = answer.json()
    if not result["changed"]:
        stdout.print(
            f"Nothing to change: no such switch (revision {result['revision']}).", highlight=False
        )
    elif result["switch"] is not None:
        stdout.print(f"{result['switch']['says']} (revision {result['revision']})", highlight=False)
    else:
        stdout.print(f"Switch ended (revision {result['revision']}).", highlight=False)

"""``gw route-preview --model M [--message TEXT] [--stream] [--tenant T] [--key ID]
[--kind K] [--json]``: ask the running server where a request would go
(``POST /admin/v1/route-preview``), without calling any upstream.

``--json`` prints the server's answer unchanged: ``{"revision", "policy", "decision",
"rule"}``, ``decision`` as in ``gw explain --json``, ``rule`` the policy that decided and
what it matched on. The server and the admin key are found as for every admin call
(gw/cli/admin_client.py).
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

import typer
from rich.table import Table
from rich.text import Text

from gw.cli.admin_client import admin_call_or_fail
from gw.cli.console import stdout
from gw.cli.options import ConfigOption, JsonOption, StateDirOption, resolve_home

PREVIEW_PATH = "/admin/v1/route-preview"


def route_preview_command(  # keyword-only: one parameter per flag, Typer passes them by name
    *,
    model: Annotated[str, typer.Option("--model", help="A route name or provider/model.")],
    message: Annotated[
        str, typer.Option("--message", help="The user message to route (sizes the estimate).")
    ] = "hello",
    stream: Annotated[bool, typer.Option("--stream", help="As a streamed request.")] = False,
    tenant: Annotated[
        str | None, typer.Option("--tenant", help="As a caller of this tenant.")
    ] = None,
    key: Annotated[
        str | None,
        typer.Option("--key", help="As the API key with this id (key_...); add its --tenant."),
    ] = None,
    kind: Annotated[
        str,
        typer.Option("--kind", help="chat, responses, embeddings or count_tokens."),
    ] = "chat",
    state_dir: StateDirOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show which policy decides a request, which targets it would try, in order, and why
    others were rejected."""
    body = {"model": model, "messages": [{"role": "user", "content": message}], "stream": stream}
    query = (
        {"kind": kind} | ({"tenant": tenant} if tenant else {}) | ({"api_key": key} if key else {})
    )
    path = f"{PREVIEW_PATH}?{urlencode(query)}"
    answer = admin_call_or_fail(resolve_home(state_dir), config, "POST", path, body)
    if as_json:
        typer.echo(answer.text)
        return
    preview = answer.json()
    decision = preview["decision"]
    stdout.print(
        f"{model} -> route {decision['route']}, policy {preview['policy']}, "
        f"strategy {decision['strategy']} (revision {preview['revision']})",
        highlight=False,
        markup=False,
    )
    stdout.print(rule_line(preview["rule"]), highlight=False, markup=False)
    if preview["rule"]["deny"]:
        return
    stdout.print(candidates_table(decision))
    if decision.get("degraded"):
        reasons = ", ".join(decision.get("degraded_reasons") or ()) or "no reason recorded"
        stdout.print(f"Degraded: {reasons}", highlight=False, markup=False)
    for note in decision.get("notes") or ():
        stdout.print(f"Note: {note}", highlight=False, markup=False)


def rule_line(rule: dict[str, Any]) -> str:
    """Which rule decided, in words: the policy, what it matched on, whether it denies."""
    matched = ", ".join(rule["matched_on"])
    basis = f"matched on {matched}" if matched else "no policy matched: the built-in default"
    line = f"Rule: policy {rule['policy']} ({basis}; priority {rule['priority']})"
    if rule["deny"]:
        line += f"\nDenied: 403 permission_denied, {rule['deny_reason']}"
    return line


def candidates_table(decision: dict[str, Any]) -> Table:
    table = Table(title="Candidates", title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("target", no_wrap=True)
    table.add_column("priority", justify="right")
    table.add_column("weight", justify="right")
    table.add_column("score", justify="right")
    table.add_column("status")
    for candidate in decision["candidates"]:
        rank = candidate["rank"]
        rejected = candidate["rejected"]
        status = "chosen" if rank == 0 else f"fallback #{rank}" if rank is not None else ""
        if rejected is not None:
            detail = f" ({candidate['detail']})" if candidate["detail"] else ""
            status = f"rejected: {rejected}{detail}"
        score = candidate["score"]
        table.add_row(
            Text("-" if rank is None else str(rank + 1)),
            Text(f"{candidate['provider']}/{candidate['model']}"),
            Text(str(candidate["priority"])),
            Text(str(candidate["weight"])),
            Text("-" if score is None else f"{score:.3g}"),
            Text(status, style="red" if rejected else "green" if rank == 0 else ""),
        )
    return table

"""``gw route-preview --model M [--message TEXT] [--json]``: ask the running server where a
request would go (``POST /admin/v1/route-preview``), without calling any upstream.

``--json`` prints the server's answer unchanged: ``{"revision", "policy", "decision"}``,
``decision`` as in ``gw explain --json``. The server and the admin key are found as
``gw health`` finds them (gw/cli/health_cmd.py).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import httpx
import typer
from rich.table import Table
from rich.text import Text

from gw.cli.console import fail, stdout
from gw.cli.health_cmd import (
    ADMIN_KEY_ENV,
    START_HINT,
    TIMEOUT_S,
    admin_key,
    loopback_url,
    read_server_file,
)
from gw.cli.options import ConfigOption, JsonOption, StateDirOption, resolve_home
from gw.environment import SERVER_FILE_NAME

PREVIEW_PATH = "/admin/v1/route-preview"


def route_preview_command(
    model: Annotated[str, typer.Option("--model", help="A route name or provider/model.")],
    message: Annotated[
        str, typer.Option("--message", help="The user message to route (sizes the estimate).")
    ] = "hello",
    state_dir: StateDirOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show which targets a request would try, in order, and why others were rejected."""
    home = resolve_home(state_dir)
    server = read_server_file(home / SERVER_FILE_NAME)
    url = loopback_url(server)
    headers = {}
    if server.auth_mode != "open":
        key = admin_key(home, config, url)
        if key is not None:
            headers["authorization"] = f"Bearer {key}"
    body = {"model": model, "messages": [{"role": "user", "content": message}]}
    try:
        with httpx.Client(timeout=TIMEOUT_S, trust_env=False) as client:
            answer = client.post(url + PREVIEW_PATH, json=body, headers=headers)
    except httpx.ConnectError:
        fail(f"no gw server answers at {url} (connection refused); {START_HINT}")
    except httpx.HTTPError as error:
        fail(f"cannot reach gw at {url}: {type(error).__name__}: {error}")
    if answer.status_code != 200:
        fail(error_message(answer))
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
    stdout.print(candidates_table(decision))


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


def error_message(answer: httpx.Response) -> str:
    try:
        error = json.loads(answer.text)["error"]
        message = f"{error['code']}: {error['message']}"
    except (ValueError, KeyError, TypeError):
        message = f"HTTP {answer.status_code}"
    text = f"{PREVIEW_PATH} failed: {message}"
    if answer.status_code in (401, 403):
        text += f"; set {ADMIN_KEY_ENV}, or pass the server's --config"
    return text

"""``gw dashboard``: the address of the running server's web dashboard, logged in.

In either auth mode (the dashboard is never anonymous: gw/server/auth.py) it asks the
server, with the local admin token or an admin key (found as for every admin call:
gw/cli/admin_client.py), for a one-time login link (``POST /admin/v1/dashboard/login-link``)
and prints it: the link works once, within 60 seconds, and gives the browser that opens it
a read-only session of 8 hours (in memory: a restart of gw ends it). Neither the token nor
a key ever reaches the browser. ``--open`` also opens the address in a browser; ``--json``
prints ``{"url", "auth_mode", "login_link": true, "expires_in_s": seconds}``.
"""

from __future__ import annotations

import webbrowser
from typing import Annotated, Any

import typer

from gw.cli.admin_client import admin_call_or_fail, answer_json
from gw.cli.console import print_json, stderr, stdout
from gw.cli.options import ConfigOption, JsonOption, StateDirOption, resolve_home

LOGIN_LINK_PATH = "/admin/v1/dashboard/login-link"
STATUS_PATH = "/admin/v1/status"

OpenOption = Annotated[
    bool, typer.Option("--open", help="Also open the dashboard in a web browser.")
]


def dashboard_command(
    state_dir: StateDirOption = None,
    config: ConfigOption = None,
    open_browser: OpenOption = False,
    as_json: JsonOption = False,
) -> None:
    """Print a one-time login link to the dashboard (60 s, single use)."""
    home = resolve_home(state_dir)
    # The live server says its mode (server.json may predate a switch to keys), and the
    # call fails here, with what to do, when none runs or the admin key is missing.
    status = answer_json(admin_call_or_fail(home, config, "GET", STATUS_PATH), STATUS_PATH)
    link = answer_json(admin_call_or_fail(home, config, "POST", LOGIN_LINK_PATH), LOGIN_LINK_PATH)
    found: dict[str, Any] = {
        "url": link["url"],
        "auth_mode": status["server"]["auth_mode"],
        "login_link": True,
        "expires_in_s": link["expires_in_s"],
    }
    if as_json:
        print_json(found)
    else:
        render(found)
    if open_browser:
        try_open(found["url"])


def render(found: dict[str, Any]) -> None:
    stdout.print(
        f"Open this link within {found['expires_in_s']:.0f} s to log in to the dashboard "
        "(it works once; the session lasts 8 hours, read-only):",
        highlight=False,
        markup=False,
    )
    typer.echo(f"  {found['url']}")  # echo: never wrapped, so it stays one clickable line


def try_open(url: str) -> None:
    try:
        opened = webbrowser.open(url)
    except webbrowser.Error:
        opened = False
    if not opened:
        stderr.print("no web browser could be opened here: open the link above yourself")

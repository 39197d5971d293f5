"""``gw status``: what the running server says about itself (``GET /admin/v1/status``,
shape in gw/server/admin/status.py), with ``--json`` printing it plus ``"running": true``.

With no server running it says so on stderr and exits 1, after printing what the state
dir tells without one (``--json``: ``{"running": false, "reason", "store": {"path",
"size_bytes", "schema_version"}, "last_revision": {"revision", "time", "source", "hash"}
| null}``, and with state.url the ``fleet`` as the store has it).
"""

from __future__ import annotations

import datetime
import time
from pathlib import Path
from typing import Any

import msgspec

from gw.cli.admin_client import NoServerError, admin_call, answer_json
from gw.cli.config_cmd import read_store
from gw.cli.console import fail, print_json, stdout
from gw.cli.options import ConfigOption, JsonOption, StateDirOption, resolve_home
from gw.cli.state_target import state_target
from gw.startup.fleet_registry import fleet_view
from gw.store.admin_token import admin_token_path
from gw.store.file_checks import database_size
from gw.store.port import GatewayRow, StateStore
from gw.upstream_http.env_proxy import describe_proxies

STATUS_PATH = "/admin/v1/status"


def status_command(
    state_dir: StateDirOption = None, config: ConfigOption = None, as_json: JsonOption = False
) -> None:
    """Show the running server: address, revision, uptime, config, store, vault, requests.

    Exits 1 when no server runs, after printing what the state dir tells."""
    home = resolve_home(state_dir)
    try:
        answer = admin_call(home, config, "GET", STATUS_PATH)
    except NoServerError as error:
        offline = offline_report(home, str(error), config)
        if as_json:
            print_json(offline)
        else:
            render_offline(offline)
        fail(str(error))
    report = answer_json(answer, STATUS_PATH)
    if as_json:
        print_json({"running": True, **report})
        return
    render(report)
    # Where the admin plane's local token is (the gw CLI sends it by itself; a script or
    # curl reads it from here), never the token itself.
    stdout.print(f"admin    token in {admin_token_path(home)}", highlight=False, markup=False)


def offline_report(home: Path, reason: str, config: Path | None = None) -> dict[str, Any]:
    target = state_target(home, config)

    async def read(store: StateStore) -> tuple[int | None, list[Any], list[GatewayRow] | None]:
        registry = store.gateways()
        fleet = None if registry is None else await registry.list()
        return await store.schema_version(), await store.list_revisions(limit=1), fleet

    nothing: tuple[int | None, list[Any], list[GatewayRow] | None] = (None, [], None)
    version, latest, fleet = read_store(home, read, nothing, config)
    # With state.url the fleet is in the store: seen from here without a local gateway.
    shown = {} if fleet is None else {"fleet": fleet_view(fleet, now=time.time(), me="")}
    return shown | {
        "running": False,
        "reason": reason,
        "store": {
            "path": target.label,
            "size_bytes": None if target.shared else database_size(target.path),
            "schema_version": version,
        },
        "last_revision": msgspec.to_builtins(latest[0]) if latest else None,
    }


def render_offline(offline: dict[str, Any]) -> None:
    store, last = offline["store"], offline["last_revision"]
    lines = ["gw is not running", f"store    {store_line(store)}"]
    if last is not None:
        lines.append(
            f"config   last revision {last['revision']} ({last['source']}, {when(last['time'])})"
        )
    if (fleet := offline.get("fleet")) is not None:
        lines.extend(fleet_lines(fleet))
    for line in lines:
        stdout.print(line, highlight=False, markup=False)


def render(report: dict[str, Any]) -> None:
    server, config = report["server"], report["config"]
    store, vault, requests = report["store"], report["vault"], report["requests"]
    classes = ", ".join(f"{name} {count}" for name, count in requests["by_class"].items())
    lines = [
        f"gw {server['version']} at {server['url']} (pid {server['pid']}), "
        f"up {uptime(server['uptime_s'])}, auth {server['auth_mode']}",
        f"config   revision {report['revision']}, {config_origin(config)}, "
        f"applied {when(config.get('applied_at'))}",
    ]
    if config.get("error"):
        lines.append(
            f"         last edit NOT applied ({when(config['error_at'])}): {config['error']}"
        )
    lines.append(f"store    {store_line(store)}")
    references = vault["references"]
    used = f"{len(references)} vault: references" if references else "no vault: references"
    lines.append(f"vault    {vault['path']} ({'exists' if vault['exists'] else 'none'}), {used}")
    lines.append(f"requests {requests['total']} since start ({classes})")
    if proxied := describe_proxies(report.get("upstream_proxies") or {}):
        lines.append(f"proxy    {proxied}")
    if journal := report.get("usage_journal"):
        lines.append(f"journal  {journal_line(journal)}")
    if losses := report.get("trace_losses"):
        lines.append(f"traces   {losses_line(losses)}")
    if (fleet := report.get("fleet")) is not None:
        lines.extend(fleet_lines(fleet))
    for line in lines:
        stdout.print(line, highlight=False, markup=False)


def fleet_lines(fleet: list[dict[str, Any]]) -> list[str]:
    """The fleet (state.url): one line per registered gateway, this one marked ``*``."""
    live = [gateway for gateway in fleet if not gateway["gone"]]
    revisions = {gateway["revision"] for gateway in live}
    agree = "one config" if len(revisions) <= 1 else f"{len(revisions)} revisions"
    lines = [f"fleet    {len(live)} gateways ({agree}), {len(fleet) - len(live)} gone"]
    for gateway in fleet:
        health = "GONE" if gateway["gone"] else "ready" if gateway["ready"] else "NOT ready"
        lines.append(
            f"  {'*' if gateway['self'] else ' '} {gateway['id']}  {gateway['url']}  "
            f"revision {gateway['revision']} ({gateway['config_hash'][:12]})  {health}, "
            f"heartbeat {gateway['age_s']:.1f}s ago"
        )
    return lines


def journal_line(journal: dict[str, Any]) -> str:
    """The usage journal: its size, its failures, and what this start recovered."""
    parts = [f"{journal['path']} ({journal['bytes'] / 1024:.0f} KiB)"]
    if journal["errors"] or journal["skipped"]:
        parts.append(f"{journal['errors']} write errors, {journal['skipped']} rows not journaled")
    recovered = journal["recovered_at_start"]
    if recovered["rows"] or recovered["torn_lines"]:
        parts.append(
            f"recovered {recovered['rows']} usage rows at start ({recovered['without_trace']}"
            f" without a trace, {recovered['torn_lines']} torn lines skipped)"
        )
    if recovered["error"]:
        parts.append(f"NOT recovered at start: {recovered['error']}")
    return ", ".join(parts)


def losses_line(losses: dict[str, Any]) -> str:
    """The traces lost by this run and the last one: of requests in the usage ledger
    (routed) and of requests refused before routing."""
    this = losses["this_run"]
    parts = [f"lost this run {this['routed'] + this['unrouted']}{lost_kinds(this)}"]
    last = losses["last_run"]
    if last is not None:
        ended = f"{last['ended']} {when(last['stopped_at'])}" if last["stopped_at"] else "killed"
        if last["routed"] is None:
            parts.append(f"last run ({ended}): counting")
        else:
            total = last["routed"] + last["unrouted"]
            parts.append(f"last run ({ended}) {total}{lost_kinds(last)}")
            since = last["counted_from"]
            if since is not None and since > last["started_at"]:
                parts.append(f"counted from {when(since)} (older traces were pruned)")
    return ", ".join(parts)


def lost_kinds(counts: dict[str, Any]) -> str:
    if not (counts["routed"] or counts["unrouted"]):
        return ""
    return f" ({counts['routed']} routed, {counts['unrouted']} refused before routing)"


def config_origin(config: dict[str, Any]) -> str:
    """The file the running config came from, or the built-in default while there is none."""
    path = config.get("path", config["source"])
    if config.get("exists") is False:
        return f"{config['source']} (no file at {path})"
    return str(path)


def store_line(store: dict[str, Any]) -> str:
    size, shared = store["size_bytes"], "://" in store["path"]
    shown = ("PostgreSQL" if shared else "missing") if size is None else f"{size / 1024:.0f} KiB"
    return f"{store['path']} ({shown}, schema version {store['schema_version']})"


def when(epoch: float | None) -> str:
    if epoch is None:
        return "-"
    return datetime.datetime.fromtimestamp(epoch).astimezone().isoformat(timespec="seconds")


def uptime(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"

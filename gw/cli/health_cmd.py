"""``gw health``: ask the running server (found through ``<state-dir>/server.json``) for
``GET /admin/v1/health`` and render it; ``--json`` prints the server's JSON unchanged
(shape: gw/server/admin.py).

In ``keys`` mode the call needs the admin key: ``$GW_ADMIN_KEY`` when set, else the
config's ``auth.admin_key`` reference (``env:NAME``) resolved from this shell's
environment, the config found as ``gw serve`` finds it (``--config``, ``$GW_CONFIG``,
``<state-dir>/gw.yaml``).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping
from pathlib import Path

import httpx
import msgspec
import typer
from rich.table import Table
from rich.text import Text

from gw.adapters.secrets import SecretResolver
from gw.cli.console import fail, stdout
from gw.cli.options import (
    ConfigOption,
    JsonOption,
    StateDirOption,
    load_or_fail,
    resolve_config,
    resolve_home,
)
from gw.cli.traces_view import format_ms
from gw.environment import SERVER_FILE_NAME, process_environ
from gw.errors import GatewayError
from gw.server.admin import HealthReport, LatencyView, TargetView

HEALTH_PATH = "/admin/v1/health"
ADMIN_KEY_ENV = "GW_ADMIN_KEY"
TIMEOUT_S = 10.0
STATUS_STYLES = {"healthy": "green", "degraded": "yellow", "unhealthy": "red"}
BREAKER_STYLES = {"closed": "green", "half_open": "yellow", "open": "red"}
START_HINT = "start one with `gw serve`"


class ServerInfo(msgspec.Struct, kw_only=True):
    """The fields of ``server.json`` this command reads (``announce`` in gw/wiring.py)."""

    url: str
    port: int
    host: str | None = None
    auth_mode: str | None = None


def health_command(
    state_dir: StateDirOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show each target's health, breaker and latency, and which accounts are locked."""
    home = resolve_home(state_dir)
    server = read_server_file(home / SERVER_FILE_NAME)
    url = loopback_url(server)
    headers = {}
    if server.auth_mode != "open":
        key = admin_key(home, config, url)
        if key is not None:
            headers["authorization"] = f"Bearer {key}"
    try:
        # trust_env=False: a proxy from the environment must not intercept a loopback call.
        with httpx.Client(timeout=TIMEOUT_S, trust_env=False) as client:
            answer = client.get(url + HEALTH_PATH, headers=headers)
    except httpx.ConnectError:
        fail(f"no gw server answers at {url} (connection refused); {START_HINT}")
    except httpx.HTTPError as error:
        fail(f"cannot reach gw at {url}: {type(error).__name__}: {error}")
    if answer.status_code != 200:
        fail(error_message(answer))
    if as_json:
        typer.echo(answer.text)
        return
    try:
        report = msgspec.json.decode(answer.content, type=HealthReport)
    except msgspec.DecodeError as error:
        fail(f"the server at {url} answered an unexpected health report: {error}")
    stdout.print(f"gw at {url}, config revision {report.revision}", highlight=False)
    stdout.print(targets_table(report))
    stdout.print(locks_table(report, url))


def read_server_file(path: Path) -> ServerInfo:
    try:
        return msgspec.json.decode(path.read_bytes(), type=ServerInfo)
    except FileNotFoundError:
        fail(f"no gw server is running for this state directory (no {path}); {START_HINT}")
    except (OSError, msgspec.DecodeError) as error:
        fail(f"cannot read {path}: {error}")


def loopback_url(server: ServerInfo) -> str:
    """The server's url, with a wildcard bind (0.0.0.0, ::) reached over loopback."""
    if server.host is None:
        return server.url
    try:
        unspecified = ipaddress.ip_address(server.host).is_unspecified
    except ValueError:
        return server.url
    if not unspecified:
        return server.url
    loopback = "[::1]" if ":" in server.host else "127.0.0.1"
    return f"http://{loopback}:{server.port}"


def admin_key(home: Path, config: Path | None, url: str) -> str | None:
    """``$GW_ADMIN_KEY``, else the config's ``auth.admin_key`` resolved here, else None."""
    environ = process_environ()
    if environ.get(ADMIN_KEY_ENV):
        return environ[ADMIN_KEY_ENV]
    path, explicit = resolve_config(config, home)
    reference = load_or_fail(path, explicit=explicit).config.auth.admin_key
    if reference is None:
        return None
    return resolve_admin_key(reference, environ, url)


def resolve_admin_key(reference: str, environ: Mapping[str, str], url: str) -> str:
    try:
        return SecretResolver(environ).resolve(reference, field="auth.admin_key")
    except GatewayError:
        # The reference names a variable, never the key: safe to print.
        fail(
            f"the server at {url} needs the admin key: auth.admin_key is {reference}, "
            f"which this shell cannot resolve; export it, or set {ADMIN_KEY_ENV}"
        )


def error_message(answer: httpx.Response) -> str:
    """The server's own error message (OpenAI shape), with what to do for auth errors."""
    try:
        error = json.loads(answer.text)["error"]
        message = f"{error['code']}: {error['message']}"
    except (ValueError, KeyError, TypeError):
        message = f"HTTP {answer.status_code}"
    text = f"{HEALTH_PATH} failed: {message}"
    if answer.status_code in (401, 403):
        text += (
            f"; set {ADMIN_KEY_ENV}, or make auth.admin_key resolvable here "
            "(pass the server's --config)"
        )
    return text


def targets_table(report: HealthReport) -> Table:
    table = Table(title="Targets", title_justify="left")
    table.add_column("target", no_wrap=True)
    table.add_column("status")
    table.add_column("breaker")
    table.add_column("failures (window)", justify="right")
    table.add_column("cooldown left", justify="right")
    table.add_column("latency ms")
    table.add_column("reason")
    for target in report.targets:
        # Text cells: names and reasons are shown verbatim, never parsed as Rich markup.
        table.add_row(
            Text(f"{target.provider}/{target.model}"),
            Text(target.status, style=STATUS_STYLES.get(target.status, "")),
            Text(target.breaker, style=BREAKER_STYLES.get(target.breaker, "")),
            Text(failures_cell(target)),
            Text(seconds_cell(target.cooldown_remaining_s)),
            Text(latency_cell(target.latency)),
            Text(target.reason),
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
    """``2 (3/5)``: consecutive failures, then failed/all calls in the rolling window."""
    return f"{target.consecutive_failures} ({target.window_failures}/{target.window_calls})"


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

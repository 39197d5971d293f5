"""The ``gw`` command: Typer app; each command parses flags, calls a layer below, renders."""

from __future__ import annotations

import dataclasses
import gc
import sqlite3
from pathlib import Path
from typing import Annotated

import typer

from gw.buildinfo import build_info
from gw.cli import console
from gw.cli.console import fail
from gw.cli.gc_pause import resume_after_start
from gw.cli.lazy import LazyGroup
from gw.cli.options import (
    ConfigOption,
    JsonOption,
    StateDirOption,
    load_or_fail,
    resolve_config,
    resolve_home,
)
from gw.environment import config_limits, env_overrides, process_environ
from gw.store import StoreError

app = typer.Typer(
    name="gw",
    help="gw: a local-first LLM gateway. Start with `gw serve`, then `gw traces`.",
    cls=LazyGroup,  # every command but version and serve loads when it runs (gw/cli/lazy.py)
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version_callback(value: bool) -> None:
    if value:
        print_version()
        raise typer.Exit


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version_callback, is_eager=True, help="Print version."),
    ] = False,
) -> None:
    """gw: route, retry, stream and explain every AI call."""


def print_version(state_dir: Path | None = None, *, as_json: bool = False) -> None:
    """``gw <version>`` first (a contract scripts rely on), then how this gw was built."""
    info = build_info(process_environ())
    if as_json:
        console.print_json({**dataclasses.asdict(info), "state_dir": str(resolve_home(state_dir))})
        return
    lock = f"sha256:{info.lock_sha256} ({info.lock_source})" if info.lock_sha256 else "unknown"
    zipapp = "no" if not info.zipapp else f"yes ({info.artifact})" if info.artifact else "yes"
    for line in (
        f"gw {info.version}",
        f"python {info.python} ({info.executable})",
        f"lock {lock}",
        f"zipapp {zipapp}",
        f"state dir {resolve_home(state_dir)}",
    ):
        console.stdout.print(line, highlight=False, markup=False)


@app.command("version")
def version_command(state_dir_flag: StateDirOption = None, as_json: JsonOption = False) -> None:
    """Print gw's version, the Python running it and the state directory in use."""
    print_version(state_dir_flag, as_json=as_json)


@app.command("serve")
def serve_command(
    config: ConfigOption = None,
    host: Annotated[str | None, typer.Option("--host", help="Address to bind.")] = None,
    port: Annotated[int | None, typer.Option("--port", help="Port (0 picks a free one).")] = None,
    state_dir_flag: StateDirOption = None,
) -> None:
    """Run the gateway (default http://127.0.0.1:8787)."""
    gc.disable()  # while the server loads; resumed once it listens (gw/cli/gc_pause.py)
    try:
        serve(config, host, port, state_dir_flag)
    finally:
        gc.enable()  # already on after a start; on again after a failed one


def serve(
    config: Path | None, host: str | None, port: int | None, state_dir_flag: Path | None
) -> None:
    """``gw serve`` itself: load the config, then run the server until it is stopped."""
    home = resolve_home(state_dir_flag)
    path, explicit = resolve_config(config, home)
    flags = {
        name: value
        for name, value in (("server.host", host), ("server.port", port))
        if value is not None
    }
    loaded = load_or_fail(path, explicit=explicit, flags=flags, plugins=True)
    environ = process_environ()
    # The server's modules (Litestar, uvicorn: ~0.5 s) load only for `gw serve`.
    from gw.startup.plan import ServeError, ServePlan  # noqa: PLC0415
    from gw.wiring import run as run_server  # noqa: PLC0415

    plan = ServePlan(
        home=home,
        config=loaded.config,
        source=loaded.source,
        environ=environ,
        config_path=path,
        config_text=loaded.text,
        limits=config_limits(environ),
        explicit=explicit,
        overrides={**env_overrides(environ), **flags},
        on_listening=resume_after_start,
    )
    try:
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        run_server(plan)
    except (ServeError, StoreError, sqlite3.Error, OSError) as error:
        fail(str(error))
    except KeyboardInterrupt:
        pass

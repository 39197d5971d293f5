"""``gw config show`` and ``gw config validate``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import msgspec
import typer
import yaml

from gw.cli.console import fail, print_json, stdout
from gw.cli.options import (
    ConfigOption,
    JsonOption,
    StateDirOption,
    load_effective,
    load_or_fail,
    resolve_config,
    resolve_home,
)
from gw.config import Config, ConfigError
from gw.config.units import encode_unit

config_app = typer.Typer(help="Show or check the config.", no_args_is_help=True)
REDACTED = "***"


def redacted(config: Config) -> dict[str, Any]:
    """The config as plain data; header values are hidden (they may hold credentials).

    ``api_key`` and ``admin_key`` are references (env:NAME), never secrets, so they show.
    """
    data: dict[str, Any] = msgspec.to_builtins(config, enc_hook=encode_unit)
    for provider in data.get("providers", []):
        provider["headers"] = dict.fromkeys(provider.get("headers", {}), REDACTED)
    return data


@config_app.command("show")
def show_command(
    config: ConfigOption = None, state_dir: StateDirOption = None, as_json: JsonOption = False
) -> None:
    """Print the resolved config (defaults, file and GW_* variables; secrets redacted)."""
    path, explicit = resolve_config(config, resolve_home(state_dir))
    loaded = load_or_fail(path, explicit=explicit)
    data = redacted(loaded.config)
    if as_json:
        print_json({"source": loaded.source, "config": data})
        return
    stdout.print(f"# source: {loaded.source}", highlight=False)
    stdout.print(yaml.safe_dump(data, sort_keys=False), highlight=False, end="")


@config_app.command("validate")
def validate_command(
    path: Annotated[
        Path | None, typer.Argument(help="File to check (default: the config gw would load).")
    ] = None,
    state_dir: StateDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Check a config file; exits non-zero with file:line: field: reason when it is bad."""
    if path is None:
        path, explicit = resolve_config(None, resolve_home(state_dir))
    else:
        explicit = True
    try:
        loaded = load_effective(path, explicit=explicit)
    except ConfigError as error:
        if as_json:
            problem = {"source": error.source, "line": error.line, "field": error.path}
            print_json({"valid": False, **problem, "reason": error.reason})
        fail(str(error))
    summary = {
        "valid": True,
        "source": loaded.source,
        "providers": len(loaded.config.providers),
        "routes": len(loaded.config.routes),
        "policies": len(loaded.config.policies),
        "models": len(loaded.config.models),
    }
    if as_json:
        print_json(summary)
        return
    stdout.print(
        f"ok: {loaded.source}: {summary['providers']} providers, {summary['routes']} routes, "
        f"{summary['policies']} policies, {summary['models']} catalog entries",
        highlight=False,
    )

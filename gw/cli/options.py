"""Options several commands share, and how they become paths."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

import typer

from gw.cli.console import fail
from gw.cli.gc_pause import gc_paused
from gw.config import ConfigError
from gw.environment import (
    ENV_OVERRIDES,
    LoadedConfig,
    config_limits,
    config_path,
    env_overrides,
    process_environ,
    read_config,
    state_dir,
)

StateDirOption = Annotated[
    Path | None,
    typer.Option(
        "--state-dir",
        help="State directory (default: $GW_HOME, else $XDG_STATE_HOME/gw or ~/.local/state/gw).",
    ),
]
ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", help="Config file (default: $GW_CONFIG, else <state-dir>/gw.yaml)."),
]
# The config paths `gw serve` flags set (gw/cli/main.py), by the flag a user typed.
FLAG_NAMES: dict[str, str] = {"server.host": "--host", "server.port": "--port"}
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON (stable, documented shape).")]


def override_names() -> dict[str, tuple[str, ...]]:
    """What sets a config field besides the file, by dotted path: ``server.host`` ->
    (``GW_HOST``, ``gw serve --host``), for the schema's and the reference's descriptions."""
    names: dict[str, tuple[str, ...]] = {}
    for variable, (path, _) in ENV_OVERRIDES.items():
        names[path] = (*names.get(path, ()), variable)
    for path, flag in FLAG_NAMES.items():
        names[path] = (*names.get(path, ()), f"gw serve {flag}")
    return names


def resolve_home(flag: Path | None) -> Path:
    return state_dir(flag, process_environ())


def resolve_config(flag: Path | None, home: Path) -> tuple[Path, bool]:
    """The config path and whether the user named it (a named file must exist)."""
    environ = process_environ()
    return config_path(flag, home, environ), flag is not None or bool(environ.get("GW_CONFIG"))


def load_effective(
    path: Path,
    *,
    explicit: bool,
    flags: Mapping[str, object] | None = None,
    plugins: bool = False,
) -> LoadedConfig:
    """The config as gw would run it: defaults < file < GW_* variables < ``flags``."""
    environ = process_environ()
    overrides = {**env_overrides(environ), **(flags or {})}
    with gc_paused():
        return read_config(
            path,
            explicit=explicit,
            overrides=overrides,
            limits=config_limits(environ),
            plugins=plugins,
        )


def load_or_fail(
    path: Path,
    *,
    explicit: bool,
    flags: Mapping[str, object] | None = None,
    plugins: bool = False,
) -> LoadedConfig:
    try:
        return load_effective(path, explicit=explicit, flags=flags, plugins=plugins)
    except ConfigError as error:
        fail(str(_blamed_on_its_setter(error, flags or {})))


def _blamed_on_its_setter(error: ConfigError, flags: Mapping[str, object]) -> ConfigError:
    """An error in a value a flag or a ``GW_*`` variable set names that, not the file."""
    environ = process_environ()
    setters = {path: f"${name}" for name, (path, _) in ENV_OVERRIDES.items() if name in environ}
    setters.update({path: FLAG_NAMES.get(path, path) for path in flags})
    setter = setters.get(error.path)
    return error if setter is None else ConfigError(setter, error.path, error.reason)

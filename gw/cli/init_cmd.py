"""``gw init``: write a commented example config into the state directory."""

from __future__ import annotations

from importlib import resources
from typing import Annotated

import typer

from gw.cli.console import fail, stdout
from gw.cli.options import StateDirOption, resolve_home
from gw.environment import CONFIG_FILE_NAME


def example_config() -> str:
    return resources.files("gw.cli").joinpath("example.yaml").read_text(encoding="utf-8")


def init_command(
    state_dir: StateDirOption = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write an example gw.yaml (OpenAI, a local OpenAI-compatible server, the mock)."""
    home = resolve_home(state_dir)
    target = home / CONFIG_FILE_NAME
    if target.exists() and not force:
        fail(f"{target} already exists; pass --force to overwrite it")
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    target.write_text(example_config(), encoding="utf-8")
    stdout.print(f"wrote {target}", highlight=False)
    stdout.print("next: edit it, then `gw config validate` and `gw serve`", highlight=False)

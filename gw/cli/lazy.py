"""Commands whose modules load only when they run.

Importing every command's module (rich tables and live views, the admin client, the
Prometheus text parser `gw top` reads, the vault) and building every command's parameters
cost `gw serve` ~0.1 s of its start for commands it never runs. A lazy command is named here
with where its function (or sub-app) lives; Click asks the group for a command by name, and
only then is its module imported and its parameters built. `gw --help` lists them all (and so
loads them all) in the order given.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from typing import Any

from typer import _click as click  # typer 0.28 vendors Click; its groups hold these types
from typer.core import TyperGroup
from typer.main import get_command_from_info, get_group_from_info
from typer.models import CommandInfo, TyperInfo

# name -> (module, command function), and name -> (module, typer.Typer sub-app)
LAZY_COMMANDS = {
    "init": ("gw.cli.init_cmd", "init_command"),
    "traces": ("gw.cli.traces_cmd", "traces_command"),
    "explain": ("gw.cli.traces_cmd", "explain_command"),
    "health": ("gw.cli.health_cmd", "health_command"),
    "status": ("gw.cli.status_cmd", "status_command"),
    "top": ("gw.cli.top_cmd", "top_command"),
    "usage": ("gw.cli.usage_cmd", "usage_command"),
    "route-preview": ("gw.cli.route_preview_cmd", "route_preview_command"),
    "replay": ("gw.cli.replay_cmd", "replay_command"),
    "dashboard": ("gw.cli.dashboard_cmd", "dashboard_command"),
}
LAZY_SUB_APPS = {
    "config": ("gw.cli.config_cmd", "config_app"),
    "vault": ("gw.cli.vault_cmd", "vault_app"),
    "keys": ("gw.cli.keys_cmd", "keys_app"),
    "state": ("gw.cli.state_cmd", "state_app"),
    "switch": ("gw.cli.switch_cmd", "switch_app"),
}


class LazyGroup(TyperGroup):
    """A Typer group whose command table also holds the lazy commands and sub-apps."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = LazyCommands(self, self.commands)


class LazyCommands(MutableMapping[str, click.Command]):
    """The group's name -> command table: a lazy entry is built the first time it is read.

    Typer's group reads this table to run a command, list commands in `--help` and suggest
    one for a typo, so all three see every name. Listed as Typer lists them: single
    commands (the lazy ones, then those registered on the app), then sub-apps.
    """

    def __init__(self, group: LazyGroup, eager: MutableMapping[str, click.Command]) -> None:
        self._group = group
        self._built: dict[str, click.Command | None] = dict.fromkeys(LAZY_COMMANDS)
        self._built.update(eager)
        self._built.update(dict.fromkeys(LAZY_SUB_APPS))

    def __getitem__(self, name: str) -> click.Command:
        command = self._built[name]
        if command is None:
            try:
                command = self._built[name] = self._load(name)
            except KeyError as error:
                # Not "no such command": Mapping.get, which Typer calls, would swallow it.
                raise RuntimeError(f"gw could not load its command {name!r}") from error
        return command

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._built)

    def __len__(self) -> int:
        return len(self._built)

    def _load(self, name: str) -> click.Command:
        markup = self._group.rich_markup_mode
        if name in LAZY_SUB_APPS:
            module, attribute = LAZY_SUB_APPS[name]
            return get_group_from_info(
                TyperInfo(getattr(importlib.import_module(module), attribute), name=name),
                pretty_exceptions_short=True,
                suggest_commands=self._group.suggest_commands,
                rich_markup_mode=markup,
            )
        module, attribute = LAZY_COMMANDS[name]
        return get_command_from_info(
            CommandInfo(name=name, callback=getattr(importlib.import_module(module), attribute)),
            pretty_exceptions_short=True,
            rich_markup_mode=markup,
        )

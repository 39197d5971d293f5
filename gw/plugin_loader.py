"""The config's plugins imported and checked (gw/plugin_api.py): at config load, so an
entry point that does not import, or has no hook, is a config error naming the field.

An entry point is ``package.module:object`` (imported from ``sys.path``, so from
PYTHONPATH too) or the name of an installed entry point in group ``gw.plugins``. An object
that is a class is instantiated with the plugin's ``settings`` (a read-only mapping);
anything else is the plugin itself. A module already imported by this process is not
imported again: a changed plugin module takes a restart, a new one only a reload.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from importlib.metadata import entry_points
from types import MappingProxyType
from typing import Any

from gw.config import Config, ConfigError
from gw.config.control_schema import PluginConfig
from gw.config.snapshot import LoadedPlugin
from gw.config.validate import Problem
from gw.plugin_api import HOOK_NAMES

ENTRY_POINT_GROUP = "gw.plugins"


class _LoadError(Exception):
    def __init__(self, field: str, reason: str) -> None:
        super().__init__(reason)
        self.field = field
        self.reason = reason


def plugin_problems(config: Config) -> Iterator[Problem]:
    """A problem for each plugin that cannot be loaded (for ``load_config(outside=...)``)."""
    for index, plugin in enumerate(config.plugins):
        try:
            _load(plugin)
        except _LoadError as error:
            yield f"plugins[{index}].{error.field}", error.reason


def load_plugins(config: Config, source: str) -> tuple[LoadedPlugin, ...]:
    """Each of the config's plugins with its hooks; ``ConfigError`` names the first that
    cannot be loaded."""
    loaded: list[LoadedPlugin] = []
    for index, plugin in enumerate(config.plugins):
        try:
            loaded.append(_load(plugin))
        except _LoadError as error:
            raise ConfigError(source, f"plugins[{index}].{error.field}", error.reason) from None
    return tuple(loaded)


def _load(plugin: PluginConfig) -> LoadedPlugin:
    settings = MappingProxyType(dict(plugin.settings))
    found = _resolve(plugin.entry_point)
    if isinstance(found, type):
        try:
            found = found(settings)
        except Exception as exc:  # noqa: BLE001 -- any fault of the plugin's code is a config error
            raise _LoadError(
                "settings", f"{plugin.entry_point} refused them: {_said(exc)}"
            ) from None
    wanted = plugin.hooks if plugin.hooks is not None else HOOK_NAMES
    hooks: dict[str, Any] = {}
    for name in wanted:
        method = getattr(found, name, None)
        if method is None:
            if plugin.hooks is not None:
                raise _LoadError("hooks", f"{plugin.entry_point} has no {name} method")
            continue
        if not inspect.iscoroutinefunction(method):
            raise _LoadError("entry_point", f"{plugin.entry_point}: {name} must be async def")
        hooks[name] = method
    if not hooks:
        raise _LoadError(
            "entry_point", f"{plugin.entry_point} has none of the hooks {', '.join(HOOK_NAMES)}"
        )
    return LoadedPlugin(config=plugin, hooks=MappingProxyType(hooks), settings=settings)


def _resolve(entry_point: str) -> object:
    module_name, colon, attributes = entry_point.partition(":")
    if not colon:
        return _installed(entry_point)
    try:
        found: object = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 -- a module that fails to import, however it fails
        raise _LoadError("entry_point", f"cannot import {module_name}: {_said(exc)}") from None
    for attribute in attributes.split("."):
        try:
            found = getattr(found, attribute)
        except AttributeError:
            raise _LoadError(
                "entry_point", f"{module_name} has no attribute {attributes}"
            ) from None
    return found


def _installed(name: str) -> object:
    matches = entry_points(group=ENTRY_POINT_GROUP, name=name)
    if not matches:
        raise _LoadError(
            "entry_point",
            f"no installed entry point {name!r} in group {ENTRY_POINT_GROUP} (or write "
            "package.module:object)",
        )
    try:
        return next(iter(matches)).load()
    except Exception as exc:  # noqa: BLE001 -- a module that fails to import, however it fails
        raise _LoadError("entry_point", f"cannot load {name}: {_said(exc)}") from None


def _said(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__

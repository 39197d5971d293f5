"""The load-time check of ``plugins:`` entries' shapes (gw/config/validate.py runs it)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from gw.config.control_schema import PluginConfig

MAX_PLUGIN_TIMEOUT_S = 10.0  # a hook runs inside a request: seconds, not minutes
# package.module:object (the object may be dotted: module:Class.attr), or an entry point name.
PLUGIN_ENTRY_POINT = re.compile(
    r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*(:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*)?$"
)


def plugin_problems(plugins: Iterable[PluginConfig]) -> Iterator[tuple[str, str]]:
    """Shapes only: whether the entry point imports and has the hooks is checked where
    files may be read (gw/plugin_loader.py), when a config loads."""
    for index, plugin in enumerate(plugins):
        here = f"plugins[{index}]"
        if not PLUGIN_ENTRY_POINT.match(plugin.entry_point):
            yield (
                f"{here}.entry_point",
                "must be package.module:object, or the name of an installed entry point in "
                "group gw.plugins",
            )
        if not 0 < plugin.timeout.seconds <= MAX_PLUGIN_TIMEOUT_S:
            yield f"{here}.timeout", f"must be above 0s and at most {MAX_PLUGIN_TIMEOUT_S:g}s"
        if plugin.hooks is not None:
            if not plugin.hooks:
                yield f"{here}.hooks", "must name at least one hook (or be left out: all it has)"
            elif len(set(plugin.hooks)) != len(plugin.hooks):
                yield f"{here}.hooks", "names a hook twice"

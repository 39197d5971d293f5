"""Litestar without the plugins it adds whenever pydantic or attrs is importable.

gw's handlers take and return bytes and msgspec values only; importing pydantic and
Litestar's plugins for it took ~150 ms of every ``gw serve`` start (pydantic is installed
next to gw whenever the openai or anthropic SDK is).

What of Litestar it relies on: ``Litestar.__init__`` asks the private static method
``_get_default_plugins(plugins)`` for its plugin list, and msgspec's plugin is
``litestar.plugins.core.MsgspecDIPlugin``. tests/unit/server/runtime/test_internals.py
checks that every other default plugin a newer Litestar adds is still kept.
"""

from __future__ import annotations

from litestar import Litestar
from litestar.plugins import PluginProtocol
from litestar.plugins.core import MsgspecDIPlugin


class GatewayLitestar(Litestar):
    @staticmethod
    def _get_default_plugins(plugins: list[PluginProtocol]) -> list[PluginProtocol]:
        return [*plugins, MsgspecDIPlugin()]

"""Model aliases: a client asks for ``fast`` and is routed as the route the alias names.

    plugins:
      - name: aliases
        entry_point: gw_example_plugins.aliases:ModelAliases
        settings:
          aliases: {fast: chat, smart: openai/gpt-4o}

``gw explain`` shows each change as a note: ``plugin aliases: model 'fast' -> 'chat'``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gw.plugin_api import RequestChange, RequestView


class ModelAliases:
    def __init__(self, settings: Mapping[str, Any]) -> None:
        aliases = settings.get("aliases", {})
        if not isinstance(aliases, Mapping) or not all(
            isinstance(key, str) and isinstance(value, str) for key, value in aliases.items()
        ):
            raise ValueError("settings.aliases must map alias names to route names")
        self._aliases = dict(aliases)

    async def before_routing(self, request: RequestView) -> RequestChange | None:
        target = self._aliases.get(request.model)
        if target is None:
            return None
        return RequestChange(model=target, note="alias")

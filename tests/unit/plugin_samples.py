"""Plugin objects for the loader and runner tests (imported by entry point name)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from gw.plugin_api import Refusal, RequestChange, RequestView, TargetView


class Tagger:
    def __init__(self, settings: Mapping[str, Any]) -> None:
        self.to = settings.get("to", "other")

    async def before_routing(self, request: RequestView) -> RequestChange | None:
        return RequestChange(model=self.to)


class Picky:
    def __init__(self, settings: Mapping[str, Any]) -> None:
        if "needed" not in settings:
            raise ValueError("settings.needed is required")


class Syncy:
    def before_routing(self, request: RequestView) -> None:
        return None


class Nothing:
    pass


class Sleeper:
    async def before_attempt(self, request: RequestView, target: TargetView) -> None:
        await asyncio.Event().wait()


class Broken:
    async def before_routing(self, request: RequestView) -> RequestChange | None:
        raise KeyError("x")


class Wrong:
    async def before_routing(self, request: RequestView) -> object:
        return "other"


class Says:
    async def before_routing(self, request: RequestView) -> RequestChange | None:
        raise Refusal("not today")


nothing = Nothing()
sleeper = Sleeper()
broken = Broken()
wrong = Wrong()
says = Says()
syncy = Syncy()

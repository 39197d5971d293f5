"""Plugins the e2e tests name in config (tests/e2e/test_plugins.py puts this directory on
the server's PYTHONPATH). Each acts only on the model named in its ``when`` setting, so one
server holds them all and every other request passes them untouched."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from gw.plugin_api import AnswerSummary, Refusal, RequestChange, RequestView, TargetView


class Rewrite:
    """Routes ``from`` as ``to``."""

    def __init__(self, settings: Mapping[str, Any]) -> None:
        self._from, self._to = str(settings["from"]), str(settings["to"])

    async def before_routing(self, request: RequestView) -> RequestChange | None:
        if request.model != self._from:
            return None
        return RequestChange(model=self._to, note="test rewrite")


class Raises:
    """Raises before routing (and after the answer) for its ``when`` model."""

    async def before_routing(self, request: RequestView) -> RequestChange | None:
        if request.model == request.settings["when"]:
            raise RuntimeError("the plugin broke")
        return None

    async def after_answer(self, request: RequestView, summary: AnswerSummary) -> None:
        if request.model == request.settings.get("late"):
            raise ValueError(f"cannot account {summary.status}")


class Hangs:
    """Never finishes before an attempt for its ``when`` model (its timeout ends it)."""

    async def before_attempt(self, request: RequestView, target: TargetView) -> None:
        if request.model == request.settings["when"]:
            await asyncio.Event().wait()


class Refuses:
    async def before_routing(self, request: RequestView) -> RequestChange | None:
        if request.model == request.settings["when"]:
            raise Refusal("this model is closed on weekends")
        return None


# Objects, not classes, are plugins as they are (a class is instantiated with settings):
# these read their settings from each request's view.
raises = Raises()
hangs = Hangs()
refuses = Refuses()

"""The plugin hook API: what a plugin named in config (``plugins:``) may implement, and the
frozen views gw hands it. This module is the whole public surface a plugin imports.

A plugin is any object with one or more of these async methods (see ``Plugin``):

``before_routing(request)``
    Before gw picks a route. Return ``RequestChange(model=...)`` to send the request to
    another route (or ``provider/model``), or ``None`` to leave it as it is.
``before_attempt(request, target)``
    Before each upstream call (retries and fallbacks included). Observe only.
``after_answer(request, summary)``
    After a whole answer (not a stream): status, route, target, usage, cost. Observe only.

Any hook may refuse the request by raising ``Refusal(reason)``: the client gets 403
``permission_denied`` naming the plugin and the reason. Anything else a hook raises, or a
hook that outlives its ``timeout``, is the plugin failing: its ``on_error`` says whether
the request goes on without it (``skip``) or fails (``fail``). Either way ``gw explain``
records it. The views carry no prompt or completion text, only their sizes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import msgspec

HOOK_NAMES = ("before_routing", "before_attempt", "after_answer")


class RequestView(msgspec.Struct, frozen=True, kw_only=True):
    """One request as a plugin sees it: who sent what kind of request, never its text."""

    request_id: str
    endpoint: str  # the ingress path, e.g. /v1/chat/completions
    model: str  # what the client asked for (after an earlier plugin's change)
    stream: bool
    tenant: str | None
    key_id: str | None
    revision: int  # the config revision the request runs on
    settings: Mapping[str, Any]  # this plugin's ``settings`` from config


class TargetView(msgspec.Struct, frozen=True, kw_only=True):
    """The upstream an attempt is about to call."""

    route: str
    provider: str
    model: str


class AnswerSummary(msgspec.Struct, frozen=True, kw_only=True):
    """What an answer came to: no content, only its accounting."""

    status: int
    route: str
    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    cost_usd: float | None


class RequestChange(msgspec.Struct, frozen=True, kw_only=True):
    """What ``before_routing`` may change: ``model``, the route (or ``provider/model``) the
    request is routed as. ``note`` goes into ``gw explain`` beside the change."""

    model: str | None = None
    note: str | None = None


class Refusal(Exception):  # noqa: N818 - a plugin raises it to say no; it is not a fault
    """Raised by a hook to refuse the request; ``reason`` is what the client is told."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Plugin(Protocol):
    """A plugin implements any of the hooks; gw calls only those it has. (The Protocol
    lists them for type checkers; an object needs only the ones it uses.)"""

    async def before_routing(self, request: RequestView) -> RequestChange | None: ...

    async def before_attempt(self, request: RequestView, target: TargetView) -> None: ...

    async def after_answer(self, request: RequestView, summary: AnswerSummary) -> None: ...

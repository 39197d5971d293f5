"""One request's plugin calls (gw/plugin_api.py), each within its plugin's ``timeout``,
and what they came to, as notes for ``gw explain``.

Strategy: a hook that refuses (``Refusal``) fails the request with 403
``permission_denied`` naming the plugin. A hook that raises anything else or outlives its
timeout is the plugin failing: with ``on_error: skip`` the request goes on as if the hook
had not run (a note says so); with ``fail`` it ends with 500 ``internal_error`` naming the
plugin. ``after_answer`` runs once an answer exists, so it never fails the request (it is
only noted). A snapshot with no plugins builds no ``PluginRun`` at all.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import msgspec

from gw.config.snapshot import MODEL_NAME_MAX_CHARS, LoadedPlugin
from gw.errors import GatewayError, InternalError, PermissionDeniedError, clipped
from gw.execution.cost import cost_usd
from gw.execution.execution_plan import RequestT
from gw.execution.request_context import RequestContext
from gw.ir import Usage
from gw.plugin_api import AnswerSummary, Refusal, RequestChange, RequestView, TargetView
from gw.routing.decision import RouteDecision, TargetRef

_REASON_MAX_CHARS = 200  # of a refusal's reason or an exception's message, in a note


class _Failed(Exception):  # noqa: N818 - internal signal: the hook failed and was skipped
    pass


class PluginRun:
    """The plugins of one request's snapshot, the view they are shown, and the notes."""

    def __init__(self, plugins: tuple[LoadedPlugin, ...], view: RequestView) -> None:
        self._plugins = plugins
        self._view = view
        self.requested_model = view.model  # what the client sent, before any change
        self.notes: list[str] = []

    def has(self, hook: str) -> bool:
        return any(hook in plugin.hooks for plugin in self._plugins)

    def noted(self, decision: RouteDecision) -> RouteDecision:
        """``decision`` with the notes taken so far (each note once)."""
        fresh = tuple(note for note in self.notes if note not in decision.notes)
        if not fresh:
            return decision
        return msgspec.structs.replace(decision, notes=(*decision.notes, *fresh))

    async def before_routing(self) -> str:
        """The model the request is routed as, after each plugin's change in turn."""
        for plugin in self._plugins:
            hook = plugin.hooks.get("before_routing")
            if hook is None:
                continue
            try:
                change = await self._call(plugin, "before_routing", hook, self._shown(plugin))
            except _Failed:
                continue
            if isinstance(change, RequestChange) and change.model:
                model = clipped(change.model, MODEL_NAME_MAX_CHARS)
                if model != self._view.model:
                    why = f" ({clipped(change.note, _REASON_MAX_CHARS)})" if change.note else ""
                    self.notes.append(
                        f"plugin {plugin.config.name}: model {self._view.model!r} -> {model!r}{why}"
                    )
                    self._view = msgspec.structs.replace(self._view, model=model)
            elif change is not None and not isinstance(change, RequestChange):
                self._failure(
                    plugin,
                    "before_routing",
                    f"returned {type(change).__name__}, not a RequestChange or None",
                )
        return self._view.model

    async def before_attempt(self, route: str, target: TargetRef) -> None:
        shown = TargetView(route=route, provider=target.provider, model=target.model)
        for plugin in self._plugins:
            hook = plugin.hooks.get("before_attempt")
            if hook is None:
                continue
            try:
                await self._call(plugin, "before_attempt", hook, self._shown(plugin), shown)
            except _Failed:
                continue

    async def after_answer(
        self, route: str, target: TargetRef, usage: Usage, cost: float | None
    ) -> None:
        summary = AnswerSummary(
            status=200,
            route=route,
            provider=target.provider,
            model=target.model,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=cost,
        )
        for plugin in self._plugins:
            hook = plugin.hooks.get("after_answer")
            if hook is None:
                continue
            try:
                await self._call(
                    plugin, "after_answer", hook, self._shown(plugin), summary, may_fail=False
                )
            except (_Failed, GatewayError):
                continue  # the answer exists: noted, never failed for it

    def _shown(self, plugin: LoadedPlugin) -> RequestView:
        return msgspec.structs.replace(self._view, settings=plugin.settings)

    async def _call(
        self,
        plugin: LoadedPlugin,
        hook: str,
        call: Callable[..., Awaitable[object]],
        *args: object,
        may_fail: bool = True,
    ) -> object:
        """Run one hook within the plugin's timeout; raise ``_Failed`` when it failed and
        is skipped, a ``GatewayError`` when it refused or failed the request."""
        name = plugin.config.name
        budget = asyncio.timeout(plugin.config.timeout.seconds)
        try:
            async with budget:
                return await call(*args)
        except Refusal as refusal:
            reason = clipped(str(refusal.reason), _REASON_MAX_CHARS)
            self.notes.append(f"plugin {name}: {hook} refused the request: {reason}")
            if not may_fail:
                raise _Failed from None
            raise PermissionDeniedError(f"refused by plugin {name}: {reason}") from None
        except TimeoutError as exc:
            what = (
                f"did not finish within its timeout ({plugin.config.timeout.seconds * 1000:g}ms)"
                if budget.expired()
                else _raised(exc)
            )
            self._failure(plugin, hook, what, may_fail=may_fail)
        except Exception as exc:  # noqa: BLE001 -- a plugin's fault is isolated, whatever it is
            self._failure(plugin, hook, _raised(exc), may_fail=may_fail)
        raise _Failed

    def _failure(
        self, plugin: LoadedPlugin, hook: str, what: str, *, may_fail: bool = True
    ) -> None:
        """Note a failed hook; raise the request's error when its plugin says ``fail``."""
        name = plugin.config.name
        if plugin.config.on_error == "fail" and may_fail:
            self.notes.append(f"plugin {name}: {hook} {what}; the request failed (on_error: fail)")
            raise InternalError(f"plugin {name} failed in {hook}: it {what} (its on_error is fail)")
        self.notes.append(f"plugin {name}: {hook} {what}; skipped (on_error: skip)")


def _raised(exc: BaseException) -> str:
    message = clipped(str(exc), _REASON_MAX_CHARS)
    return f"raised {type(exc).__name__}" + (f": {message}" if message else "")


def request_run(ctx: RequestContext, model: str, *, stream: bool) -> PluginRun:
    """The snapshot's plugins run for one request, shown to them as its view."""
    shown = RequestView(
        request_id=ctx.request_id,
        endpoint=ctx.endpoint,
        model=model,
        stream=stream,
        tenant=ctx.tenant,
        key_id=ctx.key_id,
        revision=ctx.snapshot.revision,
        settings={},
    )
    return PluginRun(ctx.snapshot.plugins, shown)


async def plugins_before_routing(
    ctx: RequestContext, request: RequestT, *, stream: bool
) -> tuple[RequestT, PluginRun | None]:
    """The request as the plugins' before_routing hooks leave it (its model, maybe
    changed), and the plugin run for its later hooks; with no plugin, as it came.
    Raises the ``GatewayError`` of a plugin that refused the request, or failed it."""
    if not ctx.snapshot.plugins:
        return request, None
    run = request_run(ctx, request.model, stream=stream)
    model = await run.before_routing()
    if model != request.model:
        request = msgspec.structs.replace(request, model=model)
    return request, run


async def plugins_after_answer(
    ctx: RequestContext,
    run: PluginRun | None,
    decision: RouteDecision,
    target: TargetRef,
    usage: Usage,
) -> RouteDecision:
    """The plugins' after_answer hooks told what the answer came to; the decision with
    every plugin note, for the trace."""
    if run is None:
        return decision
    cost = cost_usd(ctx.snapshot.catalog.get((target.provider, target.model)), usage)
    await run.after_answer(decision.route, target, usage, cost)
    return run.noted(decision)

"""One request's plugin calls: a change applied and noted, a raise or a timeout skipped or
failing the request as on_error says, a refusal answered 403; every outcome noted."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from unit import plugin_samples as samples

from gw.config.control_schema import PluginConfig
from gw.config.snapshot import LoadedPlugin
from gw.config.units import Duration
from gw.errors import InternalError, PermissionDeniedError
from gw.execution.plugin_run import PluginRun
from gw.plugin_api import RequestView
from gw.routing.decision import TargetRef

VIEW = RequestView(
    request_id="r1",
    endpoint="/v1/chat/completions",
    model="chat",
    stream=False,
    tenant=None,
    key_id=None,
    revision=3,
    settings={},
)


def _plugin(
    obj: Any, name: str = "p", on_error: str = "skip", timeout: float = 1.0
) -> LoadedPlugin:
    hooks = {
        hook: getattr(obj, hook)
        for hook in ("before_routing", "before_attempt", "after_answer")
        if hasattr(obj, hook)
    }
    config = PluginConfig(
        name=name,
        entry_point="x:y",
        timeout=Duration(timeout),
        on_error=on_error,  # type: ignore[arg-type]
    )
    return LoadedPlugin(config=config, hooks=hooks, settings={})


def test_a_change_is_applied_in_turn_and_noted() -> None:
    run = PluginRun(
        (_plugin(samples.Tagger({"to": "b"}), "one"), _plugin(samples.Tagger({"to": "c"}), "two")),
        VIEW,
    )
    assert asyncio.run(run.before_routing()) == "c"
    assert run.notes == ["plugin one: model 'chat' -> 'b'", "plugin two: model 'b' -> 'c'"]
    assert run.requested_model == "chat"


def test_a_raise_is_skipped_or_fails_as_on_error_says() -> None:
    skipped = PluginRun((_plugin(samples.broken),), VIEW)
    assert asyncio.run(skipped.before_routing()) == "chat"
    assert skipped.notes == [
        "plugin p: before_routing raised KeyError: 'x'; skipped (on_error: skip)"
    ]
    failing = PluginRun((_plugin(samples.broken, on_error="fail"),), VIEW)
    with pytest.raises(InternalError, match="plugin p failed in before_routing"):
        asyncio.run(failing.before_routing())


def test_a_hook_that_outlives_its_timeout_is_cut() -> None:
    run = PluginRun((_plugin(samples.sleeper, timeout=0.01),), VIEW)
    asyncio.run(run.before_attempt("chat", TargetRef(provider="mock", model="m")))
    assert run.notes == [
        "plugin p: before_attempt did not finish within its timeout (10ms); "
        "skipped (on_error: skip)"
    ]


def test_a_wrong_return_is_a_failure_and_a_refusal_is_403() -> None:
    run = PluginRun((_plugin(samples.wrong),), VIEW)
    assert asyncio.run(run.before_routing()) == "chat"
    assert "returned str, not a RequestChange or None" in run.notes[0]
    refusing = PluginRun((_plugin(samples.says, name="guard"),), VIEW)
    with pytest.raises(PermissionDeniedError, match="refused by plugin guard: not today"):
        asyncio.run(refusing.before_routing())
    assert refusing.notes == ["plugin guard: before_routing refused the request: not today"]

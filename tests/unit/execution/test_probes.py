"""Active probes against scripted upstreams and a fake clock: what is probed, when, and
what a probe's outcome does to health."""

from __future__ import annotations

import asyncio
from typing import Any

from unit.execution.test_engine import Directory, FakeClock, ScriptedUpstream, answer

from gw.config import compile_snapshot, load_config
from gw.config.schema import HealthConfig
from gw.errors import RateLimitedError, UpstreamError
from gw.execution.health import HealthBook
from gw.execution.probes import Prober, probed_targets

CONFIG = """
providers:
  - {name: a, kind: mock, probe: {interval: 30s}}
  - {name: b, kind: mock, probe: {interval: 10s, models: [only-this]}}
  - {name: c, kind: mock}
routes:
  - name: r
    targets: [{provider: a, model: m1}, {provider: b, model: m2}, {provider: c, model: m3}]
  - name: s
    targets: [{provider: a, model: m1}, {provider: a, model: m4}]
"""


def snapshot() -> Any:
    return compile_snapshot(load_config(CONFIG, "t.yaml"), revision=1, source="t")


def test_probed_targets_are_the_routed_models_or_the_listed_ones() -> None:
    targets = [(p.name, m) for p, m in probed_targets(snapshot())]
    assert targets == [("a", "m1"), ("a", "m4"), ("b", "only-this")]


def prober(a: list[Any], b: list[Any]) -> tuple[Prober, HealthBook, FakeClock, Directory]:
    clock = FakeClock()
    health = HealthBook(HealthConfig(degraded_after=2))
    directory = Directory({"a": ScriptedUpstream(a), "b": ScriptedUpstream(b)})
    snap = snapshot()

    async def sleep(seconds: float) -> None:
        del seconds

    return Prober(directory, health, lambda: snap, clock, sleep), health, clock, directory  # type: ignore[arg-type]


def test_each_provider_is_probed_at_its_interval() -> None:
    probe, _, clock, directory = prober([answer()] * 4, [answer()] * 2)
    wait = asyncio.run(probe.probe_due())
    assert wait == 10.0  # b is due first
    calls = directory.upstreams["a"].calls
    assert [c.request.model for c in calls] == ["m1", "m4"]
    assert calls[0].request.max_tokens == 1
    assert asyncio.run(probe.probe_due()) == 10.0  # nothing is due yet: no new calls
    assert probe.probes == 3
    clock.now += 10
    asyncio.run(probe.probe_due())
    assert probe.probes == 4  # b only
    clock.now += 20
    asyncio.run(probe.probe_due())
    assert probe.probes == 7  # a (two models) and b again


def test_failed_probes_degrade_and_a_success_restores() -> None:
    probe, health, clock, _ = prober([UpstreamError("down")] * 4 + [answer()] * 2, [answer()] * 3)
    asyncio.run(probe.probe_due())
    clock.now += 30
    asyncio.run(probe.probe_due())
    state = health.state("a/m1", now=clock.now)
    assert state.status == "degraded"
    assert state.breaker == "closed"  # probes never open a breaker
    assert state.last_probe_ok is False
    clock.now += 30
    asyncio.run(probe.probe_due())
    assert health.state("a/m1", now=clock.now).status == "healthy"


def test_a_rate_limited_probe_is_not_a_health_signal() -> None:
    probe, health, clock, _ = prober([RateLimitedError("429")] * 2, [answer()])
    asyncio.run(probe.probe_due())
    assert health.state("a/m1", now=clock.now).last_probe_ok is None
    assert health.state("b/only-this", now=clock.now).last_probe_ok is True

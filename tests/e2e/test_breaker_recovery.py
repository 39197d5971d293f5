"""A provider that fails ten times and then recovers, through a live gw: the breaker
opens, the cooldown lapses, two concurrent requests arrive at the half-open moment and
only one of them is let through as the trial; its success closes the breaker, and
`gw health` shows each step.

The cooldown is short (1 s) because it must lapse in real time; the test only waits for
states (bounded polls), it never asserts how long anything took. The trial is held open
by a 3 s delay at the upstream, so the second request surely arrives while it is in flight.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from e2e.gw_process import GwServer
from e2e.waiting import wait_until
from fakes.openai_upstream import Behavior, FakeOpenAI

CONFIG = """
providers:
  - {{name: flaky, kind: openai_compatible, base_url: "{flaky}"}}
  - {{name: steady, kind: openai_compatible, base_url: "{steady}"}}
routes:
  - name: chat
    targets:
      - {{provider: flaky, model: gpt-f, priority: 1}}
      - {{provider: steady, model: gpt-s, priority: 2}}
policies:
  - {{name: once, match: {{routes: ["*"]}}, retry: {{max_attempts: 1}}}}
health:
  degraded_after: 9        # equal: flaky keeps its place until its breaker opens
  unhealthy_after: 9
  error_rate: 1.0
  cooldown: 1s
  max_cooldown: 1s
  trial_timeout: 60s
"""
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def fakes() -> Iterator[tuple[FakeOpenAI, FakeOpenAI]]:
    with FakeOpenAI() as flaky, FakeOpenAI() as steady:
        yield flaky, steady


@pytest.fixture(scope="module")
def recovery_gw(
    tmp_path_factory: pytest.TempPathFactory, fakes: tuple[FakeOpenAI, FakeOpenAI]
) -> Iterator[GwServer]:
    home = tmp_path_factory.mktemp("recovery")
    config = home / "gw.yaml"
    flaky, steady = fakes
    config.write_text(CONFIG.format(flaky=flaky.base_url, steady=steady.base_url))
    with GwServer(home / "state", config) as server:
        yield server


def ask(gw: GwServer) -> tuple[str, str]:
    with gw.client() as http:
        answer = http.post(
            "/v1/chat/completions", json={"model": "chat", "messages": HI}, timeout=60
        )
    assert answer.status_code == 200, answer.text
    return answer.headers["x-gw-route"], answer.headers["x-gw-request-id"]


def flaky_health(gw: GwServer) -> dict[str, Any]:
    with gw.client() as http:
        report = http.get("/admin/v1/health").json()
    return next(t for t in report["targets"] if t["provider"] == "flaky")


def wait_for(
    gw: GwServer, predicate: Callable[[dict[str, Any]], bool], what: str
) -> dict[str, Any]:
    """flaky's health, once ``predicate`` holds for it."""
    states: list[dict[str, Any]] = []

    def became() -> dict[str, Any] | None:
        states.append(flaky_health(gw))
        return states[-1] if predicate(states[-1]) else None

    return wait_until(
        became, lambda: f"flaky to become {what}; last: {states[-1]}", 60, interval=0.2
    )


def test_ten_failures_open_the_breaker_one_trial_closes_it(
    recovery_gw: GwServer, fakes: tuple[FakeOpenAI, FakeOpenAI]
) -> None:
    flaky, steady = fakes
    flaky.enqueue(*[Behavior(status=500)] * 10)

    # Failures 1-9 each fall back to steady; the 9th opens the breaker.
    for _ in range(9):
        assert ask(recovery_gw)[0] == "steady/gpt-s"
    assert flaky.count == 9
    opened = flaky_health(recovery_gw)
    assert opened["status"] == "unhealthy"  # open, or half-open already: the cooldown is 1 s
    assert "breaker opened: 9 consecutive failures" in opened["reason"]

    # The cooldown lapses: half-open. The 10th scripted failure is the first trial.
    wait_for(recovery_gw, lambda s: s["breaker"] == "half_open", "half-open")
    route, request_id = ask(recovery_gw)
    assert route == "steady/gpt-s"  # the trial failed and fell back
    assert flaky.count == 10
    explained = recovery_gw.cli_json("explain", request_id)
    assert [(a["provider"], a["outcome"]) for a in explained["attempts"]] == [
        ("flaky", "fell_back"), ("steady", "answered"),
    ]  # fmt: skip
    assert "its half-open trial failed" in flaky_health(recovery_gw)["reason"]

    # ... the next trial is slow and succeeds; a second request meanwhile is not a trial.
    wait_for(recovery_gw, lambda s: s["breaker"] == "half_open", "half-open again")
    flaky.enqueue(Behavior(delay_before_headers=3.0))
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        trial = pool.submit(ask, recovery_gw)
        wait_for(recovery_gw, lambda s: s["trial_in_flight"], "trying its trial")
        assert ask(recovery_gw)[0] == "steady/gpt-s"  # concurrent: not let through
        trial_route, trial_id = trial.result(timeout=60)
    assert trial_route == "flaky/gpt-f"
    assert flaky.count == 11  # exactly one trial reached flaky
    closed = flaky_health(recovery_gw)
    assert (closed["status"], closed["breaker"]) == ("healthy", "closed")
    trial_explained = recovery_gw.cli_json("explain", trial_id)
    assert any("trial" in note for note in trial_explained["decision"]["notes"])

    # Recovered: flaky serves again in its usual place, and `gw health` says so.
    assert ask(recovery_gw)[0] == "flaky/gpt-f"
    shown = recovery_gw.cli_json("health")
    assert next(t for t in shown["targets"] if t["provider"] == "flaky")["breaker"] == "closed"
    assert "closed" in recovery_gw.cli("health").stdout
    assert steady.count == 11

"""gw protects an upstream that is down, through a live gw and a fake that always fails.

- The retry budget: 60 requests with ``max_attempts: 3`` against an always-500 upstream
  make at most 60 calls plus the budget (20% of the calls plus 5), not 180.
- Breakers: once a route's only target has an open breaker, requests are answered at once
  (503 ``no_route`` with ``Retry-After``) and the upstream is not called until the
  cooldown ends.

The windows and cooldowns are ten minutes long, so nothing here depends on timing.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from e2e.gw_process import GwServer
from fakes.openai_upstream import Behavior, FakeOpenAI

CONFIG = """
providers:
  - {{name: down, kind: openai_compatible, base_url: "{down}"}}
  - {{name: dead, kind: openai_compatible, base_url: "{dead}"}}
routes:
  - {{name: budgeted, targets: [{{provider: down, model: m}}]}}
  - {{name: broken, targets: [{{provider: dead, model: m}}]}}
policies:
  - {{name: p, match: {{routes: ["*"]}}, retry: {{max_attempts: 3, initial_backoff: 1ms}}}}
health:
  degraded_after: 1
  unhealthy_after: {unhealthy_after}
  error_rate: 1.0
  min_requests: 1000
  cooldown: 10m
  max_cooldown: 10m
  retry_budget: {{ratio: 0.2, min_retries: 5, window: 10m}}
"""
REQUESTS = 60
HI: Any = {"messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def fakes() -> Iterator[tuple[FakeOpenAI, FakeOpenAI]]:
    with FakeOpenAI() as down, FakeOpenAI() as dead:
        down.default = dead.default = Behavior(status=500)
        yield down, dead


def start(tmp_path: Any, fakes: tuple[FakeOpenAI, FakeOpenAI], unhealthy_after: int) -> GwServer:
    config = tmp_path / "gw.yaml"
    down, dead = fakes
    text = CONFIG.format(down=down.base_url, dead=dead.base_url, unhealthy_after=unhealthy_after)
    config.write_text(text)
    return GwServer(tmp_path / "state", config)


def post(gw: GwServer, route: str) -> httpx.Response:
    return httpx.post(f"{gw.base_url}/chat/completions", json={"model": route, **HI}, timeout=60)


def test_retries_to_a_failing_upstream_stay_within_the_retry_budget(
    tmp_path: Any, fakes: tuple[FakeOpenAI, FakeOpenAI]
) -> None:
    down, _ = fakes
    # No breaker here (it would open after 100,000 failures): the budget alone.
    with (
        start(tmp_path, fakes, unhealthy_after=100_000) as gw,
        concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool,
    ):
        statuses = list(pool.map(lambda _: post(gw, "budgeted").status_code, range(REQUESTS)))
    assert statuses == [502] * REQUESTS
    # A retry is made while the retries so far are fewer than 20% of the calls so far
    # plus 5: so the last one had R - 1 < 0.2 x (60 + R - 1) + 5, and R < (0.2 x 60 + 5.8) / 0.8.
    retries = down.count - REQUESTS
    assert 5 <= retries < (0.2 * REQUESTS + 5.8) / 0.8
    assert down.count < 2 * REQUESTS  # without the budget: 3 calls a request


def test_an_open_breaker_answers_at_once_with_retry_after(
    tmp_path: Any, fakes: tuple[FakeOpenAI, FakeOpenAI]
) -> None:
    _, dead = fakes
    with start(tmp_path, fakes, unhealthy_after=2) as gw:
        assert post(gw, "broken").status_code == 502  # two failed calls: the breaker opens
        calls = dead.count
        for _ in range(20):
            refused = post(gw, "broken")
            assert refused.status_code == 503
            assert refused.json()["error"]["code"] == "no_route"
            assert "circuit breaker is open" in refused.json()["error"]["message"]
            assert 500 <= int(refused.headers["retry-after"]) <= 600
        assert dead.count == calls  # the upstream was left alone
        explained = gw.cli_json("explain", refused.headers["x-gw-request-id"])
        assert any("its breaker is open" in note for note in explained["decision"]["notes"])

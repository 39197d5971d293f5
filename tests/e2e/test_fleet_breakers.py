"""Two `gw serve` processes sharing one Redis (state.redis_url): a breaker opened by
traffic on gateway 1 is skipped by gateway 2 (and by a third started later) without
calling the failing upstream, and after the cooldown exactly one trial call reaches it
across both, which closes both.

Each gateway has its own state directory; the fake upstream counts every call it gets,
which is what the assertions count. Target names carry a random suffix, so the Redis keys
of this run are its own (deleted after); the Redis at 127.0.0.1:6379 is required in CI
and skipped without elsewhere. Nothing waits for a time: every wait is for a state.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from redis_service import REDIS_URL, redis_unavailable

from e2e.gw_process import GwServer
from e2e.waiting import wait_until
from fakes.openai_upstream import Behavior, FakeOpenAI
from fakes.redis_server import RedisServer

CONFIG = """
state: {{redis_url: "{redis}"}}
providers:
  - {{name: {flaky}, kind: openai_compatible, base_url: "{flaky_url}"}}
  - {{name: steady, kind: openai_compatible, base_url: "{steady_url}"}}
routes:
  - name: chat
    targets:
      - {{provider: {flaky}, model: gpt-f, priority: 1}}
      - {{provider: steady, model: gpt-s, priority: 2}}
  - name: solo
    targets:
      - {{provider: {flaky}, model: gpt-f}}
policies:
  - {{name: once, match: {{routes: ["*"]}}, retry: {{max_attempts: 1}}}}
health:
  degraded_after: 3
  unhealthy_after: 3
  error_rate: 1.0
  cooldown: {cooldown}
  max_cooldown: {cooldown}
  trial_timeout: 60s
"""
HI = [{"role": "user", "content": "hi"}]


def redis_client() -> redis.Redis:
    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2.0)
    try:
        client.ping()
    except (OSError, redis.ConnectionError) as error:
        client.close()
        redis_unavailable(error)
    return client


@pytest.fixture
def flaky_name() -> Iterator[str]:
    """A provider name of this test's own; its breaker and trial keys go with it."""
    client = redis_client()
    name = f"flaky-{uuid.uuid4().hex[:8]}"
    try:
        yield name
    finally:
        keys = [*client.scan_iter(f"gw:v1:*:{name}/*")]
        if keys:
            client.delete(*keys)
        client.close()


@pytest.fixture
def upstreams() -> Iterator[tuple[FakeOpenAI, FakeOpenAI]]:
    with FakeOpenAI() as flaky, FakeOpenAI() as steady:
        yield flaky, steady


def fleet(
    tmp_path: Path, name: str, upstreams: tuple[FakeOpenAI, FakeOpenAI], cooldown: str
) -> tuple[GwServer, GwServer]:
    flaky, steady = upstreams
    config = tmp_path / "gw.yaml"
    config.write_text(
        CONFIG.format(
            redis=REDIS_URL,
            flaky=name,
            flaky_url=flaky.base_url,
            steady_url=steady.base_url,
            cooldown=cooldown,
        )
    )
    return GwServer(tmp_path / "gw1", config), GwServer(tmp_path / "gw2", config)


def ask(gw: GwServer, route: str = "chat") -> tuple[int, str, str]:
    """(status, the target that answered, the request id)."""
    with gw.client() as http:
        answer = http.post("/v1/chat/completions", json={"model": route, "messages": HI})
    return answer.status_code, answer.headers["x-gw-route"], answer.headers["x-gw-request-id"]


def flaky_health(gw: GwServer, name: str) -> dict[str, Any]:
    with gw.client() as http:
        report = http.get("/admin/v1/health").json()
    return next(t for t in report["targets"] if t["provider"] == name)


def wait_for_breaker(gw: GwServer, name: str, states: set[str], what: str) -> dict[str, Any]:
    seen: list[dict[str, Any]] = []

    def reached() -> dict[str, Any] | None:
        seen.append(flaky_health(gw, name))
        return seen[-1] if seen[-1]["breaker"] in states else None

    return wait_until(reached, lambda: f"{what}; last: {seen[-1] if seen else None}", 30)


def open_on_gateway_1(gw1: GwServer, name: str, flaky: FakeOpenAI) -> None:
    flaky.default = Behavior(status=500)  # always fails
    for _ in range(3):  # each fails on flaky and falls back; the third opens the breaker
        status, route, _ = ask(gw1)
        assert (status, route) == (200, "steady/gpt-s")
    assert flaky.count == 3
    assert flaky_health(gw1, name)["breaker"] in {"open", "half_open"}


def test_a_breaker_opened_on_one_gateway_is_skipped_by_the_other(
    tmp_path: Path, flaky_name: str, upstreams: tuple[FakeOpenAI, FakeOpenAI]
) -> None:
    flaky, steady = upstreams
    gw1, gw2 = fleet(tmp_path, flaky_name, upstreams, cooldown="10m")
    with gw1, gw2:
        open_on_gateway_1(gw1, flaky_name, flaky)

        learnt = wait_for_breaker(gw2, flaky_name, {"open"}, "gateway 2 to learn the opening")
        assert learnt["status"] == "unhealthy"
        assert "opened by gateway" in learnt["reason"]
        assert "fleet-wide: 3 consecutive failures" in learnt["reason"]

        for _ in range(3):  # gateway 2 falls back at once, never calling flaky
            status, route, request_id = ask(gw2)
            assert (status, route) == (200, "steady/gpt-s")
        assert flaky.count == 3
        explained = gw2.wait_for_trace(request_id)
        assert [a["provider"] for a in explained["attempts"]] == ["steady"]
        candidate = next(
            c for c in explained["decision"]["candidates"] if c["provider"] == flaky_name
        )
        assert candidate["rejected"] == "unhealthy"
        assert "opened by gateway" in candidate["detail"]
        assert "fleet-wide" in gw2.cli("explain", request_id).stdout

        # A route with no other target answers no_route at once, as a local breaker would.
        status, route, _ = ask(gw2, "solo")
        assert (status, route) == (503, "-")
        assert flaky.count == 3
        assert steady.count == 6

        with gw2.client() as http:
            metrics = http.get("/metrics").text
        assert "gw_fleet_breakers_redis_up 1.0" in metrics
        assert 'gw_fleet_breaker_notes_total{direction="received"} 1.0' in metrics

    # A gateway started after the opening reads it from Redis at start, and skips it too.
    with GwServer(tmp_path / "gw3", tmp_path / "gw.yaml") as gw3:
        late = wait_for_breaker(gw3, flaky_name, {"open"}, "gateway 3 to read the opening")
        assert "opened by gateway" in late["reason"]
        assert ask(gw3)[:2] == (200, "steady/gpt-s")
        assert flaky.count == 3


def test_after_the_cooldown_one_trial_across_the_fleet_closes_both(
    tmp_path: Path, flaky_name: str, upstreams: tuple[FakeOpenAI, FakeOpenAI]
) -> None:
    flaky, _ = upstreams
    # The cooldown must lapse in real time; the test only waits for states, never for it.
    gw1, gw2 = fleet(tmp_path, flaky_name, upstreams, cooldown="2s")
    with gw1, gw2:
        open_on_gateway_1(gw1, flaky_name, flaky)
        learnt = wait_for_breaker(
            gw2, flaky_name, {"open", "half_open"}, "gateway 2 to learn the opening"
        )
        assert "opened by gateway" in learnt["reason"]
        flaky.default = Behavior()  # healthy again, unknown to both gateways
        for gw in (gw1, gw2):
            wait_for_breaker(gw, flaky_name, {"half_open"}, "the cooldown to lapse")

        # Requests go to both gateways in turn until one is answered by flaky: the trial.
        # The first request on each asks the fleet for the trial; only the winner sends it.
        answered: list[tuple[int, str]] = []
        for turn in range(400):
            gw = (gw1, gw2)[turn % 2]
            status, route, _ = ask(gw)
            assert status == 200
            answered.append((turn % 2 + 1, route))
            if route == f"{flaky_name}/gpt-f":
                break
        else:
            pytest.fail(f"no trial reached flaky; answers: {answered[-6:]}")
        assert flaky.count == 4  # three failures, then exactly one trial

        for gw in (gw1, gw2):  # the winner closed it, the other heard the close
            closed = wait_for_breaker(gw, flaky_name, {"closed"}, "both breakers to close")
            assert closed["status"] == "healthy"
        assert flaky.count == 4  # no second trial meanwhile

        for gw in (gw1, gw2):  # flaky serves again, through both
            assert ask(gw)[:2] == (200, f"{flaky_name}/gpt-f")
        assert flaky.count == 6


def test_without_its_redis_a_gateway_keeps_its_own_breakers(
    tmp_path: Path, upstreams: tuple[FakeOpenAI, FakeOpenAI]
) -> None:
    """gw serve needs its Redis to start (gw/wiring.py); one that goes away later leaves
    the breakers to each gateway, as without a fleet."""
    flaky, _ = upstreams
    own_redis = RedisServer(tmp_path / "redis", password="hunter2").start()
    config = tmp_path / "gw.yaml"
    config.write_text(
        CONFIG.format(
            redis=own_redis.url,
            flaky="flaky",
            flaky_url=flaky.base_url,
            steady_url=upstreams[1].base_url,
            cooldown="10m",
        )
    )
    try:
        with GwServer(tmp_path / "alone", config) as gw:
            own_redis.stop()
            open_on_gateway_1(gw, "flaky", flaky)
            status, route, _ = ask(gw)  # its own breaker, as without a fleet
            assert (status, route) == (200, "steady/gpt-s")
            assert flaky.count == 3
            with gw.client() as http:
                metrics = http.get("/metrics").text
            assert "gw_fleet_breakers_redis_up 0.0" in metrics
            assert "gw_fleet_breakers_redis_errors_total 0.0" not in metrics
            log = wait_until(
                lambda: gw.log() if "unreachable" in gw.log() else None, "the warning", 30
            )
            assert f"redis://:***@127.0.0.1:{own_redis.port}/0 unreachable" in log
            assert "hunter2" not in log
    finally:
        own_redis.stop()

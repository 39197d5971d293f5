"""Three `gw serve` processes, each with its own state dir, sharing one Redis
(``state.redis_url``): a budget, an RPM limit and a concurrency lease are the fleet's, not
each gateway's. The Redis is this module's own (tests/fakes/redis_server.py), so nothing
here touches another test's keys.

Nothing is timed: the RPM limit is far from a refill (20 s a request), and the lease of a
killed gateway is polled for (bounded) until its TTL (timeout.total 3 s + as long again)
has run out.
"""

from __future__ import annotations

import concurrent.futures
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from e2e.gw_process import GwServer, run_cli
from e2e.waiting import wait_until
from fakes.openai_upstream import Behavior, FakeOpenAI
from fakes.redis_server import RedisServer, free_port

CONFIG = """
state: {{redis_url: "{redis}"}}
providers:
  - {{name: up, kind: openai_compatible, base_url: "{up}"}}
models:
  - {{provider: up, model: gpt-t, input_per_mtok: 1000, output_per_mtok: 1000}}
routes:
  - {{name: chat, targets: [{{provider: up, model: gpt-t}}]}}
policies:
  - {{name: once, match: {{routes: ["*"]}}, retry: {{max_attempts: 1}}, timeout: {{total: 3s}}}}
tenants:
  - {{name: shared-budget, budget: {{daily_usd: 0.11}}}}
  - {{name: paced, limits: {{requests_per_minute: 3}}}}
  - {{name: single, limits: {{max_concurrency: 1}}}}
"""
GATEWAYS = 3
BUDGET = 0.11
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def fleet_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with RedisServer(tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        fake.default = Behavior(usage=(11, 10), text="ok")  # $0.021 a request
        yield fake


def start_fleet(home: Path, redis_url: str, upstream: FakeOpenAI) -> list[GwServer]:
    config = home / "gw.yaml"
    config.write_text(CONFIG.format(redis=redis_url, up=upstream.base_url))
    started: list[GwServer] = []
    try:
        for n in range(GATEWAYS):
            started.append(GwServer(home / f"gw{n}", config).start())
    except BaseException:
        for server in started:
            server.stop()
        raise
    return started


@pytest.fixture(scope="module")
def fleet(
    tmp_path_factory: pytest.TempPathFactory, fleet_redis: RedisServer, upstream: FakeOpenAI
) -> Iterator[list[GwServer]]:
    gateways = start_fleet(tmp_path_factory.mktemp("fleet"), fleet_redis.url, upstream)
    yield gateways
    for server in gateways:
        server.stop()


def key_for(gw: GwServer, tenant: str) -> str:
    """Each gateway has its own key store here (SQLite): a key per gateway and tenant."""
    assert gw.config is not None
    made: dict[str, Any] = gw.cli_json(
        "keys", "create", "--config", str(gw.config), "--tenant", tenant
    )
    return str(made["key"])


def ask(gw: GwServer, key: str) -> str:
    client = openai.OpenAI(base_url=gw.base_url, api_key=key, max_retries=0, timeout=30)
    try:
        client.chat.completions.create(model="chat", messages=HI, max_tokens=10)
    except openai.APIStatusError as error:
        return str(error.code)
    except openai.APIConnectionError:
        return "connection_error"
    return "ok"


def spread(gateways: list[GwServer], tenant: str, count: int) -> list[str]:
    """``count`` requests at once, dealt round the gateways."""
    keys = [key_for(gw, tenant) for gw in gateways]
    with concurrent.futures.ThreadPoolExecutor(max_workers=count) as pool:
        return list(
            pool.map(lambda n: ask(gateways[n % len(gateways)], keys[n % len(keys)]), range(count))
        )


def test_one_budget_across_the_fleet(fleet: list[GwServer]) -> None:
    # Each request reserves about $0.084 (gw/execution/budget_reserve.py) and is billed
    # $0.021: at most 5 fit in $0.11 whatever the interleaving over the three gateways.
    outcomes = spread(fleet, "shared-budget", 60)
    answered = outcomes.count("ok")
    assert answered + outcomes.count("budget_exceeded") == 60, outcomes
    assert 1 <= answered <= 5

    # The spend each gateway recorded in its own ledger adds up to the fleet's: within the
    # budget (reservations exceed these bills, so no overshoot at all).
    def ledgers() -> list[dict[str, Any]] | None:
        rows = [
            row
            for gw in fleet
            for row in gw.cli_json("usage", "--by", "tenant")
            if row["tenant"] == "shared-budget"
        ]
        return rows if sum(row["requests"] for row in rows) == 60 else None

    rows = wait_until(ledgers, "the usage rows of all 60 requests")
    spent = sum(row["cost_usd"] or 0.0 for row in rows)
    assert spent == pytest.approx(answered * 0.021)
    assert spent <= BUDGET


def test_one_requests_per_minute_limit_across_the_fleet(fleet: list[GwServer]) -> None:
    outcomes = spread(fleet, "paced", 12)
    assert outcomes.count("ok") == 3, outcomes  # 3 a minute for the fleet, not per gateway
    assert outcomes.count("rate_limited") == 9


def test_a_killed_gateways_lease_is_freed_after_its_ttl(
    tmp_path_factory: pytest.TempPathFactory, fleet_redis: RedisServer, upstream: FakeOpenAI
) -> None:
    # Gateways of this test's own: one of them is killed.
    doomed, survivor, _ = gateways = start_fleet(
        tmp_path_factory.mktemp("kill"), fleet_redis.url, upstream
    )
    try:
        doomed_key, survivor_key = key_for(doomed, "single"), key_for(survivor, "single")
        upstream.clear()
        upstream.enqueue(Behavior(delay_before_headers=20.0, usage=(11, 10)))
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            held = pool.submit(ask, doomed, doomed_key)
            wait_until(lambda: upstream.count, "the first request to reach the upstream")
            assert ask(survivor, survivor_key) == "concurrency_limited"
            assert doomed.process is not None
            os.kill(doomed.process.pid, signal.SIGKILL)  # mid-request: it never settles
            doomed.process.wait(timeout=10)
            assert held.result(timeout=30) == "connection_error"  # it died with its gateway
        # The dead gateway's lease runs out (3 s + 3 s) and the slot is the fleet's again.
        assert wait_until(lambda: ask(survivor, survivor_key) == "ok", "the lease to run out")
    finally:
        for server in gateways:
            server.stop()


def test_serve_refuses_to_start_without_its_redis(tmp_path: Path, upstream: FakeOpenAI) -> None:
    url = f"redis://:hunter2@127.0.0.1:{free_port()}/0"  # nothing listens there
    config = tmp_path / "gw.yaml"
    config.write_text(CONFIG.format(redis=url, up=upstream.base_url))
    args = ["serve", "--port", "0", "--state-dir", str(tmp_path / "state"), "--config", str(config)]
    done = run_cli(*args, check=False)
    assert done.returncode != 0
    assert f"redis://:***@127.0.0.1:{url.rsplit(':', 1)[1]}" in done.stderr
    assert "Start Redis there" in done.stderr
    assert "hunter2" not in done.stderr + done.stdout


DOWN_CONFIG = """
state: {{redis_url: "{redis}", redis_failure: {{fleet_size: 2}}}}
auth: {{admin_key: env:GW_ADMIN_KEY}}
providers:
  - {{name: up, kind: openai_compatible, base_url: "{up}"}}
models:
  - {{provider: up, model: gpt-t, input_per_mtok: 1000, output_per_mtok: 1000}}
routes:
  - {{name: chat, targets: [{{provider: up, model: gpt-t}}]}}
policies:
  - {{name: once, match: {{routes: ["*"]}}, retry: {{max_attempts: 1}}}}
tenants:
  - {{name: spender, budget: {{daily_usd: 100}}}}
  - {{name: busy, limits: {{requests_per_minute: 1000000}}}}  # never the limit here
"""
ADMIN_KEY = "fleet-admin-key-0123456789abcdefXYZ"


def post(gw: GwServer, key: str) -> httpx.Response:
    with gw.client() as http:
        return http.post(
            "/v1/chat/completions",
            headers={"authorization": f"Bearer {key}"},
            json={"model": "chat", "messages": HI, "max_tokens": 10},
        )


def explained(gw: GwServer, response: httpx.Response) -> str:
    """What `gw explain` prints for the request, once its trace is written."""
    request_id = response.headers["x-gw-request-id"]
    gw.wait_for_trace(request_id)
    return " ".join(gw.cli("explain", request_id).stdout.split())


def fallback_counts(gw: GwServer) -> dict[tuple[str, str], float]:
    with gw.client() as http:
        text = http.get("/metrics", headers={"authorization": f"Bearer {ADMIN_KEY}"}).text
    return {
        (sample.labels["kind"], sample.labels["policy"]): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "gw_limits_fallback_total"
    }


def test_redis_stopped_under_load_then_restarted(tmp_path: Path, upstream: FakeOpenAI) -> None:
    with RedisServer(tmp_path / "redis") as own_redis:
        config = tmp_path / "gw.yaml"
        config.write_text(DOWN_CONFIG.format(redis=own_redis.url, up=upstream.base_url))
        env = {"GW_ADMIN_KEY": ADMIN_KEY}
        gateways = [GwServer(tmp_path / f"gw{n}", config, env=env) for n in range(2)]
        try:
            for server in gateways:
                server.start()
            busy = [key_for(gw, "busy") for gw in gateways]
            spender = [key_for(gw, "spender") for gw in gateways]
            assert post(gateways[0], spender[0]).status_code == 200  # Redis answers

            stop = threading.Event()

            def load(n: int) -> list[int]:
                statuses: list[int] = []
                while not stop.is_set() and len(statuses) < 2000:  # bounded
                    statuses.append(post(gateways[n % 2], busy[n % 2]).status_code)
                return statuses

            with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
                under_load = [pool.submit(load, n) for n in range(4)]
                own_redis.stop()
                # Budgets fail closed: 503 overloaded, saying why, with a Retry-After.
                refused = post(gateways[1], spender[1])
                assert refused.status_code == 503
                assert refused.json()["error"]["code"] == "overloaded"
                assert "is unreachable" in refused.json()["error"]["message"]
                assert refused.headers["retry-after"] == "5"
                # Rate limits fail open: counted in this gateway, and explain says so.
                answered = post(gateways[0], busy[0])
                assert answered.status_code == 200
                assert "counted in this gateway alone" in explained(gateways[0], answered)
                counts = fallback_counts(gateways[1])
                assert counts[("budgets", "closed")] >= 1
                assert fallback_counts(gateways[0])[("rate_limits", "open")] >= 1
                own_redis.start()  # the same port: recovery needs nothing from anyone
                for gw, key in zip(gateways, spender, strict=True):
                    wait_until(lambda gw=gw, key=key: post(gw, key).status_code == 200,
                               "budgets to count in Redis again")  # fmt: skip
                stop.set()
                statuses = [status for work in under_load for status in work.result(timeout=60)]
            # Under load nothing failed: the busy tenant was served throughout.
            assert set(statuses) == {200}, sorted(set(statuses))
            answered = post(gateways[0], busy[0])
            assert "counted in this gateway alone" not in explained(gateways[0], answered)
        finally:
            for server in gateways:
                server.stop()

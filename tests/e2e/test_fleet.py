"""Three `gw serve` processes on loopback with ALL their shared state where a fleet keeps it:
one PostgreSQL database (keys, ledger, traces: tests/pg.py's fresh database) and the Redis
at 127.0.0.1:6379 (limits, leases, budgets). Issue 26's fleet promises, seen by a client:

- a budget that allows five requests, hit by 60 at once over the three: the overshoot is
  at most what the reservations in flight under-reserved (none here), and the spend is
  read from the ONE ledger, the same through every gateway;
- an RPM limit is the fleet's, not each gateway's;
- a key revoked through gateway 1 is refused by gateways 2 and 3 (the key cache refreshes
  each second);
- gateway 1 killed (SIGKILL) under load: every request any gateway answered 200 has its
  usage row in PostgreSQL once the survivors drain and the killed one is started again on
  its state directory (its usage journal is replayed), and the leases it held run out
  after their TTL (``timeout.total`` 2 s + as long again), giving the tenant back its
  whole concurrency.

The Redis is shared with whatever else runs on this machine, so every key this module
makes is under names of its own (tenants and the provider carry a random token), and only
those keys are deleted afterwards. test_fleet_limits.py covers Redis alone (SQLite
ledgers), test_postgres_state.py PostgreSQL alone; this is both at once.

Needs PostgreSQL and Redis: in CI (``CI`` set) it fails without them, elsewhere it skips.
Waits are bounded polls (tests/e2e/waiting.py), never sleeps.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import secrets
import threading
import time
from collections.abc import Iterator
from typing import Any

import asyncpg
import httpx
import pytest
import redis
from pg import fresh_database

from e2e.fleet_processes import Fleet, running_fleet
from e2e.gw_process import GwServer
from e2e.waiting import wait_until
from fakes.openai_upstream import Behavior, FakeOpenAI

REDIS_URL = "redis://127.0.0.1:6379/0"
TOKEN = secrets.token_hex(4)  # this module's namespace in the shared Redis
PROVIDER = f"up-{TOKEN}"
BUDGET_TENANT, PACED, KEYED, BUSY = (
    f"{name}-{TOKEN}" for name in ("budget", "paced", "keyed", "busy")
)
# The upstream bills (74, 10) tokens at $1000/Mtok: $0.084, what gw reserves for "hi" with
# max_tokens 10 (2 x its 5-token estimate + 64, plus 10; gw/execution/budget_reserve.py).
# So reserving and billing agree, and $0.43 holds five requests, not six.
USAGE = (74, 10)
COST = 0.084
BUDGET = 0.43
CONCURRENCY = 8  # more than the load's threads (6) and the held request together
SLOW_PROVIDER = f"slow-{TOKEN}"
CONFIG = """
state: {{redis_url: "{redis}"}}
providers:
  - {{name: {provider}, kind: openai_compatible, base_url: "{up}"}}
  - {{name: {slow_provider}, kind: openai_compatible, base_url: "{slow}"}}
models:
  - {{provider: {provider}, model: gpt-t, input_per_mtok: 1000, output_per_mtok: 1000}}
routes:
  - {{name: chat, targets: [{{provider: {provider}, model: gpt-t}}]}}
  - {{name: slow, targets: [{{provider: {slow_provider}, model: gpt-t}}]}}
policies:
  - {{name: once, match: {{routes: ["*"]}}, retry: {{max_attempts: 1}}, timeout: {{total: 2s}}}}
tenants:
  - {{name: {budget_tenant}, budget: {{daily_usd: {budget}}}}}
  - {{name: {paced}, limits: {{requests_per_minute: 3}}}}
  - {{name: {keyed}}}
  - {{name: {busy}, limits: {{max_concurrency: {concurrency}}}}}
"""
BODY = {"model": "chat", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 10}


def redis_or_skip() -> redis.Redis:
    client = redis.Redis.from_url(REDIS_URL, socket_timeout=5)
    try:
        client.ping()
    except redis.RedisError as exc:
        message = f"Redis is needed at {REDIS_URL} and not available: {exc}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return client


@pytest.fixture(scope="module")
def shared_redis() -> Iterator[redis.Redis]:
    client = redis_or_skip()
    yield client
    # Only this module's keys: their names carry TOKEN (a tenant's or the provider's).
    made = list(client.scan_iter(match=f"*{TOKEN}*", count=1000))
    if made:
        client.delete(*made)
    client.close()


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    with fresh_database() as url:
        yield url


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        fake.default = Behavior(usage=USAGE, text="ok")
        yield fake


@pytest.fixture(scope="module")
def slow_upstream() -> Iterator[FakeOpenAI]:
    """An upstream that answers no request within the policy's 2 s: a request sent there
    holds its lease until its gateway gives up, or dies."""
    with FakeOpenAI() as fake:
        fake.default = Behavior(usage=USAGE, text="ok", delay_before_headers=30.0)
        yield fake


@pytest.fixture(scope="module")
def fleet(
    tmp_path_factory: pytest.TempPathFactory,
    shared_redis: redis.Redis,
    database: str,
    upstream: FakeOpenAI,
    slow_upstream: FakeOpenAI,
) -> Iterator[Fleet]:
    home = tmp_path_factory.mktemp("fleet")
    config = home / "gw.yaml"
    config.write_text(
        CONFIG.format(
            redis=REDIS_URL,
            up=upstream.base_url,
            slow=slow_upstream.base_url,
            provider=PROVIDER,
            slow_provider=SLOW_PROVIDER,
            budget_tenant=BUDGET_TENANT,
            budget=BUDGET,
            paced=PACED,
            keyed=KEYED,
            busy=BUSY,
            concurrency=CONCURRENCY,
        )
    )
    with running_fleet(home, config, 3, env={"GW_STATE_URL": database}) as gateways:
        yield gateways


def new_key(gw: GwServer, tenant: str) -> str:
    """A key in the shared store; every gateway honours it once its cache refreshes."""
    assert gw.config is not None
    made: dict[str, Any] = gw.cli_json(
        "keys", "create", "--config", str(gw.config), "--tenant", tenant
    )
    return str(made["key"])


def post(
    gw: GwServer, key: str, http: httpx.Client | None = None, route: str = "chat"
) -> httpx.Response:
    headers = {"authorization": f"Bearer {key}"}
    body = {**BODY, "model": route}
    if http is not None:
        return http.post(f"{gw.url}/v1/chat/completions", json=body, headers=headers)
    with gw.client() as own:
        return own.post("/v1/chat/completions", json=body, headers=headers)


def outcome(response: httpx.Response) -> str:
    if response.status_code == 200:
        return "ok"
    return str(response.json()["error"]["code"])


def honoured_everywhere(fleet: Fleet, key: str) -> None:
    for gw in fleet:
        wait_until(lambda gw=gw: post(gw, key).status_code == 200, f"{gw.url} to take the key")


def spread(fleet: Fleet, key: str, count: int) -> list[str]:
    """``count`` requests at once, dealt round the gateways."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(lambda n: outcome(post(fleet[n % len(fleet)], key)), range(count)))


def tenant_usage(gw: GwServer, tenant: str) -> dict[str, Any] | None:
    rows: list[dict[str, Any]] = gw.cli_json("usage", "--by", "tenant")
    return next((row for row in rows if row["tenant"] == tenant), None)


def test_one_budget_in_one_ledger(fleet: Fleet, record_property: Any) -> None:
    key = new_key(fleet[0], BUDGET_TENANT)
    wait_until(
        lambda: all(post(gw, "gw-no-such-key").status_code == 401 for gw in fleet),
        "every gateway to require keys",
    )
    # No request of this tenant yet: honoured_everywhere would spend the budget.
    outcomes = spread(fleet, key, 60)
    answered = outcomes.count("ok")
    assert answered + outcomes.count("budget_exceeded") == 60, outcomes

    # One ledger in PostgreSQL: gw usage on any gateway reads it, and all agree.
    def all_rows() -> dict[str, Any] | None:
        row = tenant_usage(fleet[0], BUDGET_TENANT)
        return row if row is not None and row["requests"] == 60 else None

    row = wait_until(all_rows, "the usage rows of all 60 requests")
    assert tenant_usage(fleet[1], BUDGET_TENANT) == row == tenant_usage(fleet[2], BUDGET_TENANT)
    spent = float(row["cost_usd"] or 0.0)
    assert spent == pytest.approx(answered * COST)
    # Reservations equal the bills here, so the fleet may not spend a cent over: the
    # overshoot allowed is what requests in flight under-reserved, which is nothing.
    overshoot = max(0.0, spent - BUDGET)
    record_property("budget_answered", answered)
    record_property("budget_overshoot_usd", overshoot)
    print(
        f"budget ${BUDGET}: {answered} of 60 answered, ${spent:.3f} spent, overshoot ${overshoot}"
    )
    assert overshoot == 0.0
    assert answered == 5  # $0.43 holds five $0.084 reservations, whatever the interleaving


def test_one_requests_per_minute_limit(fleet: Fleet) -> None:
    key = new_key(fleet[0], PACED)
    outcomes = spread(fleet, key, 12)  # far from a refill: 20 s a request
    assert outcomes.count("ok") == 3, outcomes  # 3 a minute for the fleet, not per gateway
    assert outcomes.count("rate_limited") == 9, outcomes


def test_a_key_revoked_on_one_gateway_is_refused_by_the_others(fleet: Fleet) -> None:
    first, *others = fleet
    assert first.config is not None
    made = first.cli_json("keys", "create", "--config", str(first.config), "--tenant", KEYED)
    honoured_everywhere(fleet, made["key"])

    assert first.cli_json("keys", "revoke", made["id"])["status"] == "revoked"
    revoked_at = time.monotonic()
    seen: list[float] = []
    for gw in others:
        # The key cache refreshes each second; the deadline allows for a loaded machine.
        wait_until(
            lambda gw=gw: post(gw, made["key"]).status_code == 401,
            f"{gw.url} to refuse the revoked key",
            timeout=5.0,
        )
        seen.append(time.monotonic() - revoked_at)
    print(f"revoked key refused by gateways 2 and 3 after {seen[0]:.2f} s and {seen[1]:.2f} s")
    assert post(first, made["key"]).status_code == 401


async def ledger_ids(database: str) -> set[str]:
    conn = await asyncpg.connect(database, timeout=10)
    try:
        return {row["request_id"] for row in await conn.fetch("SELECT request_id FROM usage")}
    finally:
        await conn.close()


def leases(client: redis.Redis, tenant: str) -> int:
    """The tenant's leases in Redis (gw/fleet/limit_scripts.py's layout)."""
    return int(client.zcard(f"gw:v1:{{{tenant}}}:leases"))


def test_a_gateway_killed_under_load(
    fleet: Fleet,
    upstream: FakeOpenAI,
    slow_upstream: FakeOpenAI,
    database: str,
    shared_redis: redis.Redis,
) -> None:
    key = new_key(fleet[0], BUSY)
    honoured_everywhere(fleet, key)
    upstream.default = Behavior(usage=USAGE, text="ok", delay_before_headers=0.05)
    answered: list[str] = []  # request ids answered 200, by any gateway
    lock = threading.Lock()
    quarter_done = threading.Event()
    per_thread, threads = 20, 6  # bounded: 120 requests

    def load(n: int) -> list[str]:
        outcomes: list[str] = []
        with httpx.Client(timeout=30.0) as http:
            for i in range(per_thread):
                gw = fleet[(n + i) % len(fleet)]
                try:
                    response = post(gw, key, http)
                except httpx.TransportError:
                    outcomes.append("connection_error")  # the killed gateway, or mid-kill
                    continue
                outcomes.append(outcome(response))
                if response.status_code == 200:
                    with lock:
                        answered.append(response.headers["x-gw-request-id"])
                        if len(answered) >= per_thread * threads // 4:
                            quarter_done.set()
        return outcomes

    with concurrent.futures.ThreadPoolExecutor(max_workers=threads + 1) as pool:
        work = [pool.submit(load, n) for n in range(threads)]
        assert quarter_done.wait(timeout=60), "a quarter of the load never got answered"
        # One request surely in flight on gateway 1 when it dies: its lease is never settled.
        held = pool.submit(lambda: post(fleet[0], key, route="slow"))
        wait_until(lambda: slow_upstream.count, "the held request to reach its upstream")
        fleet.kill(0)  # mid-load: nothing it held is settled, nothing buffered is flushed
        with pytest.raises(httpx.TransportError):
            held.result(timeout=30)
        outcomes = [result for job in work for result in job.result(timeout=120)]
    # After the kill its leases still count: the survivors may refuse for concurrency.
    assert set(outcomes) <= {"ok", "connection_error", "concurrency_limited"}, outcomes

    fleet.restart(0)  # on its state dir: the usage journal it left is put back first
    missing: set[str] = set()

    def all_in_ledger() -> bool:
        missing.clear()
        missing.update(set(answered) - asyncio.run(ledger_ids(database)))
        return not missing

    wait_until(all_in_ledger, lambda: f"{len(missing)} answered requests without a usage row")
    print(
        f"kill -9 under load: {len(answered)} of {len(outcomes)} answered, all in the ledger;"
        f" {outcomes.count('concurrency_limited')} refused while its leases held"
    )

    # The dead gateway's leases run out after their TTL (2 s + 2 s): the next admission
    # purges them, and the tenant has its whole concurrency back, at once, on the others.
    upstream.default = Behavior(usage=USAGE, text="ok", delay_before_headers=0.5)

    def whole_concurrency() -> bool:
        with concurrent.futures.ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
            got = list(pool.map(lambda n: outcome(post(fleet[1 + n % 2], key)), range(CONCURRENCY)))
        return got == ["ok"] * CONCURRENCY

    try:
        wait_until(whole_concurrency, "the killed gateway's leases to run out")
        # Nobody settles a dead gateway's lease: an empty set means it ran out.
        wait_until(lambda: leases(shared_redis, BUSY) == 0, "every lease settled or expired")
    finally:
        upstream.default = Behavior(usage=USAGE, text="ok")

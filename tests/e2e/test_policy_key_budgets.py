"""Budgets per policy (``policies[].budget``) and per API key (``gw keys ... --daily-usd``)
through a live gw, counted in the process and in Redis (``state.redis_url``).

The fake bills 11 + 10 tokens at $1 per 1k ($0.021 a request); a request reserves its
upper bound ((2 x 5 + 64) input + 10 output tokens: $0.084, gw/execution/budget_reserve.py).
Against a daily budget of $0.11: the first request leaves 76% used (no warning), the
second 95% (a warning in ``x-gw-warning`` and explain), the third would cross it and gets
402 ``budget_exceeded`` before any upstream call. A restart seeds the spend back from the
ledger (with Redis emptied first, so the fleet's counter is seeded too).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
import redis

from e2e.gw_process import GwServer
from e2e.waiting import wait_until
from fakes.openai_upstream import Behavior, FakeOpenAI
from fakes.redis_server import RedisServer

pytestmark = pytest.mark.e2e

CONFIG = """
{state}
providers:
  - {{name: up, kind: openai_compatible, base_url: "{up}"}}
models:
  - {{provider: up, model: gpt-t, input_per_mtok: 1000, output_per_mtok: 1000}}
routes:
  - {{name: chat, targets: [{{provider: up, model: gpt-t}}]}}
  - {{name: other, targets: [{{provider: up, model: gpt-t}}]}}
policies:
  - {{name: capped, match: {{routes: [chat]}}, retry: {{max_attempts: 1}},
     budget: {{daily_usd: {policy_budget}}}}}
  - {{name: free, match: {{routes: [other]}}, retry: {{max_attempts: 1}}}}
tenants:
  - {{name: team}}
"""
HI = [{"role": "user", "content": "hi"}]
DAY = r"\d{4}-\d{2}-\d{2}"
BACKENDS = ["process", "redis"]


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with RedisServer(tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.fixture
def upstream() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        fake.default = Behavior(usage=(11, 10), text="ok")
        yield fake


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def write_config(
    tmp_path: Path, upstream: FakeOpenAI, backend: str, redis_server: RedisServer, *,
    policy_budget: str = "null", auth: str = "",
) -> Path:  # fmt: skip
    state = f'state: {{redis_url: "{redis_server.url}"}}' if backend == "redis" else ""
    path = tmp_path / "gw.yaml"
    text = CONFIG.format(state=state, up=upstream.base_url, policy_budget=policy_budget)
    path.write_text(auth + text)
    return path


def empty(redis_server: RedisServer) -> None:
    """Redis forgets every counter: a restart must seed them from the ledger."""
    client = redis.Redis.from_url(redis_server.url)
    try:
        client.flushdb()
    finally:
        client.close()


def create(client: openai.OpenAI, model: str = "chat") -> openai.APIResponse[object]:
    return client.chat.completions.with_raw_response.create(  # type: ignore[return-value]
        model=model, messages=HI, max_tokens=10
    )


def refused(client: openai.OpenAI, model: str = "chat") -> openai.APIStatusError:
    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(model=model, messages=HI, max_tokens=10)
    return caught.value


def explained_warnings(gw: GwServer, request_id: str) -> list[str]:
    return list(gw.wait_for_trace(request_id)["decision"]["warnings"])


def test_a_policy_budget_refuses_the_request_that_would_cross_it_and_holds_after_a_restart(
    tmp_path: Path, upstream: FakeOpenAI, backend: str, redis_server: RedisServer
) -> None:
    empty(redis_server)
    config = write_config(
        tmp_path, upstream, backend, redis_server, policy_budget="0.11", auth="auth: {mode: open}"
    )
    with GwServer(tmp_path / "state", config) as gw:
        client = openai.OpenAI(base_url=gw.base_url, api_key="anything", max_retries=0)
        first, second = create(client), create(client)
        assert "x-gw-warning" not in first.headers  # 76% with its reservation
        warning = second.headers["x-gw-warning"]
        assert re.fullmatch(
            rf"policy capped has used 95% of its daily budget of \$0\.11 \({DAY}\), "
            "counting requests in flight",
            warning,
        )
        assert warning in explained_warnings(gw, second.headers["x-gw-request-id"])
        calls = upstream.count
        error = refused(client)
        assert (error.status_code, error.code) == (402, "budget_exceeded")
        message = str(error)
        assert "policy capped has spent $0.042000 of its daily budget of $0.11" in message
        assert "raise policies[].budget or wait for the next day" in message
        assert upstream.count == calls  # refused before any upstream call
        explained = gw.wait_for_trace(error.response.headers["x-gw-request-id"])
        assert explained["error"]["code"] == "budget_exceeded"
        assert explained["decision"]["policy"] == "capped"
        # Another policy's requests are not counted by it.
        assert create(client, "other").status_code == 200

    if backend == "redis":
        empty(redis_server)
    with GwServer(tmp_path / "state", config) as gw:  # seeded from the ledger
        client = openai.OpenAI(base_url=gw.base_url, api_key="anything", max_retries=0)
        calls = upstream.count
        assert refused(client).code == "budget_exceeded"
        assert upstream.count == calls
        assert create(client, "other").status_code == 200


def test_a_key_budget_set_by_the_cli_refuses_and_changes_on_a_running_gateway(
    tmp_path: Path, upstream: FakeOpenAI, backend: str, redis_server: RedisServer
) -> None:
    empty(redis_server)
    config = write_config(tmp_path, upstream, backend, redis_server)
    state = tmp_path / "state"
    gw = GwServer(state, config)
    made = gw.cli_json(
        "keys", "create", "--tenant", "team", "--daily-usd", "0.11", "--config", str(config)
    )
    key_id, secret = made["id"], made["key"]
    assert made["budget"] == {
        "daily_usd": 0.11,
        "weekly_usd": None,
        "monthly_usd": None,
        "total_usd": None,
    }
    with gw:
        client = openai.OpenAI(base_url=gw.base_url, api_key=secret, max_retries=0)
        first, second = create(client), create(client)
        assert "x-gw-warning" not in first.headers
        warning = second.headers["x-gw-warning"]
        assert re.fullmatch(
            rf"API key {key_id} has used 95% of its daily budget of \$0\.11 \({DAY}\), "
            "counting requests in flight",
            warning,
        )
        assert warning in explained_warnings(gw, second.headers["x-gw-request-id"])
        calls = upstream.count
        error = refused(client)
        assert (error.status_code, error.code) == (402, "budget_exceeded")
        message = str(error)
        assert f"API key {key_id} has spent $0.042000 of its daily budget of $0.11" in message
        assert f"raise it with `gw keys update {key_id} --daily-usd USD`" in message
        assert upstream.count == calls

        # Raised while the gateway runs: it counts by the new budget within a second.
        gw.cli("keys", "update", key_id, "--daily-usd", "1")
        wait_until(lambda: _outcome(client) == "ok", "the raised key budget to take effect")
        shown = gw.cli_json("keys", "show", key_id)
        assert shown["budget"]["daily_usd"] == 1.0
        # Lowered below what it spent ($0.063): refused again.
        gw.cli("keys", "update", key_id, "--daily-usd", "0.1")
        wait_until(
            lambda: _outcome(client) == "budget_exceeded", "the lowered key budget to take effect"
        )
        calls = upstream.count

    if backend == "redis":
        empty(redis_server)
    with GwServer(state, config) as gw:  # the key's spend seeded from the ledger
        client = openai.OpenAI(base_url=gw.base_url, api_key=secret, max_retries=0)
        assert refused(client).code == "budget_exceeded"
        assert upstream.count == calls
        gw.cli("keys", "update", key_id, "--daily-usd", "none")
        wait_until(lambda: _outcome(client) == "ok", "the key budget's removal to take effect")


def test_a_budget_given_to_a_key_on_a_running_gateway_counts_what_it_spent_before(
    tmp_path: Path, upstream: FakeOpenAI, backend: str, redis_server: RedisServer
) -> None:
    """The key spends $0.063 with no budget, on this gateway's watch (after its start);
    a daily budget of $0.10 set then leaves no room for the next request's reservation."""
    empty(redis_server)
    config = write_config(tmp_path, upstream, backend, redis_server)
    with GwServer(tmp_path / "state", config) as gw:
        made = gw.cli_json("keys", "create", "--tenant", "team", "--config", str(config))
        key_id = made["id"]
        client = openai.OpenAI(base_url=gw.base_url, api_key=made["key"], max_retries=0)
        for _ in range(3):
            create(client)

        def written() -> bool:
            rows = gw.cli_json("usage", "--by", "key")
            return any(row["key"] == key_id and row["requests"] == 3 for row in rows)

        wait_until(written, "the three requests in the usage ledger")
        gw.cli("keys", "update", key_id, "--daily-usd", "0.1")
        # Until the key cache sees the change (within a second) requests go through.
        wait_until(
            lambda: _outcome(client) == "budget_exceeded", "the new key budget to take effect"
        )
        # The refusal counts the spend from before the budget: at least the three written
        # requests ($0.063), not only what came after (a counter started at zero would
        # have let the first budgeted request through and said $0.021).
        message = str(refused(client))
        spent = re.search(rf"API key {key_id} has spent \$(\d+\.\d+) of its daily budget", message)
        assert spent is not None, message
        assert float(spent.group(1)) >= 0.063


def _outcome(client: openai.OpenAI) -> str:
    """One request: ``ok``, or the code it was refused with."""
    try:
        client.chat.completions.create(model="chat", messages=HI, max_tokens=10)
    except openai.APIStatusError as error:
        return str(error.code)
    return "ok"

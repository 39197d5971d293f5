"""Tenant limits through a live gw, with keys made by the CLI and the openai SDK as the
client: requests per minute (429 + retry-after), concurrency (429 concurrency_limited),
budgets (402 before any upstream call), racing requests that cannot overspend, tenant
routes, and spend that survives a restart (seeded from the usage ledger).

Nothing here is timed: limits are far from any refill (a minute), and the concurrency
case holds its first request at the upstream until the second has been refused.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from e2e.gw_process import GwServer
from e2e.waiting import wait_until
from fakes.openai_upstream import Behavior, FakeOpenAI

CONFIG = """
providers:
  - {{name: up, kind: openai_compatible, base_url: "{up}"}}
models:
  # $1 per 1k input or output tokens: a request with max_tokens 100 projects about $0.1.
  - {{provider: up, model: gpt-t, input_per_mtok: 1000, output_per_mtok: 1000}}
routes:
  - {{name: chat, targets: [{{provider: up, model: gpt-t}}]}}
  - {{name: other, targets: [{{provider: up, model: gpt-t}}]}}
policies:
  - {{name: once, match: {{routes: ["*"]}}, retry: {{max_attempts: 1}}}}
tenants:
  - {{name: paced, limits: {{requests_per_minute: 2}}}}
  - {{name: single, limits: {{max_concurrency: 1}}}}
  - {{name: thrifty, allowed_routes: [chat], budget: {{daily_usd: 0.5}}}}
"""
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture(scope="module")
def limits_gw(tmp_path_factory: pytest.TempPathFactory, upstream: FakeOpenAI) -> Iterator[GwServer]:
    home = tmp_path_factory.mktemp("limits")
    config = home / "gw.yaml"
    config.write_text(CONFIG.format(up=upstream.base_url))
    with GwServer(home / "state", config) as server:
        yield server


def key_for(gw: GwServer, tenant: str) -> str:
    assert gw.config is not None
    made: dict[str, Any] = gw.cli_json(
        "keys", "create", "--config", str(gw.config), "--tenant", tenant
    )
    return str(made["key"])


def client(gw: GwServer, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.base_url, api_key=key, max_retries=0)


def ask(gw: GwServer, key: str, model: str = "chat", max_tokens: int = 100) -> Any:
    return client(gw, key).chat.completions.create(model=model, messages=HI, max_tokens=max_tokens)


def test_requests_per_minute_answer_429_with_retry_after(limits_gw: GwServer) -> None:
    key = key_for(limits_gw, "paced")
    ask(limits_gw, key)
    ask(limits_gw, key)
    with pytest.raises(openai.RateLimitError) as refused:
        ask(limits_gw, key)
    assert refused.value.code == "rate_limited"
    assert int(refused.value.response.headers["retry-after"]) >= 1
    assert "requests_per_minute" in refused.value.message


def test_a_second_request_in_flight_is_concurrency_limited(
    limits_gw: GwServer, upstream: FakeOpenAI
) -> None:
    key = key_for(limits_gw, "single")
    upstream.clear()
    upstream.enqueue(Behavior(delay_before_headers=3.0))
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        first = pool.submit(ask, limits_gw, key)
        for _ in range(300):  # bounded: until the first request has reached the upstream
            if upstream.count:
                break
            concurrent.futures.wait([first], timeout=0.05)
        assert upstream.count == 1
        with pytest.raises(openai.RateLimitError) as refused:
            ask(limits_gw, key)
        assert refused.value.code == "concurrency_limited"
        assert first.result(timeout=60).choices[0].message.content
    ask(limits_gw, key)  # the slot came back


def test_a_budget_stops_spend_before_the_upstream_and_racers_cannot_overspend(
    limits_gw: GwServer, upstream: FakeOpenAI
) -> None:
    key = key_for(limits_gw, "thrifty")
    upstream.clear()
    # Each request reserves $0.174 (input 2 x 5 estimated + 64 tokens, 100 out, at $1/1k)
    # and the fake bills 50 + 50 tokens: $0.1. One is admitted only while spent + reserved +
    # $0.174 fits in $0.5, so however the racers interleave at most 4 are answered ($0.3
    # spent + $0.174 fits, $0.4 + $0.174 does not); at once, only 2 reservations fit.
    upstream.default = Behavior(usage=(50, 50))
    later: list[str] = []
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=12) as pool:
            outcomes = list(pool.map(lambda _: _try(limits_gw, key), range(12)))
        answered = outcomes.count("ok")
        assert answered + outcomes.count("budget_exceeded") == 12
        assert 1 <= answered <= 4
        assert upstream.count == answered  # refused requests never reached the upstream
        # One at a time, the same requests are answered until the spend leaves less than a
        # reservation: the first refusal comes at $0.4 spent, whatever the race let in. The
        # later ones bill as the racers did, so the budget is really spent when they stop.
        while "budget_exceeded" not in later and len(later) < 4:
            later.append(_try(limits_gw, key))
        assert later[-1] == "budget_exceeded"
        assert set(later[:-1]) <= {"ok"}
        assert answered + later.count("ok") == 4
        assert upstream.count == 4
        # Once spent, more are refused with 402 and none of those reaches the upstream.
        with pytest.raises(openai.APIStatusError) as over:
            ask(limits_gw, key)
        assert over.value.status_code == 402
        assert "daily budget" in over.value.message
        assert upstream.count == 4
    finally:
        upstream.default = Behavior()
    # The ledger agrees, once every request's row is written (off the hot path): all four
    # answers' cost, within the budget.
    sent = 12 + len(later) + 1
    row = wait_until(lambda: _usage_row(limits_gw, "thrifty", sent), f"{sent} usage rows")
    assert row["requests"] == sent
    assert row["cost_usd"] == pytest.approx(0.4)
    assert row["cost_usd"] <= 0.5


def _usage_row(gw: GwServer, tenant: str, requests: int) -> dict[str, Any] | None:
    """The tenant's usage row once it counts ``requests`` (refusals have rows too)."""
    rows = [row for row in gw.cli_json("usage", "--by", "tenant") if row["tenant"] == tenant]
    return rows[0] if rows and rows[0]["requests"] >= requests else None


def _try(gw: GwServer, key: str) -> str:
    try:
        ask(gw, key)
    except openai.APIStatusError as error:
        return str(error.code)
    return "ok"


def test_a_tenant_outside_its_allowed_routes_is_denied(limits_gw: GwServer) -> None:
    key = key_for(limits_gw, "thrifty")
    with pytest.raises(openai.PermissionDeniedError) as denied:
        ask(limits_gw, key, model="other")
    assert denied.value.code == "permission_denied"
    assert "allowed_routes" in denied.value.message


def test_spend_survives_a_restart(tmp_path: Path, upstream: FakeOpenAI) -> None:
    config = tmp_path / "gw.yaml"
    config.write_text(
        CONFIG.format(up=upstream.base_url).replace("daily_usd: 0.5", "daily_usd: 0.35")
    )
    upstream.clear()
    upstream.default = Behavior(usage=(50, 50))
    try:
        with GwServer(tmp_path / "state", config) as first:
            key = key_for(first, "thrifty")
            ask(first, key)
            ask(first, key)  # $0.2 spent of $0.35
        with GwServer(tmp_path / "state", config) as second:
            with pytest.raises(openai.APIStatusError) as over:
                ask(second, key)  # it reserves $0.174 (input x2 + 64, 100 out): too much
            assert over.value.status_code == 402
            ask(second, key, max_tokens=10)  # ... a smaller request ($0.084) still fits
    finally:
        upstream.default = Behavior()
    assert upstream.count == 3

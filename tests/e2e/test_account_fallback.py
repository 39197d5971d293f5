"""Several accounts per provider through a live gw: a rate-limited account hands over to
the next account of the same provider before the next provider is tried, and a provider
whose every account is locked is routed around, with the reason in ``gw explain``.

Two fakes stand in for two endpoints of one provider (accounts may differ by key or by
base URL); the 429s carry a long retry-after so that nothing here depends on timing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest

from e2e.gw_process import GwServer
from fakes.openai_upstream import Behavior, FakeOpenAI

CONFIG = """
providers:
  - name: pool
    kind: openai_compatible
    base_url: "{east}"
    api_key: env:POOL_KEY
    accounts:
      - {{name: east}}
      - {{name: west, base_url: "{west}", api_key: env:POOL_WEST_KEY}}
  - {{name: spare, kind: openai_compatible, base_url: "{spare}"}}
routes:
  - name: chat
    targets:
      - {{provider: pool, model: gpt-a, priority: 1}}
      - {{provider: spare, model: gpt-s, priority: 2}}
policies:
  # One call per target, yet a rate-limited account still hands over to the next: account
  # rotation comes before fallback and does not spend max_attempts (DESIGN.md).
  - {{name: once, match: {{routes: ["*"]}}, retry: {{max_attempts: 1}}}}
health: {{rate_limit_cooldown: 10m, max_cooldown: 10m}}
"""
ENV = {"POOL_KEY": "sk-east-0123456789", "POOL_WEST_KEY": "sk-west-0123456789"}
RATE_LIMITED = Behavior(status=429, headers={"retry-after": "600"})


@pytest.fixture(scope="module")
def fakes() -> Iterator[tuple[FakeOpenAI, FakeOpenAI, FakeOpenAI]]:
    with FakeOpenAI() as east, FakeOpenAI() as west, FakeOpenAI() as spare:
        yield east, west, spare


@pytest.fixture(scope="module")
def accounts_gw(
    tmp_path_factory: pytest.TempPathFactory, fakes: tuple[FakeOpenAI, FakeOpenAI, FakeOpenAI]
) -> Iterator[GwServer]:
    home = tmp_path_factory.mktemp("accounts")
    config = home / "gw.yaml"
    east, west, spare = fakes
    config.write_text(CONFIG.format(east=east.base_url, west=west.base_url, spare=spare.base_url))
    with GwServer(home / "state", config, env=ENV) as server:
        yield server


def ask(gw: GwServer) -> tuple[str, dict[str, Any]]:
    client = openai.OpenAI(base_url=gw.base_url, api_key="unused", max_retries=0)
    raw = client.chat.completions.with_raw_response.create(
        model="chat", messages=[{"role": "user", "content": "hi"}]
    )
    assert raw.parse().choices[0].message.content
    return raw.headers["x-gw-route"], gw.cli_json("explain", raw.headers["x-gw-request-id"])


def attempts(explained: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(a["provider"], a["account"], a["outcome"]) for a in explained["attempts"]]


def test_next_account_then_next_provider_then_routed_around(
    accounts_gw: GwServer, fakes: tuple[FakeOpenAI, FakeOpenAI, FakeOpenAI]
) -> None:
    east, west, spare = fakes

    # 1. Fill-first: east answers while it can, with its own key.
    route, explained = ask(accounts_gw)
    assert route == "pool/gpt-a"
    assert attempts(explained) == [("pool", "east", "answered")]
    assert east.requests[-1].headers["authorization"] == "Bearer sk-east-0123456789"

    # 2. East is rate limited: west (its endpoint, its key) answers; no wait, no spare.
    east.enqueue(RATE_LIMITED)
    route, explained = ask(accounts_gw)
    assert route == "pool/gpt-a"
    assert attempts(explained) == [("pool", "east", "next_account"), ("pool", "west", "answered")]
    assert explained["attempts"][0]["error_code"] == "rate_limited"
    assert west.requests[-1].headers["authorization"] == "Bearer sk-west-0123456789"

    # 3. East stays locked (it is not called); west is rate limited too: the next provider.
    east_calls = len(east.requests)
    west.enqueue(RATE_LIMITED)
    route, explained = ask(accounts_gw)
    assert route == "spare/gpt-s"
    assert attempts(explained) == [("pool", "west", "fell_back"), ("spare", "default", "answered")]
    assert len(east.requests) == east_calls

    # 4. Every account of pool is locked: routing skips it and says why.
    west_calls = len(west.requests)
    route, explained = ask(accounts_gw)
    assert route == "spare/gpt-s"
    assert attempts(explained) == [("spare", "default", "answered")]
    pool = next(c for c in explained["decision"]["candidates"] if c["provider"] == "pool")
    assert pool["rejected"] == "unhealthy"
    assert "every account is locked" in pool["detail"]
    assert (len(east.requests), len(west.requests)) == (east_calls, west_calls)
    assert len(spare.requests) == 2
    shown = accounts_gw.cli("explain", explained["request_id"]).stdout
    assert "every account is locked" in shown

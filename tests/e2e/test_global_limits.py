"""Caps for everyone: `limits:` counts every request, in open mode too, through a live gw.

The fake bills 11 + 10 tokens at $1 per 1k ($0.021 a request) against a global daily
budget of $0.11, five requests' worth. One client asking in turn gets 402
`budget_exceeded` for the request whose reservation would cross it, before any upstream
call; 50
racing clients on a fresh gateway stay within the budget (gw/execution/budget_reserve.py
states the bound; these requests stay inside it). A restart seeds the spend back from the
ledger, so the budget still holds.
"""

from __future__ import annotations

import concurrent.futures
import re
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from e2e.gw_process import GwServer
from fakes.openai_upstream import Behavior, FakeOpenAI

pytestmark = pytest.mark.e2e

CONFIG = """
auth: {{mode: open}}
providers:
  - {{name: up, kind: openai_compatible, base_url: "{up}"}}
models:
  - {{provider: up, model: gpt-t, input_per_mtok: 1000, output_per_mtok: 1000}}
routes:
  - {{name: chat, targets: [{{provider: up, model: gpt-t}}]}}
policies:
  - {{name: once, match: {{routes: ["*"]}}, retry: {{max_attempts: 1}}}}
limits:
  budget: {{daily_usd: 0.11}}
"""
BUDGET = 0.11
RACERS = 50


@pytest.fixture
def upstream() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        fake.default = Behavior(usage=(11, 10), text="ok")
        yield fake


@pytest.fixture
def config(tmp_path: Path, upstream: FakeOpenAI) -> Path:
    path = tmp_path / "gw.yaml"
    path.write_text(CONFIG.format(up=upstream.base_url))
    return path


def ask(client: openai.OpenAI) -> str:
    try:
        client.chat.completions.create(
            model="chat", messages=[{"role": "user", "content": "hi"}], max_tokens=10
        )
    except openai.APIStatusError as error:
        return str(error.code)
    return "ok"


def explained_warnings(explained: dict[str, object]) -> list[str]:
    decision = explained["decision"]
    assert isinstance(decision, dict)
    return list(decision["warnings"])


def spent(gw: GwServer) -> float:
    rows = gw.cli_json("usage", "--by", "model")
    return float(sum(row["cost_usd"] for row in rows))


def test_the_request_that_would_cross_a_global_budget_gets_402_before_any_call(
    tmp_path: Path, config: Path, upstream: FakeOpenAI
) -> None:
    with GwServer(tmp_path / "state", config) as gw:
        client = openai.OpenAI(base_url=gw.base_url, api_key="anything", max_retries=0)
        # Each request reserves its upper bound ((2 x 5 + 64) input + 10 output tokens:
        # $0.084) and settles to what was billed ($0.021): the second leaves no room.
        first, second = (
            client.chat.completions.with_raw_response.create(
                model="chat", messages=[{"role": "user", "content": "hi"}], max_tokens=10
            )
            for _ in range(2)
        )
        # 76% used with the first's reservation: no warning; 95% with the second's.
        assert "x-gw-warning" not in first.headers
        assert re.fullmatch(
            r"gw \(limits: every request counts\) has used 95% of its daily budget of \$0\.11 "
            r"\(\d{4}-\d{2}-\d{2}\), counting requests in flight",
            second.headers["x-gw-warning"],
        )
        warned = gw.wait_for_trace(second.headers["x-gw-request-id"])
        assert second.headers["x-gw-warning"] in explained_warnings(warned)
        calls = upstream.count
        with pytest.raises(openai.APIStatusError) as refused:
            client.chat.completions.create(
                model="chat", messages=[{"role": "user", "content": "hi"}], max_tokens=10
            )
        assert refused.value.status_code == 402
        assert refused.value.code == "budget_exceeded"
        message = str(refused.value)
        assert "gw (limits: every request counts) has spent $0.042000 of its daily budget" in (
            message
        )
        assert "raise limits.budget or wait for the next day" in message
        assert upstream.count == calls  # refused before any upstream call
        request_id = refused.value.response.headers["x-gw-request-id"]
        explained = gw.wait_for_trace(request_id)
        assert explained["error"]["code"] == "budget_exceeded"
        assert spent(gw) == pytest.approx(2 * 0.021)

    # A restart reads the day's spend back from the ledger: still no room.
    with GwServer(tmp_path / "state", config) as gw:
        client = openai.OpenAI(base_url=gw.base_url, api_key="anything", max_retries=0)
        assert ask(client) == "budget_exceeded"
        assert upstream.count == calls


def test_fifty_racing_requests_stay_within_a_global_budget(
    tmp_path: Path, config: Path, upstream: FakeOpenAI
) -> None:
    with GwServer(tmp_path / "state", config) as gw:
        client = openai.OpenAI(base_url=gw.base_url, api_key="anything", max_retries=0)
        with concurrent.futures.ThreadPoolExecutor(max_workers=RACERS) as pool:
            outcomes = list(pool.map(lambda _: ask(client), range(RACERS)))
        answered = outcomes.count("ok")
        assert answered + outcomes.count("budget_exceeded") == RACERS, outcomes
        assert 1 <= answered <= 5
        assert upstream.count == answered
        assert spent(gw) == pytest.approx(answered * 0.021)
        assert spent(gw) <= BUDGET

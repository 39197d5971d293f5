"""The usage ledger through a live gw: `gw usage` and /admin/v1/usage agree with the
traces request by request, streams ask their upstream for usage, a stream cut short is
marked as an estimate, and a SIGTERM right after a burst loses no usage row.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from e2e.gw_process import GwServer, run_cli
from e2e.waiting import wait_until
from fakes.openai_upstream import Behavior, FakeOpenAI

CONFIG = """
providers:
  - {{name: fake, kind: openai_compatible, base_url: "{fake}", api_key: env:GW_TEST_KEY}}
  - {{name: hosted, kind: openai, base_url: "{fake}", api_key: env:GW_TEST_KEY}}
models:
  - {{provider: fake, model: gpt-usage, input_per_mtok: 2.0, output_per_mtok: 8.0,
     context_window: 128000, capabilities: [tools, vision, json_schema, json_object]}}
  - {{provider: fake, model: gpt-cut, input_per_mtok: 1.0, output_per_mtok: 1.0}}
routes:
  - {{name: chat, targets: [{{provider: fake, model: gpt-usage}}]}}
  - {{name: cut, targets: [{{provider: fake, model: gpt-cut}}]}}
  # A provider of kind openai: gpt-4o-mini is priced by the shipped catalog.
  - {{name: shipped, targets: [{{provider: hosted, model: gpt-4o-mini}}]}}
policies:
  - {{name: once, match: {{routes: ["*"]}}, retry: {{max_attempts: 1}}}}
"""
ENV = {"GW_TEST_KEY": "sk-usage-test-0123456789"}
GPT_4O_MINI = (0.15, 0.60)  # gw/catalog.yaml, USD per million input / output tokens


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture(scope="module")
def usage_gw(tmp_path_factory: pytest.TempPathFactory, fake: FakeOpenAI) -> Iterator[GwServer]:
    home = tmp_path_factory.mktemp("usage")
    config = home / "gw.yaml"
    config.write_text(CONFIG.format(fake=fake.base_url))
    with GwServer(home / "state", config, env=ENV) as server:
        yield server


def chat(gw: GwServer, model: str, *, stream: bool) -> str:
    """One chat completion through the OpenAI SDK; the gw request id."""
    client = openai.OpenAI(base_url=gw.base_url, api_key="unused", max_retries=0)
    messages: Any = [{"role": "user", "content": "count my tokens"}]
    if not stream:
        raw = client.chat.completions.with_raw_response.create(model=model, messages=messages)
        assert raw.parse().choices[0].message.content
        return raw.headers["x-gw-request-id"]
    # The client asks for no usage; gw asks the upstream for it all the same.
    with client.chat.completions.with_streaming_response.create(
        model=model, messages=messages, stream=True, stream_options={"include_usage": False}
    ) as response:
        request_id = response.headers["x-gw-request-id"]
        text = "".join(
            chunk.choices[0].delta.content or "" for chunk in response.parse() if chunk.choices
        )
    assert text
    return request_id


def usage_by(gw: GwServer, by: str, expected_requests: int) -> list[dict[str, Any]]:
    """`gw usage --by BY --json`, polled (rows are written off the hot path) until it
    counts ``expected_requests``."""
    seen: list[list[dict[str, Any]]] = []

    def counted() -> list[dict[str, Any]] | None:
        seen.append(gw.cli_json("usage", "--by", by))
        return seen[-1] if sum(row["requests"] for row in seen[-1]) >= expected_requests else None

    return wait_until(
        counted,
        lambda: f"usage to reach {expected_requests} requests; last: {seen[-1]}",
        interval=0.1,
    )


def test_usage_matches_the_traces_for_streams_and_whole_answers(
    usage_gw: GwServer, fake: FakeOpenAI
) -> None:
    fake.clear()
    reported = [(100 + n, 20 + n) for n in range(6)]
    fake.enqueue(*(Behavior(usage=usage) for usage in reported))
    ids = [chat(usage_gw, "chat", stream=n % 2 == 1) for n in range(6)]
    fake.enqueue(Behavior(usage=(1000, 500)), Behavior(usage=(3000, 100)))
    shipped_ids = [chat(usage_gw, "shipped", stream=stream) for stream in (False, True)]

    # Every stream asked its upstream for usage, so every count is the provider's.
    streamed = [r.json for r in fake.requests if r.json and r.json.get("stream")]
    assert len(streamed) == 4
    assert all(body["stream_options"]["include_usage"] is True for body in streamed)

    rows = {row["model"]: row for row in usage_by(usage_gw, "model", 8)}
    traced = [usage_gw.wait_for_trace(request_id) for request_id in ids]

    mine = rows["gpt-usage"]
    assert mine["requests"] == 6
    assert mine["errors"] == 0
    assert mine["input_tokens"] == sum(prompt for prompt, _ in reported)
    assert mine["output_tokens"] == sum(completion for _, completion in reported)
    assert mine["estimated"] == 0
    assert [t["usage"]["source"] for t in traced] == ["provider"] * 6
    costs = [t["cost_usd"] for t in traced]
    assert costs == [
        pytest.approx((prompt * 2.0 + completion * 8.0) / 1e6, abs=1e-12)
        for prompt, completion in reported
    ]
    assert mine["cost_usd"] == pytest.approx(sum(costs), abs=1e-9)

    shipped = rows["gpt-4o-mini"]
    shipped_cost = sum(usage_gw.wait_for_trace(i)["cost_usd"] for i in shipped_ids)
    assert (shipped["requests"], shipped["input_tokens"], shipped["output_tokens"]) == (
        2,
        4000,
        600,
    )
    assert shipped["cost_usd"] == pytest.approx(shipped_cost, abs=1e-9)
    assert shipped_cost == pytest.approx(
        (4000 * GPT_4O_MINI[0] + 600 * GPT_4O_MINI[1]) / 1e6, abs=1e-12
    )

    # The admin API serves the same report.
    with usage_gw.client() as client:
        response = client.get("/admin/v1/usage", params={"by": "model"})
    assert response.status_code == 200
    assert response.headers["x-gw-request-id"]
    assert {row["model"]: row for row in response.json()} == rows
    by_route = {row["route"]: row["requests"] for row in usage_by(usage_gw, "route", 8)}
    assert by_route == {"chat": 6, "shipped": 2}


def test_a_stream_cut_short_is_an_estimate(usage_gw: GwServer, fake: FakeOpenAI) -> None:
    fake.clear()
    fake.enqueue(Behavior(text="one two three four five six", drop_after_chunks=2))
    body = {"model": "cut", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with (
        usage_gw.client() as client,
        client.stream("POST", "/v1/chat/completions", json=body) as response,
    ):
        request_id = response.headers["x-gw-request-id"]
        text = "".join(response.iter_text())
    assert '"error"' in text

    def cut_row() -> dict[str, Any] | None:
        rows = {row["model"]: row for row in usage_gw.cli_json("usage", "--by", "model")}
        return rows.get("gpt-cut")

    cut = wait_until(cut_row, "the usage row of the cut stream", interval=0.1)
    assert (cut["requests"], cut["errors"], cut["estimated"]) == (1, 1, 1)
    explained = usage_gw.wait_for_trace(request_id)
    assert explained["usage"]["source"] == "estimate"
    assert cut["cost_usd"] == pytest.approx(explained["cost_usd"], abs=1e-12)
    assert cut["output_tokens"] == explained["usage"]["output_tokens"] > 0


BURST_CONFIG = """
auth: {mode: open}  # no API-key lookups: the held database lock must not stall requests
providers: [{name: mock, kind: mock, mock: {latency: 20ms}}]
models:
  - {provider: mock, model: mock-1, input_per_mtok: 1.0, output_per_mtok: 2.0,
     context_window: 128000, capabilities: [tools]}
routes: [{name: mock, targets: [{provider: mock, model: mock-1}]}]
"""
BURST = 300
SIGTERM_AFTER = 200  # answers; the rest are in flight or refused when the signal lands


def test_sigterm_in_a_burst_loses_no_usage_row(tmp_path: Path) -> None:
    """The database is write-locked (as another process might hold it) for the whole
    burst, so usage rows pile up in the queue; SIGTERM comes mid-burst and the lock is
    let go only afterwards: every row must still reach the database."""
    config = tmp_path / "gw.yaml"
    config.write_text(BURST_CONFIG)
    state = tmp_path / "state"
    server = GwServer(state, config).start()
    body = {"model": "mock", "messages": [{"role": "user", "content": "hello"}]}
    answered: list[str] = []
    lock = threading.Lock()

    def ask(n: int) -> None:
        try:
            with httpx.Client(base_url=server.url, timeout=30.0) as client:
                response = client.post("/v1/chat/completions", json={**body, "stream": n % 3 == 0})
                response.read()
        except httpx.TransportError:
            return  # refused or cut by the shutdown: never answered, so no row is owed
        if response.status_code == 200:
            with lock:
                answered.append(response.headers["x-gw-request-id"])
                if len(answered) == SIGTERM_AFTER:
                    assert server.process is not None
                    server.process.send_signal(signal.SIGTERM)

    blocker = sqlite3.connect(state / "gw.db", isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")  # gw's writes wait, fail and are retried
        with ThreadPoolExecutor(max_workers=32) as pool:
            list(pool.map(ask, range(BURST)))

        # Let go only once the shutdown has reached the usage recorder's flush.
        def flushing() -> bool:
            assert server.process is not None
            assert server.process.poll() is None, server.log()
            return "usage recorder stopping with" in server.log()

        wait_until(flushing, lambda: f"the usage recorder's flush:\n{server.log()}", 60)
    finally:
        blocker.rollback()
        blocker.close()
        code = server.stop()
    # uvicorn re-raises the SIGTERM after a clean shutdown: -15 (a kill would be -9).
    assert code in (0, -signal.SIGTERM), server.log()
    assert len(answered) >= SIGTERM_AFTER
    assert "rows unwritten" not in server.log()  # traces may be: they are lossy

    with sqlite3.connect(state / "gw.db") as db:
        stored = {row[0] for row in db.execute("SELECT request_id FROM usage")}
    # Every answered request has its row; requests cut during the shutdown may have one too.
    assert set(answered) <= stored

    # The CLI reads the same rows with the server stopped.
    done = run_cli("usage", "--by", "tenant", "--json", "--state-dir", str(state))
    [row] = json.loads(done.stdout)
    assert row["tenant"] is None
    assert row["requests"] == len(stored)
    assert row["cost_usd"] > 0

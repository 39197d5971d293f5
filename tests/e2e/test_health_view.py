"""`GET /admin/v1/health` and `gw health` against a live gw: an open breaker and a locked
account show up with their reasons, keys mode guards the route, and a missing server is
reported clearly.

Cooldowns and locks are long (10 minutes) so that nothing here depends on timing.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from e2e.gw_process import GwServer, run_cli
from fakes.openai_upstream import Behavior, FakeOpenAI

CONFIG = """
providers:
  - {{name: primary, kind: openai_compatible, base_url: "{primary}", api_key: env:PRIMARY_KEY}}
  - {{name: backup, kind: openai_compatible, base_url: "{backup}"}}
  - name: pool
    kind: openai_compatible
    base_url: "{pool}"
    api_key: env:POOL_EAST_KEY
    accounts:
      - {{name: east}}
      - {{name: west, api_key: env:POOL_WEST_KEY}}
routes:
  - name: chat
    targets:
      - {{provider: primary, model: gpt-a, priority: 1}}
      - {{provider: backup, model: gpt-b, priority: 2}}
  - name: pooled
    targets:
      - {{provider: pool, model: gpt-p}}
policies:
  - {{name: once, match: {{routes: ["*"]}}, retry: {{max_attempts: 1}}}}
  # Two calls: a rate-limited account hands over to the next (a switch counts as a call).
  - {{name: pool, match: {{routes: [pooled]}}, retry: {{max_attempts: 2}}}}
health:
  degraded_after: 3
  unhealthy_after: 3
  error_rate: 1.0
  cooldown: 10m
  max_cooldown: 10m
  rate_limit_cooldown: 10m
"""
SECRETS = {
    "PRIMARY_KEY": "sk-primary-secret-0123",
    "POOL_EAST_KEY": "sk-east-secret-0123",
    "POOL_WEST_KEY": "sk-west-secret-0123",
}
KEYS_CONFIG = """
auth: {mode: keys, admin_key: env:GW_TEST_ADMIN}
providers: [{name: mock, kind: mock}]
routes: [{name: mock, targets: [{provider: mock, model: mock-1}]}]
"""
ADMIN_KEY = "gw-admin-test-0123456789"
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def fakes() -> Iterator[tuple[FakeOpenAI, FakeOpenAI, FakeOpenAI]]:
    with FakeOpenAI() as primary, FakeOpenAI() as backup, FakeOpenAI() as pool:
        yield primary, backup, pool


@pytest.fixture(scope="module")
def health_gw(
    tmp_path_factory: pytest.TempPathFactory, fakes: tuple[FakeOpenAI, FakeOpenAI, FakeOpenAI]
) -> Iterator[GwServer]:
    home = tmp_path_factory.mktemp("health-view")
    config = home / "gw.yaml"
    primary, backup, pool = fakes
    config.write_text(
        CONFIG.format(primary=primary.base_url, backup=backup.base_url, pool=pool.base_url)
    )
    with GwServer(home / "state", config, env=SECRETS) as server:
        yield server


def ask(gw: GwServer, model: str) -> str:
    with gw.client() as http:
        answer = http.post("/v1/chat/completions", json={"model": model, "messages": HI})
    assert answer.status_code == 200, answer.text
    return answer.headers["x-gw-route"]


def health(gw: GwServer) -> dict[str, Any]:
    with gw.client() as http:
        answer = http.get("/admin/v1/health")
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("application/json")
    assert answer.headers["x-gw-request-id"]
    return answer.json()  # type: ignore[no-any-return]


def one_line(text: str) -> str:
    """The CLI's stderr wraps at the console width: compare words, not line breaks."""
    return " ".join(text.split())


def target(report: dict[str, Any], provider: str, model: str) -> dict[str, Any]:
    return next(t for t in report["targets"] if (t["provider"], t["model"]) == (provider, model))


def account(report: dict[str, Any], provider: str, name: str) -> dict[str, Any]:
    return next(a for a in report["accounts"] if (a["provider"], a["account"]) == (provider, name))


def test_an_open_breaker_shows_unhealthy_with_its_reason(
    health_gw: GwServer, fakes: tuple[FakeOpenAI, FakeOpenAI, FakeOpenAI]
) -> None:
    primary, _, _ = fakes
    before = health(health_gw)
    assert [(t["provider"], t["model"]) for t in before["targets"]] == [
        ("primary", "gpt-a"),
        ("backup", "gpt-b"),
        ("pool", "gpt-p"),
    ]
    assert target(before, "primary", "gpt-a")["status"] == "healthy"
    assert target(before, "primary", "gpt-a")["routes"] == ["chat"]

    primary.enqueue(*[Behavior(status=500)] * 3)
    for _ in range(3):
        assert ask(health_gw, "chat") == "backup/gpt-b"

    report = health(health_gw)
    broken = target(report, "primary", "gpt-a")
    assert broken["status"] == "unhealthy"
    assert broken["breaker"] == "open"
    assert "breaker opened: 3 consecutive failures" in broken["reason"]
    assert broken["consecutive_failures"] == 3
    assert broken["openings"] == 1
    assert broken["trial_in_flight"] is False
    assert 0 < broken["cooldown_remaining_s"] <= 600
    assert report["now"] < broken["cooldown_until"] <= report["now"] + 600
    assert broken["latency"] is None  # failures never enter the averages

    answered = target(report, "backup", "gpt-b")
    assert answered["status"] == "healthy"
    assert answered["breaker"] == "closed"
    assert answered["cooldown_until"] is None
    assert answered["latency"]["samples"] == 3
    assert answered["latency"]["total_ms"] >= 0
    assert answered["latency"]["ttft_ms"] is None  # no stream yet

    # The CLI prints the server's JSON unchanged, and a table with the same facts.
    assert health_gw.cli_json("health")["targets"][0]["breaker"] == "open"
    shown = health_gw.cli("health").stdout
    assert "primary/gpt-a" in shown
    assert "unhealthy" in shown
    assert "breaker opened" in shown  # the whole reason is checked in the JSON above


def test_a_rate_limited_account_shows_its_lock(
    health_gw: GwServer, fakes: tuple[FakeOpenAI, FakeOpenAI, FakeOpenAI]
) -> None:
    _, _, pool = fakes
    pool.enqueue(Behavior(status=429, headers={"retry-after": "600"}))
    assert ask(health_gw, "pooled") == "pool/gpt-p"  # east is locked, west answers

    report = health(health_gw)
    east = account(report, "pool", "east")
    assert len(east["locks"]) == 1
    lock = east["locks"][0]
    assert lock["model"] == "gpt-p"
    assert "rate limited" in lock["reason"]
    assert 0 < lock["remaining_s"] <= 600
    assert report["now"] < lock["locked_until"] <= report["now"] + 600
    assert account(report, "pool", "west")["locks"] == []
    assert account(report, "primary", "default")["locks"] == []
    # One account left: the target itself stays healthy, as routing sees it.
    assert target(report, "pool", "gpt-p")["status"] == "healthy"

    listed = health_gw.cli_json("health")
    assert account(listed, "pool", "east")["locks"][0]["model"] == "gpt-p"
    shown = health_gw.cli("health").stdout
    assert "Account locks" in shown
    assert "east" in shown
    assert "rate limited" in shown


def test_the_report_carries_no_secret_and_no_upstream_address(
    health_gw: GwServer, fakes: tuple[FakeOpenAI, FakeOpenAI, FakeOpenAI]
) -> None:
    with health_gw.client() as http:
        text = http.get("/admin/v1/health").text
    shown = health_gw.cli("health").stdout
    for secret in SECRETS.values():
        assert secret not in text
        assert secret not in shown
    for fake in fakes:
        assert fake.base_url not in text
    assert "127.0.0.1" not in text  # no upstream address at all


def test_an_unknown_admin_path_answers_in_the_openai_error_shape(health_gw: GwServer) -> None:
    with health_gw.client() as http:
        answer = http.get("/admin/v1/nothing-here")
    assert answer.status_code == 404
    assert answer.json()["error"]["code"] == "endpoint_not_found"


def test_keys_mode_needs_the_admin_key(tmp_path: Path) -> None:
    config = tmp_path / "gw.yaml"
    config.write_text(KEYS_CONFIG)
    with GwServer(tmp_path / "state", config, env={"GW_TEST_ADMIN": ADMIN_KEY}) as gw:
        gw.env.pop("GW_ADMIN_KEY", None)  # the CLI must find the key through the config
        with gw.client() as http:
            missing = http.get("/admin/v1/health")
            wrong = http.get("/admin/v1/health", headers={"authorization": "Bearer nope"})
            right = http.get("/admin/v1/health", headers={"authorization": f"Bearer {ADMIN_KEY}"})
        assert missing.status_code == 401
        assert missing.json()["error"]["code"] == "authentication_failed"
        assert wrong.status_code == 401
        assert right.status_code == 200
        assert [t["provider"] for t in right.json()["targets"]] == ["mock"]

        # The CLI resolves auth.admin_key (env:GW_TEST_ADMIN) from its own environment ...
        via_config = gw.cli_json("health", "--config", str(config))
        assert via_config["targets"][0]["model"] == "mock-1"
        # ... or takes GW_ADMIN_KEY as it is.
        env = {**gw.env, "GW_ADMIN_KEY": ADMIN_KEY}
        via_env = run_cli("health", "--json", "--state-dir", str(gw.state_dir), env=env)
        assert json.loads(via_env.stdout)["targets"][0]["model"] == "mock-1"
        # A wrong key fails with the server's reason and what to do.
        env = {**gw.env, "GW_ADMIN_KEY": "nope"}
        refused = run_cli("health", "--state-dir", str(gw.state_dir), env=env, check=False)
        assert refused.returncode != 0
        said = one_line(refused.stderr)
        assert "authentication_failed" in said
        assert "GW_ADMIN_KEY" in said
        assert ADMIN_KEY not in refused.stderr


def test_no_running_server_is_a_clear_error(tmp_path: Path) -> None:
    done = run_cli("health", "--state-dir", str(tmp_path), check=False)
    assert done.returncode != 0
    assert "start one with `gw serve`" in one_line(done.stderr)
    assert done.stdout == ""

    # A server.json left behind by a server that is gone: the port refuses connections.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    facts = {"url": f"http://127.0.0.1:{port}", "port": port, "pid": 1, "host": "127.0.0.1"}
    (tmp_path / "server.json").write_text(json.dumps({**facts, "auth_mode": "open"}))
    done = run_cli("health", "--json", "--state-dir", str(tmp_path), check=False)
    assert done.returncode != 0
    said = one_line(done.stderr)
    assert "connection refused" in said
    assert "start one with `gw serve`" in said

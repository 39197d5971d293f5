"""Circuit breakers through a live gw: a target that keeps failing is skipped.

The cooldown is long so that nothing here depends on timing; the half-open trial that
closes a breaker is tested with a fake clock (tests/unit/execution/test_engine.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from e2e.gw_process import GwServer
from fakes.openai_upstream import Behavior, FakeOpenAI

CONFIG = """
providers:
  - {{name: primary, kind: openai_compatible, base_url: "{primary}"}}
  - {{name: backup, kind: openai_compatible, base_url: "{backup}"}}
routes:
  - name: chat
    targets:
      - {{provider: primary, model: gpt-a, priority: 1}}
      - {{provider: backup, model: gpt-b, priority: 2}}
policies:
  - {{name: once, match: {{routes: ["*"]}}, retry: {{max_attempts: 1}}}}
health:
  degraded_after: 3
  unhealthy_after: 3
  error_rate: 1.0
  cooldown: 10m
  max_cooldown: 10m
  trial_timeout: 10s
"""
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def fakes() -> Iterator[tuple[FakeOpenAI, FakeOpenAI]]:
    with FakeOpenAI() as primary, FakeOpenAI() as backup:
        yield primary, backup


@pytest.fixture(scope="module")
def health_gw(
    tmp_path_factory: pytest.TempPathFactory, fakes: tuple[FakeOpenAI, FakeOpenAI]
) -> Iterator[GwServer]:
    home = tmp_path_factory.mktemp("health")
    config = home / "gw.yaml"
    primary, backup = fakes
    config.write_text(CONFIG.format(primary=primary.base_url, backup=backup.base_url))
    with GwServer(home / "state", config) as server:
        yield server


def ask(gw: GwServer) -> tuple[str, dict[str, Any]]:
    with gw.client() as http:
        answer = http.post("/v1/chat/completions", json={"model": "chat", "messages": HI})
    assert answer.status_code == 200
    return answer.headers["x-gw-route"], gw.wait_for_trace(answer.headers["x-gw-request-id"])


def test_a_target_that_keeps_failing_is_skipped_with_the_reason(
    health_gw: GwServer, fakes: tuple[FakeOpenAI, FakeOpenAI]
) -> None:
    primary, _ = fakes
    primary.enqueue(*[Behavior(status=500)] * 3)
    for _ in range(3):  # each fails on primary and falls back
        route, _trace = ask(health_gw)
        assert route == "backup/gpt-b"
    assert primary.count == 3

    for _ in range(2):  # the breaker is open: primary is not called
        route, trace = ask(health_gw)
        assert route == "backup/gpt-b"
        assert [a["provider"] for a in trace["attempts"]] == ["backup"]
    assert primary.count == 3
    primary_candidate = next(
        c for c in trace["decision"]["candidates"] if c["provider"] == "primary"
    )
    assert primary_candidate["rejected"] == "unhealthy"
    assert "breaker opened: 3 consecutive failures" in primary_candidate["detail"]
    shown = health_gw.cli("explain", trace["request_id"]).stdout
    assert "unhealthy" in shown

"""Fixtures for end-to-end tests: fake upstreams, and a gw server configured to use them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from e2e.gw_process import GwServer
from fakes.openai_upstream import FakeOpenAI

FAULTS_CONFIG = """
server:
  body_timeout: 1s
# These tests script faults one by one against shared fakes; breakers and account locks
# would reorder them (test_circuit_breaker.py and test_accounts.py have their own gw).
health: {{degraded_after: 1000, unhealthy_after: 1000, error_rate: 1.0, lock_accounts: false}}
providers:
  - {{name: primary, kind: openai_compatible, base_url: "{primary}", api_key: env:GW_TEST_KEY}}
  - {{name: backup, kind: openai_compatible, base_url: "{backup}"}}
  - {{name: mock, kind: mock}}
  - {{name: slowmock, kind: mock, mock: {{chunk_delay: 50ms, words: 400}}}}
models:
  - {{provider: primary, model: gpt-a, input_per_mtok: 1.0, output_per_mtok: 2.0,
     context_window: 128000, capabilities: [tools, vision, json_schema, json_object]}}
  - {{provider: backup, model: gpt-b, input_per_mtok: 0.5, output_per_mtok: 1.0,
     context_window: 128000, capabilities: [tools, vision, json_schema, json_object]}}
routes:
  - name: chat
    targets:
      - {{provider: primary, model: gpt-a, priority: 1}}
      - {{provider: backup, model: gpt-b, priority: 2}}
  - name: strict
    targets:
      - {{provider: primary, model: gpt-a, priority: 1}}
      - {{provider: backup, model: gpt-b, priority: 2}}
  - name: solo
    targets:
      - {{provider: primary, model: gpt-a}}
  - name: mock
    targets:
      - {{provider: mock, model: mock-1}}
  - name: slow
    targets:
      - {{provider: slowmock, model: slow-1}}
policies:
  - name: fast
    match: {{routes: ["*"]}}
    retry: {{max_attempts: 2, initial_backoff: 10ms, max_retry_after: 5s}}
    timeout: {{total: 30s, per_attempt: 1500ms, connect: 2s, first_token: 1500ms, stream_idle: 1500ms}}
  - name: strict
    match: {{routes: ["strict"]}}
    retry: {{max_attempts: 1}}
    fallback: {{on_error_codes: [rate_limited]}}
    timeout: {{total: 30s, per_attempt: 1500ms, first_token: 1500ms, stream_idle: 1500ms}}
"""


@pytest.fixture(scope="module")
def primary() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture(scope="module")
def backup() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture(scope="module")
def gw(
    tmp_path_factory: pytest.TempPathFactory, primary: FakeOpenAI, backup: FakeOpenAI
) -> Iterator[GwServer]:
    """One gw in front of two fake upstreams: route ``chat`` = primary, then backup."""
    home = tmp_path_factory.mktemp("gw")
    config = home / "gw.yaml"
    config.write_text(FAULTS_CONFIG.format(primary=primary.base_url, backup=backup.base_url))
    with GwServer(home / "state", config, env={"GW_TEST_KEY": "sk-test-secret-0123"}) as server:
        yield server


@pytest.fixture(autouse=True)
def _fresh_fakes(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each test scripts its own faults: start from empty queues and request logs."""
    fakes = [
        request.getfixturevalue(name)
        for name in ("primary", "backup")
        if name in request.fixturenames
    ]
    for fake in fakes:
        fake.clear()
    yield
    for fake in fakes:
        fake.clear()

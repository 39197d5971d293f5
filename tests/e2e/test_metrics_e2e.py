"""GET /metrics on a real gw: a scripted workload through the OpenAI SDK (whole and streamed
answers, a failing upstream that is retried and falls back, an unknown model), then the
scrape read back with prometheus-client's parser: values, label sets, and no client string
as a label value. In keys mode only a key with ``usage:read`` may scrape; with
``telemetry.metrics: false`` (applied by a hot reload) the endpoint is 404.

Metrics are counted when a trace is finished, which for a stream is just after its last
byte: scrapes poll (bounded) until the workload is all counted; no timed assertions.
"""

from __future__ import annotations

import platform
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

import gw

from e2e.gw_process import GwServer
from e2e.waiting import wait_until
from fakes.openai_upstream import Behavior, FakeOpenAI

CONFIG = """
providers:
  - {{name: primary, kind: openai_compatible, base_url: "{primary}"}}
  - {{name: backup, kind: openai_compatible, base_url: "{backup}"}}
models:
  - {{provider: primary, model: gpt-a, input_per_mtok: 1.0, output_per_mtok: 2.0}}
  - {{provider: backup, model: gpt-b, input_per_mtok: 0.5, output_per_mtok: 1.0}}
routes:
  - name: chat
    targets:
      - {{provider: primary, model: gpt-a, priority: 1}}
      - {{provider: backup, model: gpt-b, priority: 2}}
policies:
  - name: quick
    match: {{routes: ["*"]}}
    retry: {{max_attempts: 2, initial_backoff: 10ms}}
"""
KEYS_CONFIG = """
providers: [{name: mock, kind: mock}]
routes: [{name: mock, targets: [{provider: mock, model: mock-1}]}]
tenants: [{name: team-a}, {name: team-b}]
auth: {mode: keys, admin_key: env:GW_TEST_ADMIN}
"""
ADMIN_KEY = "metrics-admin-key-0123456789abcdefXYZ"
HI: Any = [{"role": "user", "content": "hi there"}]
CLIENT_STRINGS = ("no-such-model-xyz", "client-rid-secret", "alice-user")

Labels = tuple[tuple[str, str], ...]
Samples = dict[str, dict[Labels, float]]


def parse(text: str) -> Samples:
    found: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def values(samples: dict[Labels, float], *names: str) -> dict[tuple[str, ...], float]:
    return {tuple(dict(labels)[name] for name in names): value for labels, value in samples.items()}


def label_names(samples: dict[Labels, float]) -> set[frozenset[str]]:
    return {frozenset(name for name, _ in labels) for labels in samples}


def scrape(server: GwServer, key: str | None = None) -> httpx.Response:
    headers = {} if key is None else {"authorization": f"Bearer {key}"}
    with server.client() as http:
        return http.get("/metrics", headers=headers)


@pytest.fixture(scope="module")
def metrics_gw(
    tmp_path_factory: pytest.TempPathFactory, primary: FakeOpenAI, backup: FakeOpenAI
) -> Iterator[GwServer]:
    home = tmp_path_factory.mktemp("metrics")
    config = home / "gw.yaml"
    config.write_text(CONFIG.format(primary=primary.base_url, backup=backup.base_url))
    with GwServer(home / "state", config) as server:
        yield server


def run_workload(server: GwServer, primary: FakeOpenAI, backup: FakeOpenAI) -> dict[str, int]:
    """Four requests; the tokens each target reported, by ``provider:kind``."""
    client = openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0)
    extra: Any = {"extra_headers": {"x-request-id": "client-rid-secret"}, "user": "alice-user"}
    primary.enqueue(Behavior(usage=(11, 7)), Behavior(usage=(5, 3)))
    whole = client.chat.completions.create(model="chat", messages=HI, **extra)
    assert whole.choices[0].message.content
    stream = client.chat.completions.create(
        model="chat", messages=HI, stream=True, stream_options={"include_usage": True}, **extra
    )
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    # The first target fails twice (a retry, then a fallback); the second answers.
    primary.enqueue(Behavior(status=500), Behavior(status=500))
    backup.enqueue(Behavior(usage=(13, 2)))
    raw = client.chat.completions.with_raw_response.create(model="chat", messages=HI, **extra)
    assert raw.headers["x-gw-route"] == "backup/gpt-b"
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="no-such-model-xyz", messages=HI, **extra)
    return {"primary:input": 16, "primary:output": 10, "backup:input": 13, "backup:output": 2}


def test_metrics_count_a_scripted_workload(
    metrics_gw: GwServer, primary: FakeOpenAI, backup: FakeOpenAI
) -> None:
    tokens_reported = run_workload(metrics_gw, primary, backup)

    def counted() -> bool:
        samples = parse(scrape(metrics_gw).text).get("gw_requests_total", {})
        return sum(samples.values()) >= 4

    wait_until(counted, "the four requests counted")
    response = scrape(metrics_gw)  # open mode: no key needed
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    for client_string in CLIENT_STRINGS:
        assert client_string not in response.text
    found = parse(response.text)

    requests = values(
        found["gw_requests_total"],
        *("route", "provider", "model", "tenant", "status_class", "error_code"),
    )
    assert requests == {
        ("chat", "primary", "gpt-a", "", "2xx", ""): 2,
        ("chat", "backup", "gpt-b", "", "2xx", ""): 1,
        ("", "", "", "", "4xx", "model_not_found"): 1,
    }
    attempts = values(found["gw_upstream_attempts_total"], "provider", "model", "outcome")
    assert attempts == {
        ("primary", "gpt-a", "answered"): 2,
        ("primary", "gpt-a", "retried"): 1,
        ("primary", "gpt-a", "fell_back"): 1,
        ("backup", "gpt-b", "answered"): 1,
    }
    assert values(found["gw_retries_total"], "route", "provider") == {("chat", "primary"): 1}
    assert values(found["gw_fallbacks_total"], "route") == {("chat",): 1}

    tokens = values(found["gw_tokens_total"], "provider", "kind")
    for key, count in tokens_reported.items():
        assert tokens[tuple(key.split(":"))] == count, key
    cost = values(found["gw_cost_usd_total"], "provider")
    assert cost[("primary",)] == pytest.approx((16 * 1.0 + 10 * 2.0) / 1e6)
    assert cost[("backup",)] == pytest.approx((13 * 0.5 + 2 * 1.0) / 1e6)

    durations = values(found["gw_request_duration_seconds_count"], "route", "provider", "model")
    assert durations == {
        ("chat", "primary", "gpt-a"): 2,
        ("chat", "backup", "gpt-b"): 1,
        ("", "", ""): 1,
    }
    ttft = values(found["gw_time_to_first_token_seconds_count"], "route", "provider", "model")
    assert ttft == {("chat", "primary", "gpt-a"): 1}  # the one stream

    # Two failures are not enough to open a breaker (unhealthy_after: 9).
    breakers = values(found["gw_breaker_state"], "provider", "model")
    assert breakers == {("primary", "gpt-a"): 0, ("backup", "gpt-b"): 0}
    assert found["gw_admission_in_flight"] == {(): 0}
    assert found["gw_admission_shed_total"] == {(): 0}
    dropped = values(found["gw_telemetry_dropped_total"], "queue")
    assert dropped[("traces",)] == dropped[("usage",)] == 0  # other consumers may add queues
    assert found["gw_config_reload_failures_total"] == {(): 0}
    assert found["gw_config_revision"][()] >= 1
    build = {("python", platform.python_version()), ("version", gw.__version__)}
    assert found["gw_build_info"] == {tuple(sorted(build)): 1}

    target = {"route", "provider", "model"}
    label_sets = {
        "gw_requests_total": {*target, "tenant", "status_class", "error_code"},
        "gw_request_duration_seconds_bucket": {*target, "le"},
        "gw_time_to_first_token_seconds_sum": target,
        "gw_tokens_total": {*target, "tenant", "kind"},
        "gw_cost_usd_total": {*target, "tenant"},
        "gw_upstream_attempts_total": {"provider", "model", "outcome"},
        "gw_retries_total": {"route", "provider"},
        "gw_fallbacks_total": {"route"},
        "gw_breaker_state": {"provider", "model"},
        "gw_telemetry_queue_depth": {"queue"},
        "gw_config_reloads_total": set(),
        "gw_build_info": {"version", "python"},
    }
    for name, labels in label_sets.items():
        assert label_names(found[name]) == {frozenset(labels)}, name
    with metrics_gw.client() as http:
        assert "/metrics" in http.get("/openapi.json").json()["paths"]


def test_metrics_off_after_a_reload_is_404(metrics_gw: GwServer) -> None:
    assert metrics_gw.config is not None
    config: Path = metrics_gw.config
    text = config.read_text()
    config.write_text(text + "telemetry: {metrics: false}\n")
    wait_until(lambda: scrape(metrics_gw).status_code == 404, "/metrics gone after the reload")
    assert scrape(metrics_gw).json()["error"]["code"] == "endpoint_not_found"
    config.write_text(text)  # and back: the module's gw serves metrics again
    wait_until(lambda: scrape(metrics_gw).status_code == 200, "/metrics back after the reload")


def test_keys_mode_needs_usage_read(tmp_path: Path) -> None:
    config = tmp_path / "gw.yaml"
    config.write_text(KEYS_CONFIG)
    with GwServer(tmp_path / "state", config, env={"GW_TEST_ADMIN": ADMIN_KEY}) as server:

        def create(*scopes: str) -> dict[str, Any]:
            made: dict[str, Any] = server.cli_json(
                "keys", "create", "--config", str(config), "--tenant", "team-a", *scopes
            )
            return made

        inference_key, reader_key = create(), create("--scopes", "usage:read")
        inference, reader = inference_key["key"], reader_key["key"]
        missing = scrape(server)
        assert missing.status_code == 401
        assert missing.json()["error"]["code"] == "authentication_failed"
        denied = scrape(server, inference)
        assert denied.status_code == 403
        assert denied.json()["error"]["code"] == "permission_denied"
        assert "usage:read" in denied.json()["error"]["message"]
        other = server.cli_json("keys", "create", "--config", str(config), "--tenant", "team-b")[
            "key"
        ]
        body = {"model": "mock", "messages": HI}
        with server.client() as http:
            for key in (inference, other):
                answered = http.post(
                    "/v1/chat/completions", json=body, headers={"authorization": f"Bearer {key}"}
                )
                assert answered.status_code == 200
        everything = scrape(server, ADMIN_KEY)
        assert everything.status_code == 200
        # The refused scrapes were requests too, counted without the key's id.
        requests = values(
            parse(everything.text)["gw_requests_total"], "tenant", "status_class", "error_code"
        )
        assert requests == {
            ("", "4xx", "authentication_failed"): 1,
            ("", "4xx", "permission_denied"): 1,
            ("team-a", "2xx", ""): 1,
            ("team-b", "2xx", ""): 1,
        }
        assert inference_key["id"] not in everything.text
        # A tenant's key sees its own tenant's series and nothing else.
        allowed = scrape(server, reader)
        assert allowed.status_code == 200
        own = parse(allowed.text)
        assert values(own["gw_requests_total"], "tenant", "status_class") == {("team-a", "2xx"): 1}
        assert "team-b" not in allowed.text
        assert "gw_breaker_state" not in allowed.text
        assert {dict(labels)["tenant"] for name in own for labels in own[name]} == {"team-a"}

"""Prometheus metrics from traces and live state: exact label sets, exact values, and label
values bounded by the config (a client's model name, a request id, a key id never appear).

The registry is rendered as Prometheus would scrape it (generate_latest) and read back
with prometheus-client's own parser."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from unit.telemetry.test_usage_recorder import make_row

from gw.config import Snapshot, compile_snapshot, load_config
from gw.config.schema import HealthConfig
from gw.config.units import Duration
from gw.execution.health import HealthBook
from gw.ir.usage import Usage
from gw.record import AttemptOutcome, AttemptRecord, TraceRecord
from gw.server.admission import Admission
from gw.telemetry.hub import QueueStats, TelemetryHub
from gw.telemetry.metrics import GatewayMetrics
from gw.telemetry.state_metrics import StateSources
from gw.telemetry.usage import UsageRecorder
from gw.telemetry.usage_journal import JournalRecovery, UsageJournal

CONFIG = """
providers:
  - {name: primary, kind: openai_compatible, base_url: "http://127.0.0.1:9/v1"}
  - {name: backup, kind: openai_compatible, base_url: "http://127.0.0.1:9/v1"}
models:
  - {provider: primary, model: cat-x, input_per_mtok: 1.0, output_per_mtok: 2.0}
routes:
  - name: chat
    targets: [{provider: primary, model: gpt-a, priority: 1}, {provider: backup, model: gpt-b, priority: 2}]
tenants: [{name: team-a}]
"""
SECRETS = ("client-made-up-model", "private-model", "gone-tenant", "req-", "key-1", "weird_code")

Labels = tuple[tuple[str, str], ...]


class Holder:
    def __init__(self, snapshot: Snapshot) -> None:
        self.current = snapshot

    def get(self) -> Snapshot:
        return self.current


def snapshot(text: str = CONFIG, revision: int = 3) -> Snapshot:
    return compile_snapshot(load_config(text, "t.yaml"), revision=revision, source="t")


def attempt(
    provider: str, model: str, outcome: AttemptOutcome, *, hedge: bool = False
) -> AttemptRecord:
    return AttemptRecord(
        number=1,
        provider=provider,
        model=model,
        account="default",
        started_at=0.0,
        latency_ms=5.0,
        ttft_ms=None,
        outcome=outcome,
        hedge=hedge,
    )


def trace(n: int, **fields: Any) -> TraceRecord:
    base: dict[str, Any] = {
        "request_id": f"req-{n}",
        "time": 0.0,
        "endpoint": "chat",
        "requested_model": "chat",
        "stream": False,
        "status": 200,
        "revision": 3,
        "latency_ms": 100.0,
        "key_id": "key-1",
    }
    return TraceRecord(**{**base, **fields})


def scrape(metrics: GatewayMetrics) -> dict[str, dict[Labels, float]]:
    """Sample name -> {sorted label pairs: value}, as a Prometheus server would read it."""
    text = metrics.render().decode()
    found: dict[str, dict[Labels, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def label_names(samples: dict[Labels, float]) -> set[frozenset[str]]:
    return {frozenset(name for name, _ in labels) for labels in samples}


def values(samples: dict[Labels, float], *names: str) -> dict[tuple[str, ...], float]:
    """``samples`` keyed by the values of ``names``, in that order."""
    return {tuple(dict(labels)[name] for name in names): value for labels, value in samples.items()}


def gateway_metrics(holder: Holder, **sources: Any) -> GatewayMetrics:
    state = StateSources(
        snapshot=holder.get, monotonic=lambda: 1000.0, version="9.9.9", python="3.11.0", **sources
    )
    return GatewayMetrics(holder.get, state)


WORKLOAD = (
    # Answered whole by the first target, for a tenant, with usage and cost.
    trace(
        1,
        route="chat",
        provider="primary",
        model="gpt-a",
        tenant="team-a",
        latency_ms=120.0,
        usage=Usage(
            input_tokens=10,
            output_tokens=5,
            cached_input_tokens=2,
            cache_write_tokens=3,
            reasoning_tokens=1,
        ),
        cost_usd=0.25,
        attempts=(attempt("primary", "gpt-a", "answered"),),
    ),
    # A stream answered by the second target after a retry on the first and a fallback.
    trace(
        2,
        stream=True,
        route="chat",
        provider="backup",
        model="gpt-b",
        latency_ms=2000.0,
        ttft_ms=40.0,
        usage=Usage(input_tokens=7, output_tokens=3),
        cost_usd=0.5,
        attempts=(
            attempt("primary", "gpt-a", "retried"),
            attempt("primary", "gpt-a", "fell_back"),
            attempt("backup", "gpt-b", "answered"),
        ),
    ),
    # An unknown model: 404 before routing; the client's string is no label.
    trace(
        3,
        requested_model="client-made-up-model",
        status=404,
        error_code="model_not_found",
        latency_ms=1.0,
    ),
    # A configured provider addressed directly with a model config does not know.
    trace(
        4,
        requested_model="primary/private-model",
        route="primary/private-model",
        provider="primary",
        model="private-model",
        tenant="gone-tenant",
        attempts=(attempt("primary", "private-model", "answered"),),
    ),
    # Addressed directly, a catalogued model keeps its names; an unknown code is "other".
    trace(
        5,
        route="primary/cat-x",
        provider="primary",
        model="cat-x",
        status=502,
        error_code="weird_code",
        attempts=(attempt("primary", "cat-x", "failed"),),
    ),
    # A hedge won: neither a retry nor a fallback.
    trace(
        6,
        route="chat",
        provider="backup",
        model="gpt-b",
        attempts=(
            attempt("primary", "gpt-a", "hedge_lost"),
            attempt("backup", "gpt-b", "answered", hedge=True),
        ),
    ),
)


def fed(traces: Sequence[TraceRecord] = WORKLOAD) -> tuple[GatewayMetrics, Holder]:
    holder = Holder(snapshot())
    metrics = gateway_metrics(holder, **live_state())
    for one in traces:
        metrics.requests.submit(one)
    return metrics, holder


def test_every_metric_has_exactly_its_contract_labels() -> None:
    metrics, _ = fed()
    found = scrape(metrics)
    target = {"route", "provider", "model"}
    expected = {
        "gw_requests_total": {*target, "tenant", "status_class", "error_code"},
        "gw_request_duration_seconds_bucket": {*target, "le"},
        "gw_request_duration_seconds_sum": target,
        "gw_request_duration_seconds_count": target,
        "gw_time_to_first_token_seconds_bucket": {*target, "le"},
        "gw_time_to_first_token_seconds_sum": target,
        "gw_time_to_first_token_seconds_count": target,
        "gw_tokens_total": {*target, "tenant", "kind"},
        "gw_cost_usd_total": {*target, "tenant"},
        "gw_upstream_attempts_total": {"provider", "model", "outcome"},
        "gw_retries_total": {"route", "provider"},
        "gw_fallbacks_total": {"route"},
        "gw_breaker_state": {"provider", "model"},
        "gw_telemetry_queue_depth": {"queue"},
        "gw_telemetry_dropped_total": {"queue"},
        "gw_admission_in_flight": set(),
        "gw_admission_waiting": set(),
        "gw_admission_shed_total": set(),
        "gw_config_revision": set(),
        "gw_config_reloads_total": set(),
        "gw_config_reload_failures_total": set(),
        "gw_build_info": {"version", "python"},
    }
    for name, labels in expected.items():
        assert label_names(found[name]) == {frozenset(labels)}, name
    # No _created samples, nor metrics beyond the contract's (names are the contract too).
    assert set(found) == set(expected)


def test_requests_counted_by_bounded_labels() -> None:
    found = scrape(fed()[0])
    requests = values(
        found["gw_requests_total"],
        "route",
        "provider",
        "model",
        "tenant",
        "status_class",
        "error_code",
    )
    assert requests == {
        ("chat", "primary", "gpt-a", "team-a", "2xx", ""): 1,
        ("chat", "backup", "gpt-b", "", "2xx", ""): 2,
        ("", "", "", "", "4xx", "model_not_found"): 1,
        ("unknown", "primary", "unknown", "unknown", "2xx", ""): 1,
        ("primary/cat-x", "primary", "cat-x", "", "5xx", "other"): 1,
    }
    text = fed()[0].render().decode()
    for secret in SECRETS:
        assert secret not in text


def test_latency_histograms_and_ttft_for_streams_only() -> None:
    found = scrape(fed()[0])
    count = values(found["gw_request_duration_seconds_count"], "route", "provider", "model")
    assert count[("chat", "backup", "gpt-b")] == 2
    assert count[("", "", "")] == 1
    total = values(found["gw_request_duration_seconds_sum"], "route", "provider", "model")
    assert total[("chat", "primary", "gpt-a")] == pytest.approx(0.12)
    buckets = values(
        found["gw_request_duration_seconds_bucket"], "route", "provider", "model", "le"
    )
    assert buckets[("chat", "backup", "gpt-b", "1.0")] == 1  # the 100 ms hedge
    assert buckets[("chat", "backup", "gpt-b", "2.5")] == 2  # + the 2 s stream
    assert buckets[("chat", "backup", "gpt-b", "+Inf")] == 2
    assert buckets[("chat", "primary", "gpt-a", "0.1")] == 0
    assert buckets[("chat", "primary", "gpt-a", "0.25")] == 1
    ttft = values(found["gw_time_to_first_token_seconds_count"], "route", "provider", "model")
    assert ttft == {("chat", "backup", "gpt-b"): 1}
    ttft_sum = values(found["gw_time_to_first_token_seconds_sum"], "route", "provider", "model")
    assert ttft_sum[("chat", "backup", "gpt-b")] == pytest.approx(0.04)


def test_tokens_cost_attempts_retries_and_fallbacks() -> None:
    found = scrape(fed()[0])
    tokens = values(found["gw_tokens_total"], "route", "provider", "model", "tenant", "kind")
    assert tokens == {
        ("chat", "primary", "gpt-a", "team-a", "input"): 10,
        ("chat", "primary", "gpt-a", "team-a", "output"): 5,
        ("chat", "primary", "gpt-a", "team-a", "cached_input"): 2,
        ("chat", "primary", "gpt-a", "team-a", "cache_write"): 3,
        ("chat", "primary", "gpt-a", "team-a", "reasoning"): 1,
        ("chat", "backup", "gpt-b", "", "input"): 7,
        ("chat", "backup", "gpt-b", "", "output"): 3,
        ("chat", "backup", "gpt-b", "", "cached_input"): 0,
        ("chat", "backup", "gpt-b", "", "cache_write"): 0,
        ("chat", "backup", "gpt-b", "", "reasoning"): 0,
    }
    cost = values(found["gw_cost_usd_total"], "route", "provider", "model", "tenant")
    assert cost == {
        ("chat", "primary", "gpt-a", "team-a"): 0.25,
        ("chat", "backup", "gpt-b", ""): 0.5,
    }
    attempts = values(found["gw_upstream_attempts_total"], "provider", "model", "outcome")
    assert attempts == {
        ("primary", "gpt-a", "answered"): 1,
        ("primary", "gpt-a", "retried"): 1,
        ("primary", "gpt-a", "fell_back"): 1,
        ("backup", "gpt-b", "answered"): 2,
        ("primary", "unknown", "answered"): 1,
        ("primary", "cat-x", "failed"): 1,
        ("primary", "gpt-a", "hedge_lost"): 1,
    }
    assert values(found["gw_retries_total"], "route", "provider") == {("chat", "primary"): 1}
    assert values(found["gw_fallbacks_total"], "route") == {("chat",): 1}


def test_labels_follow_the_running_config_and_metrics_can_be_turned_off() -> None:
    metrics, holder = fed(WORKLOAD[:1])
    # After a reload that drops route chat and tenant team-a, their names are no label.
    holder.current = snapshot(
        CONFIG.replace("name: chat", "name: talk").replace("team-a", "team-b"), revision=4
    )
    metrics.requests.submit(WORKLOAD[0])
    requests = values(scrape(metrics)["gw_requests_total"], "route", "tenant")
    assert requests == {("chat", "team-a"): 1, ("unknown", "unknown"): 1}
    # telemetry.metrics: false stops the counting.
    holder.current = snapshot(CONFIG + "telemetry: {metrics: false}\n", revision=5)
    metrics.requests.submit(WORKLOAD[0])
    assert sum(scrape(metrics)["gw_requests_total"].values()) == 2


class NoStore:
    async def write_traces(self, traces: Sequence[TraceRecord]) -> None: ...

    async def write_usage(self, rows: Sequence[Any]) -> None: ...


class Reloads:
    reloads, failures = 6, 2


def live_state() -> dict[str, Any]:
    """Every state source, with known values: admission, health, queues, reloads."""
    health = HealthBook(
        HealthConfig(unhealthy_after=2, cooldown=Duration(10), max_cooldown=Duration(10))
    )
    for key in ("backup/gpt-b", "primary/private-model", "primary/cat-x"):
        health.record(key, ok=False, now=990.0)
        health.record(key, ok=False, now=990.0)
    admission = Admission(max_concurrency=4, queue_timeout=1.0)
    admission.in_flight, admission.waiting, admission.shed = 3, 2, 5
    hub = TelemetryHub(NoStore())
    hub.recorder.queue.dropped = 7  # the counter the recorder reports
    hub.report_queue("otel", lambda: QueueStats(depth=4, dropped=1))
    return {"health": health, "admission": admission, "reloads": Reloads, "queues": hub.queues}


def test_state_read_at_scrape_time() -> None:
    metrics = gateway_metrics(Holder(snapshot()), **live_state())
    found = scrape(metrics)
    assert found["gw_admission_in_flight"] == {(): 3}
    assert found["gw_admission_waiting"] == {(): 2}
    assert found["gw_admission_shed_total"] == {(): 5}
    # Route targets always (closed until called); catalogued seen targets; never others.
    # Opened at 990 for 10 s: at 1000 the cooldown has lapsed, so half-open.
    assert values(found["gw_breaker_state"], "provider", "model") == {
        ("primary", "gpt-a"): 0,
        ("backup", "gpt-b"): 1,
        ("primary", "cat-x"): 1,
    }
    assert values(found["gw_telemetry_queue_depth"], "queue") == {
        ("traces",): 0,
        ("usage",): 0,
        ("otel",): 4,
    }
    assert values(found["gw_telemetry_dropped_total"], "queue") == {
        ("traces",): 7,
        ("usage",): 0,
        ("otel",): 1,
    }
    assert found["gw_config_revision"] == {(): 3}
    assert found["gw_config_reloads_total"] == {(): 6}
    assert found["gw_config_reload_failures_total"] == {(): 2}
    assert found["gw_build_info"] == {(("python", "3.11.0"), ("version", "9.9.9")): 1}


def test_the_usage_journal_and_what_this_start_recovered(tmp_path: Path) -> None:
    journal = UsageJournal(tmp_path)
    journal.append(make_row(1))
    journal.errors, journal.skipped = 2, 3
    recovery = JournalRecovery(rows=5, without_trace=2, torn_lines=1)
    found = scrape(gateway_metrics(Holder(snapshot()), usage_journal=journal, recovery=recovery))
    assert journal.size > 0
    assert found["gw_usage_journal_bytes"] == {(): journal.size}
    assert found["gw_usage_journal_errors_total"] == {(): 2}
    assert found["gw_usage_journal_skipped_total"] == {(): 3}
    assert values(found["gw_usage_recovered_rows"], "trace") == {("present",): 3, ("missing",): 2}


def test_the_usage_spool() -> None:
    class Down:
        async def write_usage(self, rows: Sequence[Any]) -> None:
            raise ConnectionRefusedError

    recorder = UsageRecorder(Down(), maxsize=1, hard_limit=2)
    # A spool mid-outage, set up without running one.
    recorder.spooled, recorder._failing = 7, "ConnectionRefusedError"
    recorder.submit(make_row(1))
    recorder.submit(make_row(2))
    found = scrape(gateway_metrics(Holder(snapshot()), usage_spool=recorder))
    assert found["gw_usage_spool_active"] == {(): 1}
    assert found["gw_usage_spool_full"] == {(): 1}
    assert found["gw_usage_spooled_total"] == {(): 9}


def test_the_traces_the_last_run_lost() -> None:
    last: dict[str, object] = {"ended": "killed", "routed": None, "unrouted": 2}
    report = {"this_run": {"routed": 0, "unrouted": 0}, "last_run": last}
    metrics = gateway_metrics(Holder(snapshot()), trace_losses=lambda: report)
    found = scrape(metrics)  # a killed run's routed losses are still being counted
    assert values(found["gw_traces_lost_last_run"], "kind") == {("unrouted",): 2}
    last["routed"] = 7
    found = scrape(metrics)
    assert values(found["gw_traces_lost_last_run"], "kind") == {("routed",): 7, ("unrouted",): 2}
    first_run = gateway_metrics(Holder(snapshot()), trace_losses=lambda: {"last_run": None})
    assert "gw_traces_lost_last_run" not in scrape(first_run)

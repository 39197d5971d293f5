"""Prometheus metrics for ``GET /metrics``: one registry per gateway, never the global one.

Two collectors share it: ``RequestMetrics`` (fed every finished trace; the request,
token, cost, attempt, retry and fallback counters and the latency histograms, see
gw/telemetry/request_metrics.py) and ``StateMetrics`` (admission, breakers, telemetry
queues, config reloads and build info, read at scrape time, see
gw/telemetry/state_metrics.py). Every label value is bounded by the config
(gw/telemetry/metric_labels.py). The names and labels are a contract: ``gw top`` and
dashboards read them; README "Metrics" lists them.

prometheus-client takes ~40 ms to import, so only ``gw serve`` imports this module (the
composition root does, when it builds the server), not every CLI command.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, generate_latest

from gw.config.snapshot import Snapshot
from gw.telemetry.request_metrics import RequestMetrics
from gw.telemetry.state_metrics import StateMetrics, StateSources


class GatewayMetrics:
    """The registry, its two collectors, and the rendering ``GET /metrics`` serves.

    Feed ``requests`` every trace (``TelemetryHub.add``); more collectors may be added to
    ``registry``.
    """

    def __init__(self, snapshot: Callable[[], Snapshot], sources: StateSources) -> None:
        self.registry = CollectorRegistry()
        self.requests = RequestMetrics(snapshot)
        self.registry.register(self.requests)
        self.registry.register(StateMetrics(sources))

    def render(self) -> bytes:
        """Every metric, in the Prometheus text format, version 0.0.4."""
        return generate_latest(self.registry)

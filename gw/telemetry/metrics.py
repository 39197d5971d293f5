"""Prometheus metrics for ``GET /metrics``: one registry per gateway, never the global one.

Two collectors share it: ``RequestMetrics`` (fed every finished trace; the request,
token, cost, attempt, retry and fallback counters and the latency histograms, see
gw/telemetry/request_metrics.py) and ``StateMetrics`` (admission, breakers, telemetry
queues, config reloads and build info, read at scrape time, see
gw/telemetry/state_metrics.py). Every label value is bounded by the config
(gw/telemetry/metric_labels.py). The names and labels are a contract: ``gw top`` and
dashboards read them; docs/reference/metrics.md lists them.

prometheus-client itself is imported with the first scrape (gw/telemetry/prometheus.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from gw.config.snapshot import Snapshot
from gw.telemetry import prometheus
from gw.telemetry.request_metrics import RequestMetrics
from gw.telemetry.state_metrics import StateMetrics, StateSources


class GatewayMetrics:
    """The two collectors, their registry (built with the first scrape), and the rendering
    ``GET /metrics`` serves. Feed ``requests`` every trace (``TelemetryHub.add``)."""

    def __init__(self, snapshot: Callable[[], Snapshot], sources: StateSources) -> None:
        self.requests = RequestMetrics(snapshot)
        self._state = StateMetrics(sources)
        self._registry: prometheus.CollectorRegistry | None = None

    def render(self, tenant: str | None = None) -> bytes:
        """Every metric, in the Prometheus text format, version 0.0.4; with ``tenant``,
        only the series labelled with that tenant (what a tenant's own key may see)."""
        if self._registry is None:
            self._registry = prometheus.CollectorRegistry()
            self._registry.register(self.requests)
            self._registry.register(self._state)
        if tenant is None:
            return prometheus.generate_latest(self._registry)
        return prometheus.generate_latest(_TenantView(self._registry, tenant))


class _TenantView:
    """The registry's series whose ``tenant`` label is one tenant; the others, and metrics
    without a tenant label (routes' latency, breakers, queues), are left out."""

    def __init__(self, registry: prometheus.CollectorRegistry, tenant: str) -> None:
        self._registry, self._tenant = registry, tenant

    def collect(self) -> Iterator[prometheus.Metric]:
        for family in self._registry.collect():
            family.samples = [s for s in family.samples if s.labels.get("tenant") == self._tenant]
            if family.samples:
                yield family

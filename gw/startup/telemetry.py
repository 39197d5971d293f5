"""The telemetry consumers the composition root adds to every request's trace: the request
log, OpenTelemetry export and the Prometheus metrics."""

from __future__ import annotations

import platform
import sys
from collections.abc import Callable, Mapping

from gw import __version__
from gw.server.services import ServerServices
from gw.startup.checks import check_otel
from gw.startup.plan import ServePlan, SnapshotHolder
from gw.telemetry.hub import QueueStats, TelemetryHub
from gw.telemetry.metrics import GatewayMetrics
from gw.telemetry.otel import load_otel
from gw.telemetry.otel_attributes import snapshot_addresses
from gw.telemetry.request_log import RequestLog
from gw.telemetry.state_metrics import BreakerSharingCounts, StateSources


def with_request_log(telemetry: TelemetryHub, snapshots: SnapshotHolder) -> TelemetryHub:
    """``telemetry`` plus one stderr line per finished request, as the current snapshot's
    ``telemetry.request_log`` says (gw/telemetry/request_log.py)."""
    request_log = RequestLog(sys.stderr, lambda: snapshots.get().config.telemetry.request_log)
    telemetry.add(request_log, start=request_log.start, stop=request_log.stop)
    telemetry.report_queue(
        "request_log", lambda: QueueStats(request_log.queue_depth, request_log.dropped)
    )
    return telemetry


def add_otel(telemetry: TelemetryHub, plan: ServePlan, snapshots: SnapshotHolder) -> None:
    """OpenTelemetry spans of every request over OTLP/HTTP when ``telemetry.otlp.enabled``
    (gw/telemetry/otel.py); read at start, a reload does not change it. Its queue is
    reported as ``otlp`` (gw_telemetry_queue_depth / gw_telemetry_dropped_total)."""
    otlp = plan.config.telemetry.otlp
    if not otlp.enabled:
        return
    headers = check_otel(plan)
    exporter = load_otel(otlp, headers=headers, server_address=snapshot_addresses(snapshots.get))
    telemetry.add(exporter, start=exporter.start, stop=exporter.stop)
    telemetry.report_queue("otlp", lambda: QueueStats(exporter.queue_depth, exporter.dropped))


def gateway_metrics(
    telemetry: TelemetryHub,
    services: ServerServices,
    *,
    breaker_sharing: BreakerSharingCounts | None = None,
    limits_fallback: Callable[[], Mapping[tuple[str, str], int]] | None = None,
) -> Callable[[str | None], bytes]:
    """Prometheus metrics (gw/telemetry/metrics.py), fed every trace and reading the live
    parts of ``services`` at scrape time; built even while ``telemetry.metrics`` is off,
    so a reload can turn /metrics on."""
    reloader = services.reloader
    sources = StateSources(
        snapshot=services.snapshot,
        monotonic=services.clock.monotonic,
        version=__version__,
        python=platform.python_version(),
        health=services.health,
        admission=services.admission,
        reloads=None if reloader is None else lambda: reloader.status,
        queues=telemetry.queues,
        usage_journal=telemetry.usage.journal,
        usage_spool=telemetry.usage,
        recovery=telemetry.recovery,
        trace_losses=telemetry.losses_report,
        breaker_sharing=breaker_sharing,
        limits_fallback=limits_fallback,
    )
    metrics = GatewayMetrics(services.snapshot, sources)
    telemetry.add(metrics.requests)
    return metrics.render

"""StateMetrics: gauges and counters read from gw's live parts at scrape time.

Nothing here runs per request: ``collect`` reads admission, the health book, the telemetry
queues and the reloader when Prometheus asks.

- ``gw_admission_in_flight``, ``gw_admission_waiting`` (gauges) and
  ``gw_admission_shed_total`` (requests refused 503 ``overloaded`` after queueing).
- ``gw_breaker_state{provider,model}``: 0 closed, 1 half_open, 2 open; for every target
  of the config's routes (closed until called), and every other target the config knows
  (catalog) that health has seen. A directly addressed unknown model is not listed.
- ``gw_telemetry_queue_depth{queue}``, ``gw_telemetry_dropped_total{queue}``: each queue
  named on the telemetry hub (``traces``, ``usage``, ...); a durable queue's dropped are
  the items it lost.
- ``gw_usage_journal_bytes`` (gauge), ``gw_usage_journal_errors_total`` and
  ``gw_usage_journal_skipped_total`` (rows not journaled: full, or after an error);
  ``gw_usage_recovered_rows{trace}`` (gauge): rows this start put back from the journal a
  killed run left, ``trace="missing"`` for those whose trace was lost with it.
- The usage spool (gw/telemetry/usage.py): ``gw_usage_spool_active`` (gauge: 1 while the
  store does not take usage rows and they spool on this gateway), ``gw_usage_spool_full``
  (gauge: 1 while a new row would be lost or not journaled; /readyz is then 503 with a
  shared store) and ``gw_usage_spooled_total`` (rows submitted while the store was
  unreachable); the rows a full spool lost are ``gw_telemetry_dropped_total{queue="usage"}``.
- ``gw_traces_lost_last_run{kind}`` (gauge): traces the last run of gw serve lost
  (gw/startup/trace_losses.py), ``kind="routed"`` of requests in the usage ledger (no
  sample while a killed run's are being counted), ``kind="unrouted"`` of requests refused
  before routing.
- ``gw_limits_fallback_total{kind,policy}``: requests whose tenant limits of a kind
  (budgets, rate_limits, concurrency) were decided without Redis while it was
  unreachable: counted in this gateway alone (``policy="open"``) or refused
  (``"closed"``), per ``state.redis_failure`` (gw/fleet/limits_fallback.py). Only with
  ``state.redis_url``.
- ``gw_config_revision``, ``gw_config_reloads_total`` (revisions applied since start),
  ``gw_config_reload_failures_total`` (edits refused).
- ``gw_build_info{version,python}``: always 1.
- With ``state.redis_url`` (breakers shared by a fleet, gw/fleet/breaker_mirror.py):
  ``gw_fleet_breakers_redis_up`` (gauge: 1 while Redis answers), and the counters
  ``gw_fleet_breakers_redis_errors_total`` (Redis operations that failed),
  ``gw_fleet_breaker_notes_total{direction}`` (``published``, ``received``, ``dropped``:
  not sent while Redis was unreachable) and ``gw_fleet_breaker_local_trials_total``
  (half-open trials decided by this gateway alone while Redis was unreachable).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final, Protocol

from gw.config.snapshot import Snapshot
from gw.execution.health import BreakerState, HealthBook
from gw.telemetry import prometheus
from gw.telemetry.hub import QueueReporter
from gw.telemetry.metric_labels import LabelSpace
from gw.telemetry.usage import UsageRecorder
from gw.telemetry.usage_journal import JournalRecovery, UsageJournal

BREAKER_VALUES: Final[Mapping[BreakerState, int]] = {"closed": 0, "half_open": 1, "open": 2}


class AdmissionCounts(Protocol):
    """The server's admission control (gw/server/admission.py)."""

    @property
    def in_flight(self) -> int: ...
    @property
    def waiting(self) -> int: ...
    @property
    def shed(self) -> int: ...


class ReloadCounts(Protocol):
    """The reloader's status (gw/reload.py)."""

    @property
    def reloads(self) -> int: ...
    @property
    def failures(self) -> int: ...


class BreakerSharingCounts(Protocol):
    """The fleet's breaker mirror (gw/fleet/breaker_mirror.py ``MirrorCounts``)."""

    @property
    def published(self) -> int: ...
    @property
    def received(self) -> int: ...
    @property
    def errors(self) -> int: ...
    @property
    def dropped(self) -> int: ...
    @property
    def local_trials(self) -> int: ...
    @property
    def reachable(self) -> bool: ...


@dataclass(frozen=True, kw_only=True)
class StateSources:
    """Where the values come from; a missing part leaves its metrics without samples."""

    snapshot: Callable[[], Snapshot]
    monotonic: Callable[[], float]  # the health book's clock
    version: str
    python: str
    health: HealthBook | None = None
    admission: AdmissionCounts | None = None
    reloads: Callable[[], ReloadCounts] | None = None
    queues: Mapping[str, QueueReporter] = field(default_factory=dict)
    usage_journal: UsageJournal | None = None
    usage_spool: UsageRecorder | None = None
    recovery: JournalRecovery | None = None
    trace_losses: Callable[[], dict[str, object] | None] | None = None  # TelemetryHub's
    breaker_sharing: BreakerSharingCounts | None = None  # with state.redis_url
    limits_fallback: Callable[[], Mapping[tuple[str, str], int]] | None = None


class StateMetrics:
    """A prometheus-client collector over ``StateSources``; see the module docstring."""

    def __init__(self, sources: StateSources) -> None:
        self._sources = sources

    def collect(self) -> Iterable[prometheus.Metric]:
        yield from self._admission()
        yield self._breakers()
        yield from self._queues()
        yield from self._journal()
        yield from self._spool()
        yield from self._last_run_losses()
        yield from self._limits_fallback()
        yield from self._config()
        yield from self._breaker_sharing()
        build = prometheus.GaugeMetricFamily(
            "gw_build_info", "Which gw runs.", labels=("version", "python")
        )
        build.add_metric((self._sources.version, self._sources.python), 1)
        yield build

    def _admission(self) -> Iterable[prometheus.Metric]:
        admission = self._sources.admission
        in_flight = prometheus.GaugeMetricFamily(
            "gw_admission_in_flight", "Requests holding a slot."
        )
        waiting = prometheus.GaugeMetricFamily(
            "gw_admission_waiting", "Requests queued for a slot."
        )
        shed = prometheus.CounterMetricFamily(
            "gw_admission_shed_total", "Requests refused after queueing (503 overloaded)."
        )
        if admission is not None:
            in_flight.add_metric((), admission.in_flight)
            waiting.add_metric((), admission.waiting)
            shed.add_metric((), admission.shed)
        return in_flight, waiting, shed

    def _breakers(self) -> prometheus.Metric:
        family = prometheus.GaugeMetricFamily(
            "gw_breaker_state",
            "Circuit breaker per target: 0 closed, 1 half_open, 2 open.",
            labels=("provider", "model"),
        )
        snapshot = self._sources.snapshot()
        states: dict[tuple[str, str], BreakerState] = {
            (target.provider, target.model): "closed"
            for route in snapshot.routes.values()
            for target in route.targets
        }
        health = self._sources.health
        if health is not None:
            space = LabelSpace(snapshot)
            for seen in health.states(now=self._sources.monotonic()):
                provider, _, model = seen.key.partition("/")
                if space.target(provider, model) == (provider, model):
                    states[(provider, model)] = seen.breaker
        for labels, state in states.items():
            family.add_metric(labels, BREAKER_VALUES[state])
        return family

    def _queues(self) -> Iterable[prometheus.Metric]:
        depth = prometheus.GaugeMetricFamily(
            "gw_telemetry_queue_depth", "Items waiting in a telemetry queue.", labels=("queue",)
        )
        dropped = prometheus.CounterMetricFamily(
            "gw_telemetry_dropped_total",
            "Items a telemetry queue let go (traces under pressure; usage rows lost).",
            labels=("queue",),
        )
        for name, report in list(self._sources.queues.items()):
            stats = report()
            depth.add_metric((name,), stats.depth)
            dropped.add_metric((name,), stats.dropped)
        return depth, dropped

    def _journal(self) -> Iterable[prometheus.Metric]:
        journal, recovery = self._sources.usage_journal, self._sources.recovery
        if journal is None or recovery is None:
            return
        size = prometheus.GaugeMetricFamily(
            "gw_usage_journal_bytes", "Bytes in the usage journal's live segments."
        )
        size.add_metric((), journal.size)
        errors = prometheus.CounterMetricFamily(
            "gw_usage_journal_errors_total", "Usage journal writes or opens that failed."
        )
        errors.add_metric((), journal.errors)
        skipped = prometheus.CounterMetricFamily(
            "gw_usage_journal_skipped_total",
            "Usage rows not journaled (journal full, or after an error): not crash-safe.",
        )
        skipped.add_metric((), journal.skipped)
        recovered = prometheus.GaugeMetricFamily(
            "gw_usage_recovered_rows",
            "Usage rows this start put back from the journal a killed run left.",
            labels=("trace",),
        )
        recovered.add_metric(("present",), recovery.rows - recovery.without_trace)
        recovered.add_metric(("missing",), recovery.without_trace)
        yield from (size, errors, skipped, recovered)

    def _spool(self) -> Iterable[prometheus.Metric]:
        usage = self._sources.usage_spool
        if usage is None:
            return
        active = prometheus.GaugeMetricFamily(
            "gw_usage_spool_active",
            "1 while the store takes no usage rows and they spool on this gateway.",
        )
        active.add_metric((), int(usage.failing is not None))
        full = prometheus.GaugeMetricFamily(
            "gw_usage_spool_full", "1 while a new usage row would be lost or not journaled."
        )
        full.add_metric((), int(usage.spool_full))
        spooled = prometheus.CounterMetricFamily(
            "gw_usage_spooled_total", "Usage rows submitted while the store was unreachable."
        )
        spooled.add_metric((), usage.spooled)
        yield from (active, full, spooled)

    def _last_run_losses(self) -> Iterable[prometheus.Metric]:
        report = self._sources.trace_losses() if self._sources.trace_losses else None
        last = report.get("last_run") if report else None
        if not isinstance(last, dict):
            return
        lost = prometheus.GaugeMetricFamily(
            "gw_traces_lost_last_run",
            "Traces the last run of gw serve lost: routed (of requests in the usage ledger)"
            " or unrouted (refused before routing).",
            labels=("kind",),
        )
        for kind in ("routed", "unrouted"):
            if isinstance(count := last.get(kind), int):
                lost.add_metric((kind,), count)
        yield lost

    def _limits_fallback(self) -> Iterable[prometheus.Metric]:
        if self._sources.limits_fallback is None:
            return
        family = prometheus.CounterMetricFamily(
            "gw_limits_fallback_total",
            "Requests whose tenant limits were decided while Redis was unreachable: counted "
            "in this gateway alone (open) or refused (closed).",
            labels=("kind", "policy"),
        )
        for (kind, policy), count in sorted(self._sources.limits_fallback().items()):
            family.add_metric((kind, policy), count)
        yield family

    def _config(self) -> Iterable[prometheus.Metric]:
        revision = prometheus.GaugeMetricFamily(
            "gw_config_revision", "The config revision running."
        )
        revision.add_metric((), self._sources.snapshot().revision)
        reloads = prometheus.CounterMetricFamily(
            "gw_config_reloads_total", "Config revisions applied since start."
        )
        failures = prometheus.CounterMetricFamily(
            "gw_config_reload_failures_total", "Config edits refused since start."
        )
        if self._sources.reloads is not None:
            status = self._sources.reloads()
            reloads.add_metric((), status.reloads)
            failures.add_metric((), status.failures)
        return revision, reloads, failures

    def _breaker_sharing(self) -> Iterable[prometheus.Metric]:
        counts = self._sources.breaker_sharing
        if counts is None:
            return
        up = prometheus.GaugeMetricFamily(
            "gw_fleet_breakers_redis_up", "1 while the Redis that shares breakers answers."
        )
        up.add_metric((), int(counts.reachable))
        errors = prometheus.CounterMetricFamily(
            "gw_fleet_breakers_redis_errors_total",
            "Redis operations for shared breakers that failed (breakers stayed local).",
        )
        errors.add_metric((), counts.errors)
        notes = prometheus.CounterMetricFamily(
            "gw_fleet_breaker_notes_total",
            "Breaker openings and closes published to, received from, or not sent to the fleet.",
            labels=("direction",),
        )
        notes.add_metric(("published",), counts.published)
        notes.add_metric(("received",), counts.received)
        notes.add_metric(("dropped",), counts.dropped)
        local = prometheus.CounterMetricFamily(
            "gw_fleet_breaker_local_trials_total",
            "Half-open trials decided by this gateway alone while Redis was unreachable.",
        )
        local.add_metric((), counts.local_trials)
        yield from (up, errors, notes, local)

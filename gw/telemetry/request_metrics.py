"""RequestMetrics: Prometheus counters and histograms fed by every finished trace.

A ``TraceSink`` (gw/telemetry/hub.py) and a prometheus-client collector in one. Strategy:
``submit`` runs on the request path, so it only adds to plain ints and floats in dicts
keyed by label tuples (a histogram is one bucket count bumped after a bisect); the metric
families are built at scrape time in ``collect``. No locks: both run on the event loop.
Label values are bounded by ``LabelSpace`` (gw/telemetry/metric_labels.py), so the dicts
are bounded by the config, whatever clients send.

Semantics (the contract ``gw top`` and dashboards read):

- ``gw_requests_total{route,provider,model,tenant,status_class,error_code}``: every traced
  request (every /v1 request, and every refused request on any endpoint).
- ``gw_request_duration_seconds{route,provider,model}``: whole request latency, as traced
  (a stream's ends with its last byte).
- ``gw_time_to_first_token_seconds{route,provider,model}``: streams whose first token
  arrived.
- ``gw_tokens_total{route,provider,model,tenant,kind}``: usage as the trace has it
  (provider-reported or estimated); ``input`` counts every prompt token, of which
  ``cached_input`` were read from and ``cache_write`` written to a prompt cache;
  ``reasoning`` is part of ``output``.
- ``gw_cost_usd_total{route,provider,model,tenant}``: the trace's cost (catalog prices).
- ``gw_upstream_attempts_total{provider,model,outcome}``: every upstream call.
- ``gw_retries_total{route,provider}``: calls to a target beyond its first within one
  request (a retry, or the same target through its next account); hedges not counted.
- ``gw_fallbacks_total{route}``: requests that moved on to another target at least once
  (an attempt ended ``fell_back``), whether or not that target then answered.
- ``gw_cache_requests_total{route,outcome}``: requests of a policy with the response cache,
  by ``hit``, ``miss`` or ``bypass`` (gw/execution/cache_use.py); a hit calls no upstream.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import accumulate
from typing import Final, TypeVar

from gw.config.snapshot import Snapshot
from gw.ir.usage import Usage
from gw.record import AttemptRecord, TraceRecord
from gw.telemetry import prometheus
from gw.telemetry.metric_labels import (
    LabelSpace,
    error_label,
    outcome_label,
    status_class,
)

DURATION_BOUNDS: Final = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10, 30, 60, 120, 300)
TTFT_BOUNDS: Final = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10, 30, 60)
TOKEN_KINDS: Final = ("input", "output", "cached_input", "cache_write", "reasoning")

TARGET_LABELS: Final = ("route", "provider", "model")
SERIES_LABELS: Final = (*TARGET_LABELS, "tenant")
Key = TypeVar("Key")


class _Histogram:
    """Per-bucket (not cumulative) counts, the last one +Inf, and the sum."""

    __slots__ = ("counts", "total")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.counts = [0] * (len(bounds) + 1)
        self.total = 0.0

    def observe(self, bounds: Sequence[float], value: float) -> None:
        self.counts[bisect_left(bounds, value)] += 1  # le is inclusive: value == bound fits
        self.total += value


class _Target:
    """What is kept per (route, provider, model)."""

    __slots__ = ("duration", "ttft")

    def __init__(self) -> None:
        self.duration = _Histogram(DURATION_BOUNDS)
        self.ttft: _Histogram | None = None  # until a stream reports its first token


class _Series:
    """What is kept per (route, provider, model, tenant)."""

    __slots__ = ("cost", "requests", "target", "tokens")

    def __init__(self, target: _Target) -> None:
        self.target = target
        self.requests: dict[tuple[str, str], int] = {}  # (status_class, error_code) -> n
        self.tokens: list[int] | None = None  # by TOKEN_KINDS, once usage was reported
        self.cost: float | None = None  # once a cost was known

    def add_usage(self, usage: Usage) -> None:
        tokens = self.tokens
        if tokens is None:
            tokens = self.tokens = [0] * len(TOKEN_KINDS)
        tokens[0] += usage.input_tokens
        tokens[1] += usage.output_tokens
        tokens[2] += usage.cached_input_tokens
        tokens[3] += usage.cache_write_tokens
        tokens[4] += usage.reasoning_tokens


def _bump(counts: dict[Key, int], key: Key) -> None:
    counts[key] = counts.get(key, 0) + 1


class RequestMetrics:
    """Feed it traces (``submit``); register it in a ``CollectorRegistry`` to expose them.

    ``snapshot`` returns the running config, whose names bound the label values; while its
    ``telemetry.metrics`` is false, traces are not counted.
    """

    def __init__(self, snapshot: Callable[[], Snapshot]) -> None:
        self._snapshot = snapshot
        self._space: tuple[Snapshot, LabelSpace] | None = None
        self._targets: dict[tuple[str, str, str], _Target] = {}
        self._series: dict[tuple[str, str, str, str], _Series] = {}
        self._attempts: dict[tuple[str, str, str], int] = {}
        self._retries: dict[tuple[str, str], int] = {}
        self._fallbacks: dict[str, int] = {}
        self._cache: dict[tuple[str, str], int] = {}

    def submit(self, trace: TraceRecord) -> None:
        snapshot = self._snapshot()
        if not snapshot.config.telemetry.metrics:
            return
        space = self._labels(snapshot)
        route = space.route(trace.route)
        provider, model = space.target(trace.provider, trace.model)
        key = (route, provider, model, space.tenant(trace.tenant))
        series = self._series.get(key) or self._new_series(key)
        _bump(series.requests, (status_class(trace.status), error_label(trace.error_code)))
        target = series.target
        target.duration.observe(DURATION_BOUNDS, trace.latency_ms / 1000)
        if trace.stream and trace.ttft_ms is not None:
            if target.ttft is None:
                target.ttft = _Histogram(TTFT_BOUNDS)
            target.ttft.observe(TTFT_BOUNDS, trace.ttft_ms / 1000)
        if trace.usage is not None:
            series.add_usage(trace.usage)
        if trace.cost_usd is not None and trace.cost_usd >= 0:
            series.cost = (series.cost or 0.0) + trace.cost_usd
        if trace.attempts:
            self._count_attempts(trace.attempts, space, route)
        if trace.cache is not None:
            _bump(self._cache, (route, trace.cache))

    def _labels(self, snapshot: Snapshot) -> LabelSpace:
        """The snapshot's label space, built again only when the config changed."""
        if self._space is None or self._space[0] is not snapshot:
            self._space = (snapshot, LabelSpace(snapshot))
        return self._space[1]

    def _new_series(self, key: tuple[str, str, str, str]) -> _Series:
        target_key = key[:3]
        target = self._targets.get(target_key)
        if target is None:
            target = self._targets[target_key] = _Target()
        series = self._series[key] = _Series(target)
        return series

    def _count_attempts(
        self, attempts: Sequence[AttemptRecord], space: LabelSpace, route: str
    ) -> None:
        called: set[tuple[str, str]] = set()
        fell_back = False
        for attempt in attempts:
            provider, model = space.target(attempt.provider, attempt.model)
            _bump(self._attempts, (provider, model, outcome_label(attempt.outcome)))
            fell_back = fell_back or attempt.outcome == "fell_back"
            if attempt.hedge:
                continue
            called_on = (attempt.provider, attempt.model)
            if called_on in called:
                _bump(self._retries, (route, provider))
            else:
                called.add(called_on)
        if fell_back:
            _bump(self._fallbacks, route)

    def collect(self) -> Iterable[prometheus.Metric]:
        """The metric families as of now (prometheus-client's collector interface)."""
        yield self._requests()
        yield _histogram(
            "gw_request_duration_seconds",
            "Whole request latency, in seconds.",
            DURATION_BOUNDS,
            ((labels, target.duration) for labels, target in list(self._targets.items())),
        )
        yield _histogram(
            "gw_time_to_first_token_seconds",
            "Time to the first token of streamed answers, in seconds.",
            TTFT_BOUNDS,
            ((k, t.ttft) for k, t in list(self._targets.items()) if t.ttft is not None),
        )
        yield from self._usage()
        yield _counter(
            "gw_upstream_attempts_total",
            "Calls to upstream targets, by how each ended.",
            ("provider", "model", "outcome"),
            list(self._attempts.items()),
        )
        yield _counter(
            "gw_retries_total",
            "Calls to a target beyond its first within one request.",
            ("route", "provider"),
            list(self._retries.items()),
        )
        yield _counter(
            "gw_fallbacks_total",
            "Requests that moved on to another target at least once.",
            ("route",),
            [((route,), n) for route, n in list(self._fallbacks.items())],
        )
        yield _counter(
            "gw_cache_requests_total",
            "Requests of a policy with the response cache, by hit, miss or bypass.",
            ("route", "outcome"),
            list(self._cache.items()),
        )

    def _requests(self) -> prometheus.Metric:
        family = prometheus.CounterMetricFamily(
            "gw_requests_total",
            "Requests, by where they went and how they ended.",
            labels=(*SERIES_LABELS, "status_class", "error_code"),
        )
        for key, series in list(self._series.items()):
            for outcome, count in list(series.requests.items()):
                family.add_metric((*key, *outcome), count)
        return family

    def _usage(self) -> Iterator[prometheus.Metric]:
        tokens = prometheus.CounterMetricFamily(
            "gw_tokens_total",
            "Tokens, as providers reported them (or gw estimated).",
            labels=(*SERIES_LABELS, "kind"),
        )
        cost = prometheus.CounterMetricFamily(
            "gw_cost_usd_total", "Cost in US dollars, at catalog prices.", labels=SERIES_LABELS
        )
        for key, series in list(self._series.items()):
            if series.tokens is not None:
                for kind, count in zip(TOKEN_KINDS, series.tokens, strict=True):
                    tokens.add_metric((*key, kind), count)
            if series.cost is not None:
                cost.add_metric(key, series.cost)
        yield tokens
        yield cost


def _counter(
    name: str, doc: str, labels: Sequence[str], counts: Iterable[tuple[Sequence[str], int]]
) -> prometheus.Metric:
    family = prometheus.CounterMetricFamily(name, doc, labels=labels)
    for key, count in counts:
        family.add_metric(key, count)
    return family


def _le(bound: float) -> str:
    """A bucket's ``le`` as prometheus-client writes it: ``0.5``, ``1.0``, ``300.0``."""
    return repr(float(bound))


def _histogram(
    name: str,
    doc: str,
    bounds: Sequence[float],
    series: Iterable[tuple[tuple[str, str, str], _Histogram]],
) -> prometheus.Metric:
    family = prometheus.HistogramMetricFamily(name, doc, labels=TARGET_LABELS)
    edges = [*(_le(bound) for bound in bounds), "+Inf"]
    for labels, histogram in series:
        buckets = list(zip(edges, accumulate(histogram.counts), strict=True))
        family.add_metric(labels, buckets, sum_value=histogram.total)
    return family

"""What ``gw top`` shows, computed from two scrapes of ``GET /metrics``. Pure: text in,
numbers out, no clock and no network (the caller measures ``elapsed_s``).

Strategy: every rate is a counter's increase between the two scrapes divided by the
seconds between them (a counter that went down was reset by a restart: its increase is its
new value, as Prometheus' ``rate`` does). Latency quantiles interpolate linearly inside the
bucket where the rank falls, over the *increase* of each histogram bucket, the way
Prometheus' ``histogram_quantile`` does; a rank in the ``+Inf`` bucket answers the highest
finite bound. The metric names and labels are gw's contract (gw/telemetry/metrics.py).

``gw top --json`` prints a ``TopFrame`` (times in milliseconds, rates per second, cost per
hour; a quantile is null when no request finished in the interval)::

    {"interval_s", "revision", "version", "in_flight", "waiting",
     "requests", "rps", "errors", "error_rate", "errors_by_code": {code: count},
     "latency_ms": {"p50", "p90", "p99"}, "ttft_ms": {"p50", "p90", "p99"},
     "input_tokens_per_s", "output_tokens_per_s", "cost_usd_per_hour",
     "total_requests", "total_cost_usd",
     "routes": [{"route", "requests", "rps", "p50_ms", "p99_ms", "errors",
                 "tokens_per_s", "cost_usd_per_hour"}],
     "providers": [{"provider", ..., "attempts", "failed_attempts"}],
     "breakers": [{"provider", "model", "state"}]}
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import msgspec
from prometheus_client.parser import text_string_to_metric_families

Labels = Mapping[str, str]
SeriesKey = tuple[tuple[str, str], ...]

REQUESTS: Final = "gw_requests_total"
DURATION: Final = "gw_request_duration_seconds_bucket"
TTFT: Final = "gw_time_to_first_token_seconds_bucket"
TOKENS: Final = "gw_tokens_total"
COST: Final = "gw_cost_usd_total"
ATTEMPTS: Final = "gw_upstream_attempts_total"
BREAKERS: Final = "gw_breaker_state"
BREAKER_STATES: Final = {0: "closed", 1: "half_open", 2: "open"}
COUNTED_TOKENS: Final = ("input", "output")  # the other kinds are parts of these two
GOOD_OUTCOMES: Final = frozenset({"answered", "hedge_lost", "aborted"})
"""Attempt outcomes that are not an upstream's failure (a lost hedge was cancelled by gw, an
aborted attempt by the client)."""


class Scrape:
    """One parsed ``/metrics`` answer: every sample by its sample name (``..._bucket``,
    ``..._total``), each a series key (sorted label pairs) and its value."""

    def __init__(self, samples: Mapping[str, Mapping[SeriesKey, float]]) -> None:
        self.samples = samples

    @classmethod
    def parse(cls, text: str) -> Scrape:
        """Raises ``ValueError`` when ``text`` is not the Prometheus text format."""
        samples: dict[str, dict[SeriesKey, float]] = defaultdict(dict)
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                samples[sample.name][tuple(sorted(sample.labels.items()))] = sample.value
        return cls(dict(samples))

    def series(self, name: str) -> Mapping[SeriesKey, float]:
        return self.samples.get(name, {})

    def gauge(self, name: str) -> float | None:
        values = list(self.series(name).values())
        return values[0] if values else None


class Quantiles(msgspec.Struct, frozen=True, kw_only=True):
    p50: float | None
    p90: float | None
    p99: float | None


class RouteRow(msgspec.Struct, frozen=True, kw_only=True):
    route: str  # "" for requests routing never decided (an unknown model, a refusal)
    requests: int
    rps: float
    p50_ms: float | None
    p99_ms: float | None
    errors: int
    tokens_per_s: float
    cost_usd_per_hour: float


class ProviderRow(msgspec.Struct, frozen=True, kw_only=True):
    provider: str
    requests: int  # requests this provider answered, or was the last one tried for
    rps: float
    p50_ms: float | None
    p99_ms: float | None
    errors: int
    attempts: int  # upstream calls, retries and fallbacks included
    failed_attempts: int
    tokens_per_s: float
    cost_usd_per_hour: float


class Breaker(msgspec.Struct, frozen=True, kw_only=True):
    provider: str
    model: str
    state: str  # closed | half_open | open


class TopFrame(msgspec.Struct, frozen=True, kw_only=True):
    """One frame of ``gw top`` (shape in the module docstring)."""

    interval_s: float
    revision: int | None
    version: str | None
    in_flight: int
    waiting: int
    requests: int
    rps: float
    errors: int
    error_rate: float | None
    errors_by_code: dict[str, int]
    latency_ms: Quantiles
    ttft_ms: Quantiles
    input_tokens_per_s: float
    output_tokens_per_s: float
    cost_usd_per_hour: float
    total_requests: int
    total_cost_usd: float
    routes: list[RouteRow]
    providers: list[ProviderRow]
    breakers: list[Breaker]


class Delta:
    """The increase of every series of one sample name between two scrapes."""

    def __init__(self, before: Scrape, after: Scrape, name: str) -> None:
        old = before.series(name)
        self.items = [
            (dict(key), increase(old.get(key), value)) for key, value in after.series(name).items()
        ]

    def total(self, keep: Callable[[Labels], bool] = lambda _: True) -> float:
        return sum(value for labels, value in self.items if keep(labels))

    def by(self, label: str, keep: Callable[[Labels], bool] = lambda _: True) -> dict[str, float]:
        sums: dict[str, float] = defaultdict(float)
        for labels, value in self.items:
            if keep(labels):
                sums[labels.get(label, "")] += value
        return dict(sums)


def restarted(before: Scrape, after: Scrape) -> bool:
    """Whether the server restarted between the scrapes: a request counter went down.
    Decided once for the whole scrape, so that a histogram's buckets never mix reset and
    not-reset counts (which would make its cumulative counts non-monotonic)."""
    old = before.series(REQUESTS)
    return any(value < old.get(key, 0.0) for key, value in after.series(REQUESTS).items()) or (
        sum(after.series(REQUESTS).values()) < sum(old.values())
    )


def increase(before: float | None, after: float) -> float:
    """A counter's increase; one that went down was reset (a restart) and counts from 0."""
    if before is None or after < before:
        return after
    return after - before


def quantile(q: float, buckets: Iterable[tuple[float, float]]) -> float | None:
    """``histogram_quantile(q, ...)`` over (upper bound, cumulative count) pairs, one per
    ``le`` (``math.inf`` included); None when no observation fell in the interval."""
    ordered = sorted(buckets)
    if not ordered or ordered[-1][1] <= 0:
        return None
    rank = q * ordered[-1][1]
    lower, below = 0.0, 0.0
    for bound, count in ordered:
        if count >= rank:
            if math.isinf(bound):
                return lower  # beyond the highest finite bound: all that can be said
            if count == below:
                return bound
            return lower + (bound - lower) * (rank - below) / (count - below)
        lower, below = bound, count
    return lower  # pragma: no cover - the last bucket holds every observation


def bucket_increases(
    delta: Delta, keep: Callable[[Labels], bool] = lambda _: True
) -> list[tuple[float, float]]:
    """Cumulative bucket increases summed over the series ``keep`` selects."""
    sums: dict[float, float] = defaultdict(float)
    for labels, value in delta.items:
        if keep(labels):
            sums[float(labels["le"])] += value  # float("+Inf") is math.inf
    return list(sums.items())


def quantiles_ms(delta: Delta, keep: Callable[[Labels], bool] = lambda _: True) -> Quantiles:
    buckets = bucket_increases(delta, keep)
    p50, p90, p99 = (quantile(q, buckets) for q in (0.5, 0.9, 0.99))
    return Quantiles(p50=_ms(p50), p90=_ms(p90), p99=_ms(p99))


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 3)


def _is(label: str, value: str) -> Callable[[Labels], bool]:
    return lambda labels: labels.get(label) == value


def _failed(labels: Labels) -> bool:
    return bool(labels.get("error_code"))


def _counted_tokens(labels: Labels) -> bool:
    return labels.get("kind") in COUNTED_TOKENS


class _Deltas:
    def __init__(self, before: Scrape, after: Scrape) -> None:
        if restarted(before, after):  # every series starts from zero, not each on its own
            before = Scrape({})
        self.requests = Delta(before, after, REQUESTS)
        self.duration = Delta(before, after, DURATION)
        self.ttft = Delta(before, after, TTFT)
        self.tokens = Delta(before, after, TOKENS)
        self.cost = Delta(before, after, COST)
        self.attempts = Delta(before, after, ATTEMPTS)


def compute_frame(before: Scrape, after: Scrape, elapsed_s: float) -> TopFrame:
    """The frame between two scrapes taken ``elapsed_s`` seconds apart."""
    per_s = 1 / elapsed_s if elapsed_s > 0 else 0.0
    deltas = _Deltas(before, after)
    requests = round(deltas.requests.total())
    errors = round(deltas.requests.total(_failed))
    by_code = deltas.requests.by("error_code", _failed)
    tokens = deltas.tokens.by("kind")
    build = next(iter(after.series("gw_build_info")), None)
    revision = after.gauge("gw_config_revision")
    return TopFrame(
        interval_s=round(elapsed_s, 3),
        revision=None if revision is None else int(revision),
        version=None if build is None else dict(build).get("version"),
        in_flight=int(after.gauge("gw_admission_in_flight") or 0),
        waiting=int(after.gauge("gw_admission_waiting") or 0),
        requests=requests,
        rps=_rate(requests * per_s),
        errors=errors,
        error_rate=errors / requests if requests else None,
        errors_by_code={code: round(n) for code, n in sorted(by_code.items()) if n > 0},
        latency_ms=quantiles_ms(deltas.duration),
        ttft_ms=quantiles_ms(deltas.ttft),
        input_tokens_per_s=_rate(tokens.get("input", 0.0) * per_s),
        output_tokens_per_s=_rate(tokens.get("output", 0.0) * per_s),
        cost_usd_per_hour=round(deltas.cost.total() * per_s * 3600, 6),
        total_requests=round(sum(after.series(REQUESTS).values())),
        total_cost_usd=sum(after.series(COST).values()),
        routes=_route_rows(deltas, after, per_s),
        providers=_provider_rows(deltas, after, per_s),
        breakers=_breakers(after),
    )


def _names(after: Scrape, label: str, *sample_names: str) -> set[str]:
    return {dict(key).get(label, "") for name in sample_names for key in after.series(name)}


def _both(
    first: Callable[[Labels], bool], second: Callable[[Labels], bool]
) -> Callable[[Labels], bool]:
    return lambda labels: first(labels) and second(labels)


def _group(deltas: _Deltas, mine: Callable[[Labels], bool], per_s: float) -> dict[str, Any]:
    """The columns routes and providers share, for the series ``mine`` selects."""
    requests = round(deltas.requests.total(mine))
    latency = quantiles_ms(deltas.duration, mine)
    return {
        "requests": requests,
        "rps": _rate(requests * per_s),
        "p50_ms": latency.p50,
        "p99_ms": latency.p99,
        "errors": round(deltas.requests.total(_both(mine, _failed))),
        "tokens_per_s": _rate(deltas.tokens.total(_both(mine, _counted_tokens)) * per_s),
        "cost_usd_per_hour": round(deltas.cost.total(mine) * per_s * 3600, 6),
    }


def _rate(value: float) -> float:
    return round(value, 3)


def _route_rows(deltas: _Deltas, after: Scrape, per_s: float) -> list[RouteRow]:
    rows = [
        RouteRow(route=route, **_group(deltas, _is("route", route), per_s))
        for route in _names(after, "route", REQUESTS)
    ]
    return sorted(rows, key=lambda row: (-row.requests, row.route))


def _provider_rows(deltas: _Deltas, after: Scrape, per_s: float) -> list[ProviderRow]:
    rows = []
    for provider in _names(after, "provider", REQUESTS, ATTEMPTS) - {""}:
        mine = _is("provider", provider)
        failed = _both(mine, lambda labels: labels.get("outcome") not in GOOD_OUTCOMES)
        rows.append(
            ProviderRow(
                provider=provider,
                attempts=round(deltas.attempts.total(mine)),
                failed_attempts=round(deltas.attempts.total(failed)),
                **_group(deltas, mine, per_s),
            )
        )
    return sorted(rows, key=lambda row: (-row.requests, row.provider))


def _breakers(after: Scrape) -> list[Breaker]:
    breakers = [
        Breaker(
            provider=dict(key).get("provider", ""),
            model=dict(key).get("model", ""),
            state=BREAKER_STATES.get(int(value), "unknown"),
        )
        for key, value in after.series(BREAKERS).items()
    ]
    return sorted(breakers, key=lambda b: (b.provider, b.model))

"""Shape a run's results into tables (rows of strings) and JSON; judge the issue's goals.

Pure: values in, values out, so the shaping is tested without running anything. Added
latency is a gateway's figure minus the direct figure at the same concurrency; without a
direct run there is nothing to subtract and it reads ``n/a``. Rows of a target that had
errors (non-2xx answers, socket errors, broken streams) are flagged, never dropped.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from bench.results import (
    CACHE_TARGET_NAMES,
    TARGET_NAMES,
    Goal,
    Interleaved,
    LoadStep,
    MicroResult,
    RunInfo,
    Status,
    TargetName,
    TargetResult,
)

NA = "n/a"
ADDED_P50_LIMIT_MS = 1.0
RPS_FACTOR = 10.0
CPU_PER_STREAM_LIMIT_MS = 2.0
START_LIMIT_S = 1.0
IDLE_RSS_LIMIT_MB = 80.0
ROUTING_LIMIT_US = 20.0
ROUTING_GOAL_MICRO = "routing decision, 10 targets, priority"
CACHE_MISS_LIMIT_MS = 0.1  # at most, over gw with the cache off (issue 28)
CACHE_HIT_LIMIT_MS = 1.0  # under, over direct (issue 28: "well under a millisecond")

Results = Mapping[TargetName, TargetResult]

LOAD_TITLE = "Non-streaming (wrk), latency in ms; + is added over direct"
LOAD_COLUMNS = ("target", "conc", "req/s", "p50", "p90", "p99", "+p50", "+p99", "CPU ms/req",
                "errors")  # fmt: skip
STREAM_TITLE = "Streaming (22 chunks, 1 ms apart), times in ms"
STREAM_COLUMNS = ("target", "ok", "conc", "TTFT p50", "TTFT p99", "+TTFT p50", "total p50",
                  "total p99", "chunks", "CPU ms/stream", "errors")  # fmt: skip
INTERLEAVED_TITLE = (
    "Interleaved rounds at c=1 (p50 in ms; + is the median of the rounds' differences)"
)
INTERLEAVED_COLUMNS = ("target", "p50 by round", "median", "+p50 vs direct", "+p50 vs gw",
                       "errors")  # fmt: skip
PROCESS_TITLE = "Processes (start: from process start to first answered request)"
PROCESS_COLUMNS = ("target", "procs", "start s", "idle RSS MB", "largest MB", "idle PSS MB",
                   "RSS after MB", "notes")  # fmt: skip


@dataclass(frozen=True)
class TableData:
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    flagged: frozenset[int] = frozenset()  # indexes of rows to show as errors


def fmt(value: float | None, digits: int = 2, unit: str = "") -> str:
    if value is None:
        return NA
    return f"{value:,.{digits}f}{unit}"


def signed(value: float | None, digits: int = 2) -> str:
    return NA if value is None else f"{value:+,.{digits}f}"


def ordered(results: Results) -> list[TargetResult]:
    return [results[name] for name in TARGET_NAMES if name in results]


def added_ms(
    results: Results, name: TargetName, concurrency: int
) -> tuple[float | None, float | None]:
    """(p50, p99) of ``name`` minus direct's at ``concurrency``; None where unknown."""
    direct, target = results.get("direct"), results.get(name)
    if direct is None or target is None or name == "direct":
        return None, None
    base, step = direct.step(concurrency), target.step(concurrency)
    if base is None or step is None:
        return None, None
    return step.p50_ms - base.p50_ms, step.p99_ms - base.p99_ms


def added_over_gw_ms(
    results: Results, name: TargetName, concurrency: int
) -> tuple[float | None, float | None]:
    """(p50, p99) of a cache target minus gw's (the same config, the cache off) at
    ``concurrency``: what the cache adds (a miss) or saves (a hit). None where unknown."""
    off, target = results.get("gw"), results.get(name)
    if off is None or target is None or name not in CACHE_TARGET_NAMES:
        return None, None
    base, step = off.step(concurrency), target.step(concurrency)
    if base is None or step is None:
        return None, None
    return step.p50_ms - base.p50_ms, step.p99_ms - base.p99_ms


def added_ttft_ms(results: Results, name: TargetName) -> float | None:
    direct, target = results.get("direct"), results.get(name)
    if direct is None or target is None or name == "direct":
        return None
    if direct.stream is None or target.stream is None:
        return None
    if direct.stream.ttft_p50_ms is None or target.stream.ttft_p50_ms is None:
        return None
    return target.stream.ttft_p50_ms - direct.stream.ttft_p50_ms


def _errors(step: LoadStep) -> str:
    if not step.errors:
        return "0"
    return f"{step.non_2xx} non-2xx, {step.socket_errors} socket"


def load_table(results: Results) -> TableData:
    rows: list[tuple[str, ...]] = []
    flagged: set[int] = set()
    for result in ordered(results):
        for step in result.load:
            p50, p99 = added_ms(results, result.name, step.concurrency)
            if step.errors:
                flagged.add(len(rows))
            rows.append(
                (
                    result.name,
                    str(step.concurrency),
                    fmt(step.rps, 0),
                    fmt(step.p50_ms),
                    fmt(step.p90_ms),
                    fmt(step.p99_ms),
                    signed(p50),
                    signed(p99),
                    fmt(step.cpu_ms_per_request, 3),
                    _errors(step),
                )
            )
    return TableData(LOAD_TITLE, LOAD_COLUMNS, tuple(rows), frozenset(flagged))


def stream_table(results: Results) -> TableData:
    rows: list[tuple[str, ...]] = []
    flagged: set[int] = set()
    for result in ordered(results):
        run = result.stream
        if run is None:
            continue
        if run.errors:
            flagged.add(len(rows))
        errors = str(run.errors) + (f" ({run.first_error})" if run.first_error else "")
        rows.append(
            (
                result.name,
                f"{run.completed}/{run.streams}",
                str(run.concurrency),
                fmt(run.ttft_p50_ms),
                fmt(run.ttft_p99_ms),
                signed(added_ttft_ms(results, result.name)),
                fmt(run.total_p50_ms),
                fmt(run.total_p99_ms),
                fmt(run.chunks_per_stream, 0),
                fmt(run.cpu_ms_per_stream, 3),
                errors,
            )
        )
    return TableData(STREAM_TITLE, STREAM_COLUMNS, tuple(rows), frozenset(flagged))


def process_table(results: Results) -> TableData:
    rows: list[tuple[str, ...]] = []
    flagged: set[int] = set()
    for result in ordered(results):
        if result.error is not None:
            flagged.add(len(rows))
        rows.append(
            (
                result.name,
                str(result.processes) if result.processes else NA,
                fmt(result.start_to_first_answer_s, 2),
                fmt(result.idle_rss_mb, 1),
                fmt(max((p.rss_mb for p in result.idle_processes), default=None), 1),
                fmt(result.idle_pss_mb, 1),
                fmt(result.rss_after_load_mb, 1),
                result.error or "; ".join(result.notes),
            )
        )
    return TableData(PROCESS_TITLE, PROCESS_COLUMNS, tuple(rows), frozenset(flagged))


def micro_table(micro: Sequence[MicroResult]) -> TableData:
    rows = tuple((m.name, fmt(m.median_us, 2), f"{m.loops:,} x {m.repeats}") for m in micro)
    return TableData("Micro-benchmarks (in-process)", ("operation", "median us/op", "loops"), rows)


def goal_table(goals: Sequence[Goal]) -> TableData:
    """The issue's table; with a relay column (the floor) when the relay was measured."""
    flagged = frozenset(i for i, g in enumerate(goals) if g.status == "fail")
    rows: tuple[tuple[str, ...], ...]
    if all(g.relay == NA for g in goals):
        rows = tuple((g.figure, g.target, g.gw, g.litellm, g.status, g.note) for g in goals)
        columns: tuple[str, ...] = ("figure", "target", "gw", "LiteLLM", "result", "note")
    else:
        rows = tuple(
            (g.figure, g.target, g.gw, g.relay, g.litellm, g.status, g.note) for g in goals
        )
        columns = ("figure", "target", "gw", "relay (floor)", "LiteLLM", "result", "note")
    return TableData("Targets (issues 3 and 28)", columns, rows, flagged)


def _judge(value: float | None, limit: float, errors: bool) -> tuple[Status, str]:
    if value is None:
        return "n/a", "not measured"
    if errors:
        return "fail", "gw had errors in this step"
    return ("pass" if value <= limit else "fail"), ""


def _added_goal(results: Results) -> Goal:
    gw_p50, _ = added_ms(results, "gw", 1)
    ll_p50, _ = added_ms(results, "litellm", 1)
    gw = results.get("gw")
    step = gw.step(1) if gw else None
    status, note = _judge(gw_p50, ADDED_P50_LIMIT_MS, bool(step and step.errors))
    if gw_p50 is None and gw is not None and "direct" not in results:
        note = "needs the direct target"
    return Goal(
        "added latency, non-stream, c=1, p50",
        f"<= {ADDED_P50_LIMIT_MS:g} ms",
        fmt(gw_p50, 2, " ms"),
        fmt(ll_p50, 2, " ms"),
        status,
        note,
        relay=fmt(added_ms(results, "relay", 1)[0], 2, " ms"),
    )


def _rps_goal(results: Results) -> Goal:
    gw, ll, relay = results.get("gw"), results.get("litellm"), results.get("relay")
    gw_step = gw.step(64) if gw else None
    ll_step = ll.step(64) if ll else None
    relay_step = relay.step(64) if relay else None
    relay_text = fmt(relay_step.rps if relay_step else None, 0, " req/s")
    figure, target = "requests/s, non-stream, c=64", f">= {RPS_FACTOR:g} x LiteLLM"
    gw_text = fmt(gw_step.rps if gw_step else None, 0, " req/s")
    if gw_step is None:
        return Goal(figure, target, gw_text, NA, "n/a", "not measured", relay_text)
    if ll_step is None or ll_step.rps <= 0:
        note = "run with --peer litellm" if ll is None else "LiteLLM not measured"
        return Goal(figure, target, gw_text, NA, "n/a", note, relay_text)
    ratio = gw_step.rps / ll_step.rps
    status: Status = "pass" if ratio >= RPS_FACTOR and not gw_step.errors else "fail"
    notes = [f"{ratio:.1f} x LiteLLM"]
    if gw_step.errors:
        notes.append("gw had errors")
    if ll_step.errors:
        notes.append("LiteLLM had errors")
    return Goal(
        figure, target, gw_text, fmt(ll_step.rps, 0, " req/s"), status, "; ".join(notes), relay_text
    )


def _value_goal(
    results: Results,
    *,
    figure: str,
    limit: float,
    unit: str,
    pick: Callable[[TargetResult], float | None],
    digits: int = 2,
) -> Goal:
    gw, ll, relay = results.get("gw"), results.get("litellm"), results.get("relay")
    gw_value: float | None = pick(gw) if gw else None
    ll_value: float | None = pick(ll) if ll else None
    relay_value: float | None = pick(relay) if relay else None
    errors = gw is not None and gw.has_errors
    status, note = _judge(gw_value, limit, errors)
    if errors and status == "fail":
        note = "gw had errors"
    return Goal(
        figure,
        f"<= {limit:g} {unit}",
        fmt(gw_value, digits, f" {unit}"),
        fmt(ll_value, digits, f" {unit}"),
        status,
        note,
        relay=fmt(relay_value, digits, f" {unit}"),
    )


def _routing_goal(micro: Sequence[MicroResult]) -> Goal:
    found = next((m for m in micro if m.name == ROUTING_GOAL_MICRO), None)
    value = found.median_us if found else None
    status, note = _judge(value, ROUTING_LIMIT_US, errors=False)
    routing = [m for m in micro if m.name.startswith("routing decision")]
    if routing:
        slowest = max(routing, key=lambda m: m.median_us)
        if slowest is not found:
            note = (
                f"slowest strategy: {slowest.name.rsplit(', ', 1)[-1]} {slowest.median_us:.1f} us"
            )
    return Goal(
        "routing decision, 10 targets",
        f"<= {ROUTING_LIMIT_US:g} us",
        fmt(value, 1, " us"),
        NA,
        status,
        note,
    )


def _cache_goal(
    results: Results,
    interleaved: Interleaved | None,
    name: TargetName,
    baseline: TargetName,
    *,
    figure: str,
    limit: float,
    strict: bool,
) -> Goal:
    """``name``'s p50 at c=1 over ``baseline``'s: the median of the interleaved rounds'
    differences when they ran, else the difference of the two targets' own c=1 steps
    (taken a minute or more apart: on a busy machine, drift can exceed the figure)."""
    target_text = f"{'<' if strict else '<='} {limit:g} ms"
    result, base = results.get(name), results.get(baseline)
    if result is None:
        return Goal(figure, target_text, NA, NA, "n/a", "not measured")
    if base is None:
        return Goal(figure, target_text, NA, NA, "n/a", f"needs the {baseline} target")
    step, base_step = result.step(1), base.step(1)
    apart = None if step is None or base_step is None else step.p50_ms - base_step.p50_ms
    rounds = interleaved.added_p50_ms(name, baseline) if interleaved else ()
    value = statistics.median(rounds) if rounds else apart
    if value is None:
        status: Status = "n/a" if result.error is None else "fail"
        return Goal(figure, target_text, NA, NA, status, result.error or "not measured")
    if rounds:
        each = ", ".join(signed(d, 3) for d in rounds)
        note = f"median of {len(rounds)} interleaved rounds ({each}); steps apart {signed(apart)}"
    else:
        ours = None if step is None else step.p50_ms
        theirs = None if base_step is None else base_step.p50_ms
        note = f"steps apart: {name} {fmt(ours)}, {baseline} {fmt(theirs)}"
    status = "pass" if (value < limit if strict else value <= limit) else "fail"
    errors = any(s.errors for s in (step, base_step) if s is not None) or (
        interleaved is not None
        and rounds
        and interleaved.errors.get(name, 0) + interleaved.errors.get(baseline, 0) > 0
    )
    if result.error is not None:
        status, note = "fail", f"{result.error}; {note}"
    elif errors:
        status, note = "fail", f"errors at c=1; {note}"
    return Goal(figure, target_text, fmt(value, 2, " ms"), NA, status, note)


def _cache_goals(results: Results, interleaved: Interleaved | None) -> list[Goal]:
    """Issue 28: what a lookup that finds nothing (and the store after it) adds over gw
    with the cache off, and what a request answered from the cache adds over direct."""
    return [
        _cache_goal(
            results, interleaved, "gw-cache-miss", "gw",
            figure="cache miss: added p50 vs cache off, c=1",
            limit=CACHE_MISS_LIMIT_MS, strict=False,
        ),
        _cache_goal(
            results, interleaved, "gw-cache-hit", "direct",
            figure="cache hit: added p50 vs direct, c=1",
            limit=CACHE_HIT_LIMIT_MS, strict=True,
        ),
    ]  # fmt: skip


def interleaved_table(interleaved: Interleaved | None) -> TableData:
    """The interleaved rounds: each target's p50 by round, and the medians of the rounds'
    differences over direct and over gw (empty when the rounds did not run)."""
    if interleaved is None:
        return TableData(INTERLEAVED_TITLE, INTERLEAVED_COLUMNS, ())
    rows = []
    for name in TARGET_NAMES:
        values = interleaved.p50_ms.get(name)
        if not values:
            continue
        over = [interleaved.added_p50_ms(name, base) if name != base else () for base in
                ("direct", "gw")]  # fmt: skip
        rows.append(
            (
                name,
                " ".join(fmt(v, 3) for v in values),
                fmt(statistics.median(values), 3),
                *(signed(statistics.median(d), 3) if d else NA for d in over),
                str(interleaved.errors.get(name, 0)),
            )
        )
    flagged = frozenset(i for i, row in enumerate(rows) if row[-1] != "0")
    return TableData(INTERLEAVED_TITLE, INTERLEAVED_COLUMNS, tuple(rows), flagged)


def evaluate_goals(
    results: Results, micro: Sequence[MicroResult], interleaved: Interleaved | None = None
) -> list[Goal]:
    """The issues' table, judged from this run (gw's figures against the targets)."""

    def cpu(r: TargetResult) -> float | None:
        return r.stream.cpu_ms_per_stream if r.stream else None

    return [
        _added_goal(results),
        _rps_goal(results),
        _value_goal(
            results,
            figure="CPU per 22-chunk stream",
            limit=CPU_PER_STREAM_LIMIT_MS,
            unit="ms",
            pick=cpu,
        ),
        _value_goal(
            results,
            figure="start to first answered request",
            limit=START_LIMIT_S,
            unit="s",
            pick=lambda r: r.start_to_first_answer_s,
        ),
        _value_goal(
            results,
            figure="idle resident memory (RSS)",
            limit=IDLE_RSS_LIMIT_MB,
            unit="MB",
            pick=lambda r: r.idle_rss_mb,
            digits=1,
        ),
        _routing_goal(micro),
        *_cache_goals(results, interleaved),
    ]


def _round(value: float | None) -> float | None:
    """Derived differences, rounded so 0.47 does not print as 0.47000000000000003."""
    return None if value is None else round(value, 4)


Added = Callable[[Results, TargetName, int], tuple[float | None, float | None]]


def _per_step(result: TargetResult, added: Added, results: Results) -> dict[str, Any]:
    """``added``'s (p50, p99) at each of ``result``'s concurrencies, rounded."""
    return {
        str(step.concurrency): dict(
            zip(("p50", "p99"), map(_round, added(results, result.name, step.concurrency)),
                strict=True)
        )
        for step in result.load
    }  # fmt: skip


def run_json(
    info: RunInfo,
    results: Results,
    micro: Sequence[MicroResult],
    goals: Sequence[Goal],
    interleaved: Interleaved | None = None,
) -> dict[str, Any]:
    """The saved document: everything measured, plus the derived figures and verdicts."""
    targets: dict[str, Any] = {}
    for result in ordered(results):
        entry = asdict(result)
        entry["added_ms"] = _per_step(result, added_ms, results)
        if result.name in CACHE_TARGET_NAMES:
            entry["added_over_gw_ms"] = _per_step(result, added_over_gw_ms, results)
        entry["added_ttft_p50_ms"] = _round(added_ttft_ms(results, result.name))
        entry["has_errors"] = result.has_errors
        targets[result.name] = entry
    return {
        "schema": 1,
        "info": asdict(info),
        "targets": targets,
        "micro": [asdict(m) for m in micro],
        "goals": [asdict(g) for g in goals],
        "interleaved_c1": None if interleaved is None else asdict(interleaved),
    }

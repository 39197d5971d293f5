"""Measure one started target: memory at rest, wrk load steps, streams, memory after.

CPU per request (and per stream) is the target's process-tree CPU over a whole step,
divided by the requests (streams) that step completed. Every step starts once the target
is idle, so none of the step before's work (telemetry still being written, requests wrk
left in flight) is counted in it. A stream step also ends once the target is idle again,
its streams all answered, so the telemetry they leave behind counts for them; a wrk step
ends when wrk does, since what runs after it is partly requests wrk no longer counts.
Memory at rest is read once the tree's RSS has settled after the first answer: a
multi-worker server may still be importing in its other workers when one of them first
answers.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench import proctree
from bench.cache_load import same_body, unique_bodies
from bench.loadgen import run_wrk
from bench.results import LoadStep, ProcessMemory, StreamRun, TargetResult
from bench.streaming import StreamSample, run_streams
from bench.targets import Target

_MB = 1024 * 1024


@dataclass(frozen=True)
class Settings:
    duration_s: float = 5.0
    warmup_s: float = 1.0
    concurrencies: tuple[int, ...] = (1, 16, 64)
    wrk_threads: int = 2
    streams: int = 400
    stream_concurrency: int = 4
    settle_max_s: float = 10.0
    starts: int = 3  # start to first answer is the median of this many fresh starts
    quiet_max_s: float = 10.0


def settled_sample(root: int, max_wait_s: float) -> proctree.TreeSample:
    """Sample every 0.25 s until RSS moves < 1% between two samples (or time runs out)."""
    deadline = time.monotonic() + max_wait_s
    previous = proctree.sample(root)
    while time.monotonic() < deadline:
        time.sleep(0.25)
        current = proctree.sample(root)
        if abs(current.rss_bytes - previous.rss_bytes) <= previous.rss_bytes * 0.01:
            return current
        previous = current
    return previous


def quiet_cpu(root: int, max_wait_s: float) -> float:
    """The tree's CPU seconds once it is idle: a 0.25 s window in which it used at most one
    clock tick (or when ``max_wait_s`` has passed: a target busy on its own, in the
    background, is then measured as it is)."""
    deadline = time.monotonic() + max_wait_s
    previous = proctree.sample(root).cpu_seconds
    while True:
        time.sleep(0.25)
        current = proctree.sample(root).cpu_seconds
        if current - previous <= proctree.tick_seconds() or time.monotonic() >= deadline:
            return current
        previous = current


def percentile(values: Sequence[float], pct: float) -> float | None:
    """Nearest-rank percentile (``pct`` in 0..100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = min(len(ordered), max(1, math.ceil(pct / 100 * len(ordered))))
    return ordered[rank - 1]


def _ms(value: float | None) -> float | None:
    return None if value is None else value * 1000


def per_unit_ms(cpu_s: float, count: int) -> float | None:
    return cpu_s * 1000 / count if count > 0 else None


def stream_run(samples: Sequence[StreamSample], concurrency: int, cpu_s: float) -> StreamRun:
    good = [s for s in samples if s.error is None]
    bad = [s for s in samples if s.error is not None]
    ttfts = [s.ttft_s for s in good if s.ttft_s is not None]
    totals = [s.total_s for s in good]
    return StreamRun(
        streams=len(samples),
        concurrency=concurrency,
        completed=len(good),
        errors=len(bad),
        ttft_p50_ms=_ms(percentile(ttfts, 50)),
        ttft_p99_ms=_ms(percentile(ttfts, 99)),
        total_p50_ms=_ms(percentile(totals, 50)),
        total_p99_ms=_ms(percentile(totals, 99)),
        chunks_per_stream=statistics.median(s.frames for s in good) if good else None,
        cpu_ms_per_stream=per_unit_ms(cpu_s, len(good)),
        first_error=bad[0].error if bad else None,
    )


def load_step(
    target: Target, wrk: str, script: Path, concurrency: int, settings: Settings
) -> LoadStep:
    root = target.spawned.pid
    before = quiet_cpu(root, settings.quiet_max_s)
    report = run_wrk(
        wrk,
        target.chat_url,
        script,
        concurrency=concurrency,
        duration_s=settings.duration_s,
        threads=settings.wrk_threads,
    )
    cpu_s = proctree.sample(root).cpu_seconds - before
    return LoadStep(
        concurrency=concurrency,
        duration_s=report.duration_s,
        requests=report.requests,
        rps=report.rps,
        p50_ms=report.p50_ms,
        p90_ms=report.p90_ms,
        p99_ms=report.p99_ms,
        non_2xx=report.non_2xx,
        socket_errors=report.socket_errors,
        cpu_ms_per_request=per_unit_ms(cpu_s, report.requests),
    )


def load_steps(
    target: Target, wrk: str, script: Path, settings: Settings, say: Callable[[str], None]
) -> tuple[LoadStep, ...]:
    """A warm-up at concurrency 16 (discarded), then one wrk step per concurrency."""
    threads = settings.wrk_threads
    run_wrk(
        wrk, target.chat_url, script, concurrency=16, duration_s=settings.warmup_s, threads=threads
    )
    steps = []
    for concurrency in settings.concurrencies:
        step = load_step(target, wrk, script, concurrency, settings)
        steps.append(step)
        say(
            f"{target.name}: c={concurrency:<3} {step.rps:10,.0f} req/s  p50 {step.p50_ms:.2f} ms"
            f"  p99 {step.p99_ms:.2f} ms  errors {step.errors}"
        )
    return tuple(steps)


def streams(target: Target, settings: Settings, say: Callable[[str], None]) -> StreamRun:
    """A few warm-up streams (discarded), then the measured ones; each asking a question
    of its own for the cache-miss target, the same one for every other."""
    pick = unique_bodies if target.cache_role == "miss" else same_body
    concurrency = settings.stream_concurrency
    run_streams(target.chat_url, pick(stream=True), concurrency * 4, concurrency)
    before = quiet_cpu(target.spawned.pid, settings.quiet_max_s)
    samples = run_streams(target.chat_url, pick(stream=True), settings.streams, concurrency)
    cpu_s = quiet_cpu(target.spawned.pid, settings.quiet_max_s) - before
    run = stream_run(samples, concurrency, cpu_s)
    say(
        f"{target.name}: {run.completed}/{run.streams} streams, TTFT p50 "
        f"{run.ttft_p50_ms or 0:.2f} ms, CPU {run.cpu_ms_per_stream or 0:.2f} ms/stream"
    )
    return run


def measure(
    target: Target, wrk: str, script: Path, settings: Settings, say: Callable[[str], None]
) -> TargetResult:
    """Every figure for one target. Raises BenchError (from wrk or /proc) on failure."""
    root = target.spawned.pid
    idle = settled_sample(root, settings.settle_max_s)
    at_rest = tuple(
        ProcessMemory(pid, proctree.command(pid), proctree.rss_bytes(pid) / _MB)
        for pid in idle.pids
    )
    starts = ""
    if len(target.start_samples_s) > 1:
        starts = f" (median of {', '.join(f'{s:.2f}' for s in target.start_samples_s)})"
    say(
        f"{target.name}: first answer {target.start_to_first_answer_s:.2f} s after start"
        f"{starts}, idle RSS {idle.rss_bytes / _MB:.1f} MB in {len(idle.pids)} process(es)"
    )
    steps = load_steps(target, wrk, script, settings, say)
    stream = streams(target, settings, say)
    after = proctree.sample(root)
    return TargetResult(
        name=target.name,
        processes=len(idle.pids),
        start_to_first_answer_s=target.start_to_first_answer_s,
        start_samples_s=target.start_samples_s,
        idle_rss_mb=idle.rss_bytes / _MB,
        idle_pss_mb=None if idle.pss_bytes is None else idle.pss_bytes / _MB,
        rss_after_load_mb=after.rss_bytes / _MB,
        idle_processes=at_rest,
        load=steps,
        stream=stream,
        notes=target.notes,
    )

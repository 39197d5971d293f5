"""What one benchmark run measured, as plain frozen values (no I/O, no formatting)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

TargetName = Literal["direct", "relay", "gw", "gw-cache-miss", "gw-cache-hit", "litellm"]
TARGET_NAMES: tuple[TargetName, ...] = (
    "direct",
    "relay",
    "gw",
    "gw-cache-miss",
    "gw-cache-hit",
    "litellm",
)
# gw with its response cache on (bench/cache_load.py): every request a miss, or a hit
CACHE_TARGET_NAMES: tuple[TargetName, ...] = ("gw-cache-miss", "gw-cache-hit")
Status = Literal["pass", "fail", "n/a"]


@dataclass(frozen=True)
class LoadStep:
    """One wrk run against a target at one concurrency (non-streaming requests)."""

    concurrency: int
    duration_s: float
    requests: int
    rps: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    non_2xx: int
    socket_errors: int
    cpu_ms_per_request: float | None  # the target's process tree, None when unknown

    @property
    def errors(self) -> int:
        return self.non_2xx + self.socket_errors


@dataclass(frozen=True)
class StreamRun:
    """Streaming requests at a small concurrency; times from send, in milliseconds."""

    streams: int
    concurrency: int
    completed: int  # ended with [DONE], no error event, status 200
    errors: int
    ttft_p50_ms: float | None
    ttft_p99_ms: float | None
    total_p50_ms: float | None
    total_p99_ms: float | None
    chunks_per_stream: float | None  # median data frames before [DONE]
    cpu_ms_per_stream: float | None
    first_error: str | None = None


@dataclass(frozen=True)
class ProcessMemory:
    """One process of a target's tree at rest: which one, and its resident memory."""

    pid: int
    command: str
    rss_mb: float


@dataclass(frozen=True)
class TargetResult:
    name: TargetName
    error: str | None = None  # why the target could not be (fully) measured
    processes: int = 0  # size of the process tree, workers included
    start_to_first_answer_s: float | None = None  # the median of start_samples_s, if any
    start_samples_s: tuple[float, ...] = ()  # each start, from a fresh state, in order
    idle_rss_mb: float | None = None
    idle_pss_mb: float | None = None
    rss_after_load_mb: float | None = None
    idle_processes: tuple[ProcessMemory, ...] = ()
    load: tuple[LoadStep, ...] = ()
    stream: StreamRun | None = None
    notes: tuple[str, ...] = ()

    def step(self, concurrency: int) -> LoadStep | None:
        return next((s for s in self.load if s.concurrency == concurrency), None)

    @property
    def has_errors(self) -> bool:
        stream_errors = self.stream is not None and self.stream.errors > 0
        return self.error is not None or stream_errors or any(s.errors for s in self.load)


@dataclass(frozen=True)
class Interleaved:
    """wrk at concurrency 1 on several running targets in turn, round after round
    (bench/interleaved.py): what one adds over another is the median of the rounds'
    differences, which the machine's drift during a run does not skew as it skews two
    steps measured a minute apart."""

    duration_s: float  # of each step
    p50_ms: dict[str, tuple[float, ...]]  # by target name, one per round, in order
    errors: dict[str, int]  # by target name, over every round

    def added_p50_ms(self, name: TargetName, baseline: TargetName) -> tuple[float, ...]:
        """``name``'s p50 minus ``baseline``'s, round by round (empty: one is missing)."""
        ours, theirs = self.p50_ms.get(name, ()), self.p50_ms.get(baseline, ())
        return tuple(a - b for a, b in zip(ours, theirs, strict=False))


@dataclass(frozen=True)
class MicroResult:
    """A pure function timed in-process: the median over repeats of the time per call."""

    name: str
    median_us: float
    loops: int  # calls per repeat
    repeats: int


@dataclass(frozen=True)
class Goal:
    """One row of the issue's target table, judged from this run."""

    figure: str
    target: str
    gw: str
    litellm: str
    status: Status
    note: str = ""
    relay: str = "n/a"  # the byte relay's figure (--peer relay): the floor, never judged


@dataclass(frozen=True)
class RunInfo:
    started_at: str  # ISO 8601, local time with offset
    host: str
    cpus: int
    python: str
    settings: dict[str, object] = field(default_factory=dict)

"""Interleaved rounds at concurrency 1: the running targets measured in turn, round after
round, so that what one adds over another is judged on steps taken seconds apart.

A 0.1 ms target (issue 28: what a response-cache miss adds) is smaller than the drift of
this shared 2-core machine between two wrk steps taken a minute apart: gw's own p50 at
c=1 moved by 0.2 ms between such steps in one run. Within a round the steps are back to
back, each after the target is idle (``measure.load_step``); the figure is the median
over rounds of the round's difference.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from bench.measure import Settings, load_step
from bench.results import Interleaved
from bench.targets import Target

DURATION_S = 1.0  # per step: about a thousand requests at c=1


def run_interleaved(
    targets: Sequence[tuple[Target, Path]],
    wrk: str,
    settings: Settings,
    rounds: int,
    say: Callable[[str], None],
) -> Interleaved:
    """``rounds`` rounds of one c=1 wrk step on each (target, its wrk script), in order."""
    step_settings = replace(settings, duration_s=DURATION_S)
    p50: dict[str, list[float]] = {target.name: [] for target, _ in targets}
    errors: dict[str, int] = dict.fromkeys(p50, 0)
    for number in range(1, rounds + 1):
        figures = []
        for target, script in targets:
            step = load_step(target, wrk, script, 1, step_settings)
            p50[target.name].append(step.p50_ms)
            errors[target.name] += step.errors
            figures.append(f"{target.name} {step.p50_ms:.3f}")
        say(f"interleaved c=1, round {number}/{rounds}: p50 ms {', '.join(figures)}")
    return Interleaved(
        duration_s=DURATION_S,
        p50_ms={name: tuple(values) for name, values in p50.items()},
        errors=errors,
    )

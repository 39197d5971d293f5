"""Budget period labels: the one function that renders them, for writing and reading
counters alike (invariant 10). Periods are UTC calendar days, ISO weeks (Monday to
Sunday) and months, and ``total``, which never ends."""

from __future__ import annotations

import datetime as dt
import functools
from typing import Literal

Period = Literal["day", "week", "month", "total"]
PERIODS: tuple[Period, ...] = ("day", "week", "month", "total")
_DAY_SECONDS = 86_400  # a UTC day: Unix time has no leap seconds
TOTAL_LABEL = "t:all"


def period_label(period: Period, epoch_seconds: float) -> str:
    """``d:2026-03-15``, ``w:2026-W11``, ``m:2026-03`` for the UTC day, ISO week or month
    holding the instant; ``t:all`` for the total."""
    if period == "total":
        return TOTAL_LABEL
    return _label(period, int(epoch_seconds // _DAY_SECONDS))


def week_start(epoch_seconds: float) -> int:
    """The epoch second the UTC ISO week holding the instant starts (a Monday, 00:00)."""
    day = int(epoch_seconds // _DAY_SECONDS)
    return (day - (day + 3) % 7) * _DAY_SECONDS  # 1970-01-01 was a Thursday


@functools.lru_cache(maxsize=64)  # every request asks for today's labels
def _label(period: Period, day: int) -> str:
    moment = dt.datetime.fromtimestamp(day * _DAY_SECONDS, tz=dt.UTC)
    if period == "day":
        return f"d:{moment:%Y-%m-%d}"
    if period == "week":
        year, week, _ = moment.isocalendar()
        return f"w:{year}-W{week:02d}"
    return f"m:{moment:%Y-%m}"

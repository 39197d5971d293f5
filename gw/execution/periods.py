"""Budget period labels: the one function that renders them, for writing and reading
counters alike (invariant 10). Periods are UTC calendar days and months."""

from __future__ import annotations

import datetime as dt
import functools
from typing import Literal

Period = Literal["day", "month"]
_DAY_SECONDS = 86_400  # a UTC day: Unix time has no leap seconds


def period_label(period: Period, epoch_seconds: float) -> str:
    """``d:2026-03-15`` or ``m:2026-03`` for the UTC day or month holding the instant."""
    return _label(period, int(epoch_seconds // _DAY_SECONDS))


@functools.lru_cache(maxsize=64)  # every request asks for today's labels
def _label(period: Period, day: int) -> str:
    moment = dt.datetime.fromtimestamp(day * _DAY_SECONDS, tz=dt.UTC)
    if period == "day":
        return f"d:{moment:%Y-%m-%d}"
    return f"m:{moment:%Y-%m}"

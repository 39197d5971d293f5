"""Budget period labels: the one function that renders them, for writing and reading
counters alike (invariant 10). Periods are UTC calendar days and months."""

from __future__ import annotations

import datetime as dt
from typing import Literal

Period = Literal["day", "month"]


def period_label(period: Period, epoch_seconds: float) -> str:
    """``d:2026-03-15`` or ``m:2026-03`` for the UTC day or month holding the instant."""
    moment = dt.datetime.fromtimestamp(epoch_seconds, tz=dt.UTC)
    if period == "day":
        return f"d:{moment:%Y-%m-%d}"
    return f"m:{moment:%Y-%m}"

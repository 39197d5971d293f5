"""Budget period labels agree with the UTC calendar at every edge of a day and a month."""

from __future__ import annotations

import datetime as dt

import pytest

from gw.execution.periods import period_label


def utc(*fields: int) -> float:
    return dt.datetime(*fields, tzinfo=dt.UTC).timestamp()  # type: ignore[misc]


@pytest.mark.parametrize(
    ("instant", "day", "month"),
    [
        (utc(2026, 3, 15, 12), "d:2026-03-15", "m:2026-03"),
        (utc(2026, 3, 31, 23, 59, 59) + 0.999, "d:2026-03-31", "m:2026-03"),
        (utc(2026, 4, 1), "d:2026-04-01", "m:2026-04"),
        (utc(2024, 2, 29, 6), "d:2024-02-29", "m:2024-02"),
        (utc(2026, 12, 31, 23, 59, 59), "d:2026-12-31", "m:2026-12"),
        (utc(2027, 1, 1), "d:2027-01-01", "m:2027-01"),
        (0.0, "d:1970-01-01", "m:1970-01"),
        (-0.5, "d:1969-12-31", "m:1969-12"),
    ],
)
def test_labels_follow_the_utc_calendar(instant: float, day: str, month: str) -> None:
    assert period_label("day", instant) == day
    assert period_label("month", instant) == month

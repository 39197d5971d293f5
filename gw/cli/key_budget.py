"""An API key's budget on the command line: ``--daily-usd``, ``--weekly-usd``,
``--monthly-usd`` and ``--total-usd`` (``gw keys create`` and ``gw keys update``), and how
it is shown.

Each takes USD (``5``, ``0.50``; ``0`` stops the key's spend) or, for ``update``, ``none``
to remove that period's budget; a flag left out keeps what the key has. A value that is
neither is a usage error (exit 2), like any bad option. The budget is counted as
``@key:<id>`` besides the tenant's (gw/execution/limits.py).
"""

from __future__ import annotations

from typing import Annotated, Final

import typer

from gw.config.schema import TenantBudget

NONE_WORDS: Final = frozenset({"none", "null", "off"})


def _option(flag: str, period: str) -> object:
    return typer.Option(
        flag,
        metavar="USD",
        help=f"The key's budget per {period} in USD (0 stops it; `none` removes it).",
    )


DailyUsd = Annotated[str | None, _option("--daily-usd", "UTC day")]
WeeklyUsd = Annotated[str | None, _option("--weekly-usd", "ISO week (UTC)")]
MonthlyUsd = Annotated[str | None, _option("--monthly-usd", "UTC month")]
TotalUsd = Annotated[str | None, _option("--total-usd", "all time (never reset)")]


def parse_usd(flag: str, text: str) -> float | None:
    """``text`` as USD, or None for ``none``; ``typer.BadParameter`` (exit 2) names the
    flag and what to write."""
    if text.strip().lower() in NONE_WORDS:
        return None
    try:
        usd = float(text)
    except ValueError:
        usd = float("nan")
    if not usd >= 0 or usd == float("inf"):  # NaN compares false
        raise typer.BadParameter(
            f"{flag} {text!r}: give USD as a number of at least 0 (0 stops the key's spend),"
            " or none to remove it"
        )
    return usd


def budget_from(
    base: TenantBudget,
    *,
    daily: str | None,
    weekly: str | None,
    monthly: str | None,
    total: str | None,
) -> TenantBudget:
    """``base`` with each period given on the command line replaced."""
    given = {
        "daily_usd": ("--daily-usd", daily),
        "weekly_usd": ("--weekly-usd", weekly),
        "monthly_usd": ("--monthly-usd", monthly),
        "total_usd": ("--total-usd", total),
    }
    values = {field: getattr(base, field) for field in given}
    for field, (flag, text) in given.items():
        if text is not None:
            values[field] = parse_usd(flag, text)
    return TenantBudget(**values)


def budget_json(budget: TenantBudget) -> dict[str, float | None]:
    return {
        "daily_usd": budget.daily_usd,
        "weekly_usd": budget.weekly_usd,
        "monthly_usd": budget.monthly_usd,
        "total_usd": budget.total_usd,
    }


def budget_text(budget: TenantBudget) -> str:
    """``$5.00/day, $100.00/month``, or ``none``."""
    parts = [
        f"${usd:.2f}/{period}"
        for period, usd in (
            ("day", budget.daily_usd),
            ("week", budget.weekly_usd),
            ("month", budget.monthly_usd),
            ("total", budget.total_usd),
        )
        if usd is not None
    ]
    return ", ".join(parts) or "none"

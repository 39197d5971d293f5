"""The load-time check of the policies' budgets (``policies[].budget``), which
gw/config/validate.py runs with the others: as a tenant's, each USD figure is at least 0
(``0`` stops all spend, which is a meaning) or null (no budget for that period)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from gw.config.schema import PolicyConfig

BUDGET_FIELDS = ("daily_usd", "weekly_usd", "monthly_usd", "total_usd")


def policy_budget_problems(policies: Iterable[PolicyConfig]) -> Iterator[tuple[str, str]]:
    """(field path, reason) for each bad figure of each policy's budget."""
    for index, policy in enumerate(policies):
        for field in BUDGET_FIELDS:
            usd = getattr(policy.budget, field)
            if usd is not None and not usd >= 0:  # NaN too
                yield (
                    f"policies[{index}].budget.{field}",
                    "must not be negative (null: no budget)",
                )

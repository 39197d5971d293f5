"""`gw usage` rendering: a row per group, a totals footer, and notes on what is missing."""

from __future__ import annotations

from rich.console import Console

from gw.cli.usage_cmd import sum_totals, usage_notes, usage_table
from gw.store.usage import UsageTotals


def totals(key: str | None, requests: int, cost: float, **more: int) -> UsageTotals:
    fields = {
        "errors": 0,
        "input_tokens": 100 * requests,
        "cached_input_tokens": 0,
        "output_tokens": 10 * requests,
        "reasoning_tokens": 0,
        "unpriced": 0,
        "estimated": 0,
        **more,
    }
    return UsageTotals(key=key, requests=requests, cost_usd=cost, **fields)


def render(table: object) -> str:
    console = Console(width=160, record=True)
    console.print(table)
    return console.export_text()


def test_table_lists_each_group_and_the_total() -> None:
    groups = [totals("team-a", 3, 0.25), totals(None, 1, 0.0, errors=1)]
    text = render(usage_table("tenant", groups, since="7d"))
    assert "Usage by tenant since 7d" in text
    assert "team-a" in text
    assert "(none)" in text
    assert "$0.250000" in text
    total_line = next(line for line in text.splitlines() if "total" in line)
    assert "4" in total_line
    assert "400" in total_line


def test_sum_and_notes() -> None:
    groups = [totals("m1", 2, 0.1, unpriced=1), totals("m2", 1, 0.2, estimated=1)]
    whole = sum_totals(groups)
    assert (whole.requests, whole.cost_usd, whole.unpriced, whole.estimated) == (3, 0.3, 1, 1)
    notes = usage_notes(groups)
    assert any("no catalog price" in note for note in notes)
    assert any("estimate" in note for note in notes)
    assert usage_notes([totals("m1", 1, 0.1)]) == []

"""The usage report's cached share: cached input tokens over input tokens, per group."""

from __future__ import annotations

from gw.cli.usage_cmd import usage_table
from gw.store.usage import UsageTotals, report_json


def totals(key: str, input_tokens: int, cached: int) -> UsageTotals:
    return UsageTotals(
        key=key, requests=1, errors=0, input_tokens=input_tokens, cached_input_tokens=cached,
        output_tokens=5, reasoning_tokens=0, cost_usd=0.0, unpriced=0, estimated=0,
    )  # fmt: skip


def test_each_group_says_its_cached_share_and_none_without_input() -> None:
    rows = report_json("route", [totals("chat", 3000, 1000), totals("embed", 0, 0)])
    assert rows[0]["route"] == "chat"
    assert rows[0]["cached_share"] == 0.3333
    assert rows[1]["cached_share"] is None


def test_the_table_has_a_cached_percent_column() -> None:
    table = usage_table("route", [totals("chat", 3000, 1000), totals("embed", 0, 0)])
    column = next(c for c in table.columns if c.header == "cached %")
    assert list(column.cells) == ["33.3%", "-"]
    assert column.footer == "33.3%"

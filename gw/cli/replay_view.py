"""``gw replay`` as tables: the report of gw/execution/replay_report.py, rendered."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text


def replay_renderables(report: dict[str, Any], *, store: str) -> Iterator[RenderableType]:
    """The summary line, then a table per kind of change, the cost, and the assumptions."""
    counts = report["requests"]
    period = f"{_when(report['since'])} .. {_when(report['until'])}"
    yield Text(
        f"Replayed {counts['replayed']} of {counts['read']} requests from {store} ({period}) "
        f"under {report['candidate']['source']}: {counts['changed']} would change, "
        f"{counts['unchanged']} would not.",
    )
    if counts["truncated"]:
        yield Text("Only the newest requests were read (--limit): the period holds more.")
    if report["moved"]:
        yield _table(
            "Moved traffic (first choice)",
            ["route", "from", "to", "requests"],
            [[m["route"], m["from"], m["to"], str(m["requests"])] for m in report["moved"]],
        )
    if report["refused"]:
        rows = [
            [r["route"], r["code"], r["reason"] or "", _before(r["before"]), str(r["requests"])]
            for r in report["refused"]
        ]
        yield _table("Would be refused", ["route", "code", "why", "before", "requests"], rows)
    if report["served"]:
        rows = [
            [s["route"], s["before_code"], s["to"], str(s["requests"])] for s in report["served"]
        ]
        yield _table("Refused before, served now", ["route", "was", "to", "requests"], rows)
    if report["degraded"]:
        rows = [
            [d["route"], "; ".join(d["reasons"]), str(d["requests"])] for d in report["degraded"]
        ]
        yield _table("Newly degraded", ["route", "why", "requests"], rows)
    cost = report["cost"]
    yield _cost_table("Cost by route", "route", cost["by_route"], cost)
    yield _cost_table("Cost by tenant", "tenant", cost["by_tenant"], cost)
    yield from _notes(report)


def _notes(report: dict[str, Any]) -> Iterator[Text]:
    counts = report["requests"]
    if report["cost"]["unpriced"]:
        yield Text(
            f"{report['cost']['unpriced']} requests go to a target with no catalog price:"
            " their cost after is not counted."
        )
    if counts["without_inputs"]:
        yield Text(
            f"{counts['without_inputs']} requests were recorded before gw kept routing inputs:"
            " replayed from their token estimate, with no capabilities or hints."
        )
    if counts["breaker_shaped"]:
        yield Text(
            f"{counts['breaker_shaped']} recorded decisions were changed by a breaker or"
            " unhealthy target at the time; the replay assumes every target healthy."
        )
    if counts["not_routed"]:
        listed = ", ".join(f"{code} {n}" for code, n in counts["not_routed"].items())
        yield Text(f"Not replayed (refused before routing): {listed}.")
    yield Text("Assumptions:", style="bold")
    for assumption in report["assumptions"]:
        yield Text(f"- {assumption}")


def _table(title: str, columns: list[str], rows: list[list[str]]) -> Table:
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column, justify="right" if column == "requests" else "left")
    for row in rows:
        table.add_row(*(Text(value) for value in row))
    return table


def _cost_table(title: str, key: str, groups: list[dict[str, Any]], whole: dict[str, Any]) -> Table:
    table = Table(title=title, title_justify="left", show_footer=True)
    table.add_column(key, footer="total")
    for column, field in (("requests", "requests"), ("before", "before_usd")):
        table.add_column(column, justify="right", footer=_number(whole, field))
    table.add_column("after", justify="right", footer=_number(whole, "after_usd"))
    table.add_column("change", justify="right", footer=_number(whole, "delta_usd"))
    for group in groups:
        name = group[key]
        label = Text(name) if name is not None else Text("(none)", style="dim")
        table.add_row(
            label,
            Text(str(group["requests"])),
            Text(_usd(group["before_usd"])),
            Text(_usd(group["after_usd"])),
            Text(_usd(group["delta_usd"], signed=True)),
        )
    return table


def _number(whole: dict[str, Any], field: str) -> str:
    if field == "requests":
        return str(whole["requests"])
    return _usd(whole[field], signed=field == "delta_usd")


def _usd(value: float, *, signed: bool = False) -> str:
    sign = ("-" if value < 0 else "+") if signed else ""
    return f"{sign}${abs(value):.6f}"


def _before(before: dict[str, int]) -> str:
    return ", ".join(f"{label} {n}" for label, n in before.items())


def _when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M UTC")

"""Print ``report.TableData`` as Rich tables; flagged rows in red with a leading "!"."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.table import Table

from bench.report import TableData

_LEFT = frozenset({"target", "ok", "notes", "errors", "figure", "operation", "note", "result"})


def rich_table(data: TableData) -> Table:
    table = Table(title=data.title, title_justify="left", header_style="bold")
    for column in data.columns:
        table.add_column(column, justify="left" if column in _LEFT else "right")
    for index, row in enumerate(data.rows):
        if index in data.flagged:
            table.add_row(f"! {row[0]}", *row[1:], style="red")
        else:
            table.add_row(*row)
    return table


def print_tables(console: Console, tables: Iterable[TableData]) -> None:
    for data in tables:
        if data.rows:
            console.print(rich_table(data))

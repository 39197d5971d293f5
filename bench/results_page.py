"""docs/results.md: the latest run of each benchmark kind, written by ``scripts/bench``.

The page holds one section per kind (the full run, ``--reload-stall``, ``--usage-reports``)
between HTML comment markers; a run replaces its kind's section whole and leaves the rest of
the page (the other kinds, the earlier measurements kept by hand) as it is. Rendering is
pure: values in, Markdown out, so it is tested without running a benchmark.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bench.report import TableData

Kind = Literal["full", "reload-stall", "usage-reports"]
TITLES: Mapping[Kind, str] = {
    "full": "Full run (`scripts/bench`)",
    "reload-stall": "Reload stall (`scripts/bench --reload-stall`)",
    "usage-reports": "Usage reports (`scripts/bench --usage-reports`)",
}
EARLIER_HEADING = "## Earlier measurements"


def begin_marker(kind: Kind) -> str:
    return f"<!-- bench:{kind}:begin (written by scripts/bench; do not edit) -->"


def end_marker(kind: Kind) -> str:
    return f"<!-- bench:{kind}:end -->"


@dataclass(frozen=True)
class RunFacts:
    """Where and when a run was made, for the section's first lines."""

    started_at: str  # ISO 8601
    command: str
    host: str
    cpus: int
    python: str
    commit: str | None  # short hash, "+ changes" when the tree was dirty; None: unknown
    load: float | None = None  # the 1-minute load average when the run started


def markdown_table(data: TableData) -> str:
    """``data`` as a Markdown table; a flagged row (errors) starts with "!"."""

    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = [
        "| " + " | ".join(cell(c) for c in data.columns) + " |",
        "|" + "---|" * len(data.columns),
    ]
    for index, row in enumerate(data.rows):
        first = f"! {row[0]}" if index in data.flagged else row[0]
        lines.append("| " + " | ".join(cell(c) for c in (first, *row[1:])) + " |")
    return "\n".join(lines)


def section(kind: Kind, facts: RunFacts, tables: Sequence[TableData], notes: str = "") -> str:
    """One kind's section, markers included."""
    commit = f", code at {facts.commit}" if facts.commit else ""
    load = f", load average {facts.load:.1f} at start" if facts.load is not None else ""
    parts = [
        begin_marker(kind),
        f"## {TITLES[kind]}",
        "",
        f"Run {facts.started_at} on {facts.host} ({facts.cpus} CPUs{load}, Python "
        f"{facts.python}{commit}): `{facts.command}`.",
    ]
    if notes:
        parts += ["", notes]
    for data in tables:
        if data.rows:
            parts += ["", f"**{data.title}**", "", markdown_table(data)]
    parts += ["", end_marker(kind)]
    return "\n".join(parts)


def replace_section(page: str, kind: Kind, text: str) -> str:
    """``page`` with ``kind``'s section replaced by ``text`` (added, when it has none, before
    the earlier measurements, else at the end)."""
    begin, end = begin_marker(kind), end_marker(kind)
    if begin in page and end in page:
        head, rest = page.split(begin, 1)
        return head + text + rest.split(end, 1)[1]
    if EARLIER_HEADING in page:
        head, rest = page.split(EARLIER_HEADING, 1)
        return f"{head}{text}\n\n{EARLIER_HEADING}{rest}"
    return page.rstrip("\n") + "\n\n" + text + "\n"


def write_section(path: Path, kind: Kind, text: str) -> None:
    page = path.read_text(encoding="utf-8") if path.exists() else "# Benchmark results\n"
    path.write_text(replace_section(page, kind, text), encoding="utf-8")


def _ms(value: Any) -> str:
    return f"{float(value):,.1f}"


def reload_stall_table(result: Mapping[str, Any]) -> TableData:
    """``bench/reload_stall.py``'s figures as one row."""
    idle, busy = result["idle"], result["during_reload"]
    row = (
        f"{result['routes']:,} ({result['config_bytes'] / 2**20:.1f} MiB)",
        f"{result['validate_s']:.2f} s",
        f"{result['start_to_first_answer_s']:.2f} s",
        f"{result['reload_applied_s']:.2f} s",
        f"{_ms(idle['p99_ms'])} / {_ms(idle['max_ms'])} ms",
        f"{_ms(busy['p99_ms'])} / {_ms(busy['max_ms'])} ms",
        str(result["failed_during_reload"]),
    )
    columns = ("routes (file)", "validate", "start to first answer", "reload applied",
               "idle p99 / max", "during reload p99 / max", "failed")  # fmt: skip
    flagged = frozenset({0}) if result["failed_during_reload"] else frozenset()
    return TableData("One request at a time, idle and during the reload", columns, (row,), flagged)


def usage_reports_table(result: Mapping[str, Any]) -> TableData:
    """``bench/usage_reports.py``'s figures as one row."""
    idle, busy = result["idle"], result["during_reports"]
    reports, dashboard = result["usage_reports"], result["dashboard_refreshes"]
    row = (
        f"{result['rows']:,}",
        f"{idle['per_s']:,.0f}, {_ms(idle['p99_ms'])} / {_ms(idle['max_ms'])} ms",
        f"{busy['per_s']:,.0f}, {_ms(busy['p99_ms'])} / {_ms(busy['max_ms'])} ms",
        f"{_ms(reports['p50_ms'])} / {_ms(reports['max_ms'])} ms ({reports['requests']} done)",
        f"{_ms(dashboard['p50_ms'])} ms",
    )
    columns = ("usage rows", "idle: requests/s, p99 / max", "during reports: requests/s, p99 / max",
               "a report, p50 / max", "a dashboard refresh, p50")  # fmt: skip
    return TableData("One request at a time, idle and while reports run", columns, (row,))

"""docs/results.md: the latest run of each benchmark kind, written by ``scripts/bench``.

The page holds one section per kind (the full run, ``--reload-stall``, ``--usage-reports``,
``--fleet``)
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

Kind = Literal["full", "reload-stall", "usage-reports", "fleet"]
TITLES: Mapping[Kind, str] = {
    "full": "Full run (`scripts/bench`)",
    "reload-stall": "Reload stall (`scripts/bench --reload-stall`)",
    "usage-reports": "Usage reports (`scripts/bench --usage-reports`)",
    "fleet": "Fleet: PostgreSQL + Redis, three gateways against one (`scripts/bench --fleet`)",
}
# What three gateways must serve next to one at c=64 (issue 26), unless the note says why not.
FLEET_AIM = 2.5
SATURATED = 0.8  # a machine this busy (share of all CPUs) has nothing left for another gateway
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


def fleet_table(result: Mapping[str, Any]) -> TableData:
    """``bench/fleet.py``'s figures: a row per layout."""
    rows = []
    for name, figures in result["layouts"].items():
        c1 = figures.get("c1")
        c64 = figures["c64"]
        rows.append((
            name,
            str(figures["gateways"]),
            f"{_ms(c1['p50_ms'])} / {_ms(c1['p99_ms'])} ms" if c1 else "-",
            f"{c64['rps']:,.0f}",
            f"{_ms(c64['p50_ms'])} / {_ms(c64['p99_ms'])} ms",
            str(c64["errors"] + (c1["errors"] if c1 else 0)),
        ))  # fmt: skip
    columns = ("layout", "gateways", "c=1 p50 / p99", "c=64 requests/s", "c=64 p50 / p99",
               "errors")  # fmt: skip
    flagged = frozenset(n for n, row in enumerate(rows) if row[-1] != "0")
    return TableData(
        "A tenant with limits and a budget, mock provider, wrk", columns, tuple(rows), flagged
    )


def fleet_notes(result: Mapping[str, Any]) -> str:
    """What the figures say: the added latency, and the three-to-one ratio against the aim,
    with the limit when it is missed."""
    layouts = result["layouts"]
    local, shared = layouts["sqlite"]["c1"], layouts["fleet x1"]["c1"]
    three = layouts["fleet x3"]["c64"]
    ratio = result["three_vs_one"]
    added = (
        f"PostgreSQL state + Redis limits add {shared['p50_ms'] - local['p50_ms']:+.2f} ms at"
        f" p50 and {shared['p99_ms'] - local['p99_ms']:+.2f} ms at p99 to one request at a"
        " time, against SQLite + in-process limits."
    )
    split = "/".join(str(c) for c in three["connections"])
    how = (
        f"Three gateways: three wrk processes at once, one per gateway, at c={split},"
        " requests/s summed (a load balancer's round-robin, per connection)."
    )
    one = layouts["fleet x1"]["c64"]
    cpu = (
        f"One gateway at c=64 used {one['gateway_cores']:.2f} cores (the machine"
        f" {one['machine_busy']:.0%} busy), three used {three['gateway_cores']:.2f} together"
        f" (the machine {three['machine_busy']:.0%} busy, load average"
        f" {three['load_average_after']:.1f} after) on {result['cpus']} CPUs shared with wrk,"
        " PostgreSQL, Redis and whatever else ran."
    )
    if ratio is not None and ratio >= FLEET_AIM:
        verdict = f"Three gateways serve {ratio:.2f}x one at c=64 (aim: {FLEET_AIM}x)."
    else:
        verdict = (
            f"Three gateways serve {ratio}x one at c=64, short of the {FLEET_AIM}x aim: the"
            " limit is this machine's CPUs, which three gateways, wrk and both services"
            " share; the aim needs about a core per gateway plus the services'."
        )
    if one["machine_busy"] >= SATURATED:
        spent = one["machine_busy"] * result["cpus"]
        why_one = (
            f" One gateway at c=64 already had the machine {one['machine_busy']:.0%} busy:"
            f" of the {spent:.2f} cores spent, the gateway used {one['gateway_cores']:.2f}"
            f" and wrk, PostgreSQL, Redis and anything else running the other"
            f" {spent - one['gateway_cores']:.2f}"
            " (each request is a Redis script each way and a PostgreSQL usage row), so"
            " further gateways could only share what was left."
        )
    elif one["gateway_cores"] < 0.9:
        why_one = (
            " One gateway alone stays under a core at c=64 on a machine with CPU to spare,"
            " so not its CPU but its waiting (round trips to Redis and PostgreSQL, the"
            " difference from the SQLite layout) bounds it, and more gateways add the"
            " concurrency it lacks."
        )
    else:
        why_one = (
            f" One gateway at c=64 kept {one['gateway_cores']:.2f} of a core busy (one"
            " process, one event loop) with the machine"
            f" {one['machine_busy']:.0%} busy: a second and a third gateway had only the"
            " rest of it."
        )
    return " ".join((added, how, cpu, verdict + why_one))

"""docs/results.md as scripts/bench writes it: one section per benchmark kind, replaced by
the next run of that kind, the rest of the page kept."""

from __future__ import annotations

from pathlib import Path

from bench.report import TableData
from bench.results_page import (
    EARLIER_HEADING,
    RunFacts,
    begin_marker,
    end_marker,
    markdown_table,
    reload_stall_table,
    replace_section,
    section,
    usage_reports_table,
    write_section,
)

FACTS = RunFacts(
    started_at="2026-12-05T10:00+00:00",
    command="scripts/bench --reload-stall",
    host="box",
    cpus=2,
    python="3.11.7",
    commit="abc1234",
    load=3.25,
)
TABLE = TableData("Figures", ("target", "value"), (("gw", "1 | 2"), ("relay", "3")), frozenset({1}))
PAGE = f"# Benchmark results\n\nIntro.\n\n{EARLIER_HEADING}\n\nOld figures.\n"
RELOAD_RESULT = {
    "routes": 5000,
    "config_bytes": 629_145,
    "validate_s": 1.891,
    "start_to_first_answer_s": 2.65,
    "reload_applied_s": 2.33,
    "idle": {"requests": 600, "p50_ms": 1.2, "p99_ms": 4.9, "max_ms": 12.0},
    "during_reload": {"requests": 400, "p50_ms": 1.5, "p99_ms": 6.6, "max_ms": 20.5},
    "failed_during_reload": 0,
}


def test_a_table_escapes_pipes_and_flags_rows_with_errors() -> None:
    assert markdown_table(TABLE).splitlines() == [
        "| target | value |",
        "|---|---|",
        "| gw | 1 \\| 2 |",
        "| ! relay | 3 |",
    ]


def test_a_section_says_when_where_and_what_ran() -> None:
    text = section("reload-stall", FACTS, [TABLE])
    assert text.startswith(begin_marker("reload-stall"))
    assert text.endswith(end_marker("reload-stall"))
    assert (
        "2026-12-05T10:00+00:00 on box (2 CPUs, load average 3.2 at start, Python 3.11.7, "
        "code at abc1234)"
    ) in text
    assert "`scripts/bench --reload-stall`" in text
    assert "**Figures**" in text


def test_the_first_section_of_a_kind_goes_before_the_earlier_measurements() -> None:
    page = replace_section(PAGE, "full", section("full", FACTS, [TABLE]))
    assert page.index(begin_marker("full")) < page.index(EARLIER_HEADING)
    assert page.endswith("Old figures.\n")


def test_a_new_run_replaces_its_own_kind_only() -> None:
    first = replace_section(PAGE, "full", section("full", FACTS, [TABLE]))
    both = replace_section(first, "reload-stall", section("reload-stall", FACTS, [TABLE]))
    newer = TableData("Figures", ("target", "value"), (("gw", "9"),))
    again = replace_section(both, "full", section("full", FACTS, [newer]))
    full = again.split(begin_marker("full"), 1)[1].split(end_marker("full"), 1)[0]
    assert "| gw | 9 |" in full
    assert "1 \\| 2" not in full
    assert again.count(begin_marker("full")) == 1
    assert again.count(begin_marker("reload-stall")) == 1
    assert "Intro." in again
    assert "Old figures." in again


def test_write_section_updates_the_file(tmp_path: Path) -> None:
    path = tmp_path / "results.md"
    path.write_text(PAGE)
    write_section(
        path, "reload-stall", section("reload-stall", FACTS, [reload_stall_table(RELOAD_RESULT)])
    )
    text = path.read_text()
    assert (
        "| 5,000 (0.6 MiB) | 1.89 s | 2.65 s | 2.33 s | 4.9 / 12.0 ms | 6.6 / 20.5 ms | 0 |" in text
    )


def test_a_reload_with_failed_requests_is_flagged() -> None:
    table = reload_stall_table({**RELOAD_RESULT, "failed_during_reload": 3})
    assert table.flagged == frozenset({0})


def test_the_usage_reports_row() -> None:
    result = {
        "rows": 1_000_000,
        "idle": {"per_s": 1190.4, "p99_ms": 1.8, "max_ms": 5.8},
        "during_reports": {"per_s": 950.0, "p99_ms": 4.5, "max_ms": 12.25},
        "usage_reports": {"requests": 230, "p50_ms": 33.0, "max_ms": 160.0},
        "dashboard_refreshes": {"requests": 40, "p50_ms": 115.0, "max_ms": 300.0},
    }
    (row,) = usage_reports_table(result).rows
    assert row == (
        "1,000,000",
        "1,190, 1.8 / 5.8 ms",
        "950, 4.5 / 12.2 ms",
        "33.0 / 160.0 ms (230 done)",
        "115.0 ms",
    )

"""docs/results.md's fleet section (bench/fleet.py's figures): a row per layout, and a note
that gives the added latency, how the three gateways were loaded, and the three-to-one
ratio against the aim, with the limit when it is missed."""

from __future__ import annotations

from typing import Any

from bench.results_page import FLEET_AIM, fleet_notes, fleet_table


def load(rps: float, cores: float, connections: list[int], busy: float = 0.97) -> dict[str, Any]:
    return {
        "rps": rps, "p50_ms": 40.0, "p99_ms": 90.0, "requests": int(rps * 10), "errors": 0,
        "connections": connections, "load_average_after": 6.5, "gateway_cores": cores,
        "machine_busy": busy,
    }  # fmt: skip


def one_at_a_time(p50: float, p99: float) -> dict[str, Any]:
    return {"rps": 900.0, "p50_ms": p50, "p99_ms": p99, "requests": 9000, "errors": 0}


def result(three_rps: float, one_cores: float = 0.7, one_busy: float = 0.97) -> dict[str, Any]:
    return {
        "seconds": 10,
        "cpus": 2,
        "layouts": {
            "sqlite": {"gateways": 1, "c1": one_at_a_time(0.6, 2.0),
                       "c64": load(1200.0, 1.0, [64])},
            "fleet x1": {"gateways": 1, "c1": one_at_a_time(1.1, 3.0),
                         "c64": load(700.0, one_cores, [64], one_busy)},
            "fleet x3": {"gateways": 3, "c64": load(three_rps, 1.7, [21, 21, 22])},
        },
        "three_vs_one": round(three_rps / 700.0, 2),
    }  # fmt: skip


def test_a_row_per_layout() -> None:
    table = fleet_table(result(1500.0))
    assert [row[0] for row in table.rows] == ["sqlite", "fleet x1", "fleet x3"]
    assert table.rows[1][2] == "1.1 / 3.0 ms"
    assert table.rows[2][2] == "-"  # three gateways are loaded at c=64 only
    assert table.rows[2][3] == "1,500"
    assert not table.flagged


def test_the_note_names_the_limit_when_the_aim_is_missed() -> None:
    note = fleet_notes(result(1500.0))
    assert "+0.50 ms at p50 and +1.00 ms at p99" in note
    assert "c=21/21/22" in note
    assert f"2.14x one at c=64, short of the {FLEET_AIM}x aim" in note
    assert "this machine's CPUs" in note
    assert "2 CPUs" in note
    assert "already had the machine 97% busy" in note  # one gateway saturated it


def test_the_note_says_when_one_gateway_waits_rather_than_computes() -> None:
    note = fleet_notes(result(1500.0, one_cores=0.7, one_busy=0.5))
    assert "stays under a core" in note
    assert "already had the machine" not in note


def test_the_note_says_the_aim_is_met() -> None:
    note = fleet_notes(result(1800.0, one_cores=1.0, one_busy=0.6))
    assert f"2.57x one at c=64 (aim: {FLEET_AIM}x)" in note
    assert "short of" not in note
    assert "stays under a core" not in note
    assert "already had the machine" not in note
    assert "kept 1.00 of a core busy" in note

"""The benchmark's pure shaping: wrk parsing, percentiles, added latency, goals, JSON."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bench.errors import BenchError
from bench.loadgen import lua_script, parse_wrk, wrk_command
from bench.measure import percentile, stream_run
from bench.report import (
    added_ms,
    added_ttft_ms,
    evaluate_goals,
    goal_table,
    interleaved_table,
    load_table,
    process_table,
    run_json,
    stream_table,
)
from bench.results import (
    Goal,
    Interleaved,
    LoadStep,
    MicroResult,
    ProcessMemory,
    RunInfo,
    StreamRun,
    TargetName,
    TargetResult,
)
from bench.streaming import StreamSample, frame_kind

WRK_OUTPUT = """\
Running 5s test @ http://127.0.0.1:41825/v1/chat/completions
  2 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     2.61ms  612.00us  12.40ms   80.00%
    Req/Sec    11.10k     1.02k   13.00k    71.00%
  Latency Distribution
     50%  512.00us
     75%    2.80ms
     90%    3.87ms
     99%    1.20s
  110512 requests in 5.01s, 62.31MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
  Non-2xx or 3xx responses: 7
Requests/sec:  22058.30
Transfer/sec:     12.44MB
"""


def step(concurrency: int, rps: float, p50: float, p99: float, **kw: int) -> LoadStep:
    return LoadStep(
        concurrency=concurrency,
        duration_s=5.0,
        requests=int(rps * 5),
        rps=rps,
        p50_ms=p50,
        p90_ms=(p50 + p99) / 2,
        p99_ms=p99,
        non_2xx=kw.get("non_2xx", 0),
        socket_errors=kw.get("socket_errors", 0),
        cpu_ms_per_request=0.5,
    )


def stream(cpu_ms: float, ttft: float = 2.0, errors: int = 0) -> StreamRun:
    return StreamRun(
        streams=100,
        concurrency=4,
        completed=100 - errors,
        errors=errors,
        ttft_p50_ms=ttft,
        ttft_p99_ms=ttft * 2,
        total_p50_ms=26.0,
        total_p99_ms=30.0,
        chunks_per_stream=22,
        cpu_ms_per_stream=cpu_ms,
        first_error="HTTP 502" if errors else None,
    )


def target(name: TargetName, *steps: LoadStep, **changes: Any) -> TargetResult:
    base = TargetResult(
        name=name,
        load=steps,
        processes=1,
        start_to_first_answer_s=0.5,
        idle_rss_mb=60.0,
        idle_pss_mb=50.0,
        rss_after_load_mb=70.0,
        stream=stream(1.0),
    )
    return replace(base, **changes)


def sample_results() -> dict[TargetName, TargetResult]:
    return {
        "direct": target(
            "direct", step(1, 14000, 0.06, 0.11), step(64, 21000, 2.6, 4.5), stream=stream(0.6, 1.9)
        ),
        "gw": target("gw", step(1, 1500, 0.56, 3.0), step(64, 3000, 20.0, 90.0)),
        "litellm": target(
            "litellm",
            step(1, 40, 22.06, 40.0),
            step(64, 120, 500.0, 900.0),
            start_to_first_answer_s=9.5,
            idle_rss_mb=335.0,
            stream=stream(60.0, 30.0),
        ),
    }


MICRO = [
    MicroResult("routing decision, 10 targets, priority", 13.2, 20000, 7),
    MicroResult("routing decision, 10 targets, weighted", 28.0, 10000, 7),
]


def goals_by_figure(goals: list[Goal]) -> dict[str, Goal]:
    return {goal.figure.split(",")[0]: goal for goal in goals}


def test_parse_wrk_reads_rates_percentiles_and_errors() -> None:
    report = parse_wrk(WRK_OUTPUT)
    assert report.requests == 110512
    assert report.duration_s == pytest.approx(5.01)
    assert report.rps == pytest.approx(22058.30)
    assert report.p50_ms == pytest.approx(0.512)
    assert report.p90_ms == pytest.approx(3.87)
    assert report.p99_ms == pytest.approx(1200.0)
    assert report.non_2xx == 7
    assert report.socket_errors == 3


def test_parse_wrk_without_errors_counts_zero() -> None:
    clean = "\n".join(
        line for line in WRK_OUTPUT.splitlines() if "errors" not in line and "Non-2xx" not in line
    )
    report = parse_wrk(clean)
    assert (report.non_2xx, report.socket_errors) == (0, 0)


def test_parse_wrk_rejects_output_without_the_latency_distribution() -> None:
    with pytest.raises(BenchError, match="unexpected wrk output"):
        parse_wrk(WRK_OUTPUT.replace("     99%    1.20s\n", ""))


def test_lua_script_posts_the_body_verbatim() -> None:
    body = b'{"model": "bench", "messages": [{"role": "user", "content": "it\'s \\"hi\\""}]}'
    script = lua_script(body, "sk-bench-1")
    assert 'wrk.method = "POST"' in script
    assert f"wrk.body = [==[{body.decode()}]==]" in script
    assert 'wrk.headers["Content-Type"] = "application/json"' in script
    assert 'wrk.headers["Authorization"] = "Bearer sk-bench-1"' in script


def test_wrk_command_never_uses_more_threads_than_connections() -> None:
    command = wrk_command("wrk", "http://x/", Path("s.lua"), concurrency=1, duration_s=5, threads=2)
    assert command[1:4] == ["-t1", "-c1", "-d5s"]
    assert "--latency" in command
    command = wrk_command(
        "wrk", "http://x/", Path("s.lua"), concurrency=64, duration_s=0.4, threads=2
    )
    assert command[1:4] == ["-t2", "-c64", "-d1s"]


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile([3.0], 99) == 3.0
    assert percentile([], 50) is None


def test_stream_run_counts_broken_streams_apart() -> None:
    samples = [StreamSample(0.002, 0.026, 22, None)] * 9 + [
        StreamSample(None, 0.001, 0, "HTTP 502")
    ]
    run = stream_run(samples, concurrency=4, cpu_s=0.018)
    assert (run.streams, run.completed, run.errors) == (10, 9, 1)
    assert run.first_error == "HTTP 502"
    assert run.cpu_ms_per_stream == pytest.approx(2.0)
    assert run.ttft_p50_ms == pytest.approx(2.0)
    assert run.chunks_per_stream == 22


@pytest.mark.parametrize(
    ("payload", "kind"),
    [
        (b" [DONE]\n", "done"),
        (b' {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n', "other"),
        (b' {"choices":[{"index":0,"delta":{"content":" fox"}}]}\n', "token"),
        (b' {"error":{"message":"upstream failed"}}\n', "error"),
        (b" {not json\n", "error"),
    ],
)
def test_frame_kind(payload: bytes, kind: str) -> None:
    assert frame_kind(payload) == kind


def test_added_latency_is_target_minus_direct_at_the_same_concurrency() -> None:
    results = sample_results()
    p50, p99 = added_ms(results, "gw", 1)
    assert p50 == pytest.approx(0.50)
    assert p99 == pytest.approx(2.89)
    assert added_ms(results, "gw", 16) == (None, None)  # not run at 16
    assert added_ms(results, "direct", 1) == (None, None)
    assert added_ttft_ms(results, "gw") == pytest.approx(0.1)
    without_direct: dict[TargetName, TargetResult] = {"gw": results["gw"]}
    assert added_ms(without_direct, "gw", 1) == (None, None)


def test_load_table_keeps_and_flags_rows_with_errors() -> None:
    results = sample_results()
    results["gw"] = target("gw", step(1, 1500, 0.56, 3.0, non_2xx=4))
    table = load_table(results)
    assert [row[0] for row in table.rows] == ["direct", "direct", "gw", "litellm", "litellm"]
    assert table.flagged == frozenset({2})
    gw_row = dict(zip(table.columns, table.rows[2], strict=True))
    assert gw_row["errors"] == "4 non-2xx, 0 socket"
    assert gw_row["+p50"] == "+0.50"
    assert gw_row["req/s"] == "1,500"
    assert dict(zip(table.columns, table.rows[0], strict=True))["+p50"] == "n/a"


def test_stream_and_process_tables_show_every_target() -> None:
    results = sample_results()
    results["litellm"] = TargetResult(name="litellm", error="LiteLLM could not be installed")
    streams = stream_table(results)
    assert [row[0] for row in streams.rows] == ["direct", "gw"]
    results["gw"] = replace(
        results["gw"],
        processes=2,
        idle_processes=(ProcessMemory(10, "gw serve", 50.25), ProcessMemory(11, "worker", 20.0)),
    )
    processes = process_table(results)
    gw_row = dict(zip(processes.columns, processes.rows[1], strict=True))
    assert (gw_row["procs"], gw_row["largest MB"]) == ("2", "50.2")
    assert processes.rows[2][0] == "litellm"
    assert processes.rows[2][-1] == "LiteLLM could not be installed"
    assert processes.flagged == frozenset({2})


def test_goals_pass_and_fail_from_the_run() -> None:
    goals = goals_by_figure(evaluate_goals(sample_results(), MICRO))
    assert goals["added latency"].status == "pass"
    assert goals["added latency"].gw == "0.50 ms"
    assert goals["added latency"].litellm == "22.00 ms"
    assert goals["requests/s"].status == "pass"
    assert goals["requests/s"].note == "25.0 x LiteLLM"
    assert goals["CPU per 22-chunk stream"].status == "pass"
    assert goals["CPU per 22-chunk stream"].litellm == "60.00 ms"
    assert goals["start to first answered request"].status == "pass"
    assert goals["idle resident memory (RSS)"].litellm == "335.0 MB"
    assert goals["routing decision"].status == "pass"
    assert "weighted 28.0 us" in goals["routing decision"].note


def test_goals_fail_on_errors_and_slow_figures() -> None:
    results = sample_results()
    results["gw"] = target(
        "gw",
        step(1, 500, 2.5, 9.0),
        step(64, 3000, 20.0, 90.0, non_2xx=10),
        stream=stream(2.8),
        idle_rss_mb=81.0,
    )
    goals = goals_by_figure(evaluate_goals(results, MICRO))
    assert goals["added latency"].status == "fail"
    assert goals["requests/s"].status == "fail"
    assert "gw had errors" in goals["requests/s"].note
    assert goals["CPU per 22-chunk stream"].status == "fail"
    assert goals["idle resident memory (RSS)"].status == "fail"
    assert goal_table(evaluate_goals(results, MICRO)).flagged


def test_goals_without_litellm_or_direct_say_n_a() -> None:
    results = sample_results()
    del results["litellm"]
    goals = goals_by_figure(evaluate_goals(results, []))
    assert goals["requests/s"].status == "n/a"
    assert goals["requests/s"].gw == "3,000 req/s"
    assert goals["requests/s"].litellm == "n/a"
    assert goals["requests/s"].note == "run with --peer litellm"
    assert goals["routing decision"].status == "n/a"
    del results["direct"]
    goals = goals_by_figure(evaluate_goals(results, []))
    assert goals["added latency"].status == "n/a"
    assert goals["added latency"].note == "needs the direct target"


def test_the_relay_is_a_column_of_the_targets_table_only_when_it_ran() -> None:
    results = sample_results()
    assert "relay (floor)" not in goal_table(evaluate_goals(results, MICRO)).columns
    results["relay"] = target(
        "relay", step(1, 5000, 0.26, 1.0), step(64, 9000, 7.0, 20.0), stream=stream(0.9)
    )
    goals = evaluate_goals(results, MICRO)
    by_figure = goals_by_figure(goals)
    assert by_figure["added latency"].relay == "0.20 ms"
    assert by_figure["requests/s"].relay == "9,000 req/s"
    assert by_figure["CPU per 22-chunk stream"].relay == "0.90 ms"
    assert by_figure["routing decision"].relay == "n/a"
    table = goal_table(goals)
    assert table.columns[2:5] == ("gw", "relay (floor)", "LiteLLM")
    assert table.rows[2][2:5] == ("1.00 ms", "0.90 ms", "60.00 ms")
    assert by_figure["CPU per 22-chunk stream"].status == "pass"  # gw is judged, not the relay


def test_run_json_holds_measurements_derived_figures_and_verdicts() -> None:
    results = sample_results()
    goals = evaluate_goals(results, MICRO)
    info = RunInfo(started_at="2026-01-01T00:00:00+00:00", host="h", cpus=2, python="3.11.7")
    document = run_json(info, results, MICRO, goals)
    decoded = json.loads(json.dumps(document))
    assert decoded["schema"] == 1
    assert list(decoded["targets"]) == ["direct", "gw", "litellm"]
    gw = decoded["targets"]["gw"]
    assert gw["load"][0]["rps"] == 1500
    assert gw["added_ms"]["1"]["p50"] == 0.5  # rounded, not 0.5000000000000001
    assert gw["added_ttft_p50_ms"] == pytest.approx(0.1)
    assert gw["has_errors"] is False
    assert decoded["micro"][0]["median_us"] == 13.2
    assert [g["status"] for g in decoded["goals"]] == ["pass"] * 6 + ["n/a"] * 2
    assert "added_over_gw_ms" not in gw


def with_cache_targets(miss_p50: float, hit_p50: float) -> dict[TargetName, TargetResult]:
    results = sample_results()  # gw: p50 0.56 ms at c=1; direct: 0.06 ms
    results["gw-cache-miss"] = target("gw-cache-miss", step(1, 1400, miss_p50, 3.2))
    results["gw-cache-hit"] = target("gw-cache-hit", step(1, 1800, hit_p50, 2.0))
    return results


def test_a_cache_miss_is_judged_against_gw_with_the_cache_off() -> None:
    goals = goals_by_figure(evaluate_goals(with_cache_targets(0.64, 0.40), MICRO))
    miss = goals["cache miss: added p50 vs cache off"]
    assert (miss.target, miss.gw, miss.status) == ("<= 0.1 ms", "0.08 ms", "pass")
    assert miss.note == "steps apart: gw-cache-miss 0.64, gw 0.56"
    goals = goals_by_figure(evaluate_goals(with_cache_targets(0.70, 0.40), MICRO))
    assert goals["cache miss: added p50 vs cache off"].status == "fail"


def test_a_cache_hit_is_judged_against_direct_and_must_stay_under_a_millisecond() -> None:
    goals = goals_by_figure(evaluate_goals(with_cache_targets(0.60, 0.40), MICRO))
    hit = goals["cache hit: added p50 vs direct"]
    assert (hit.target, hit.gw, hit.status) == ("< 1 ms", "0.34 ms", "pass")
    goals = goals_by_figure(evaluate_goals(with_cache_targets(0.60, 1.06), MICRO))
    assert goals["cache hit: added p50 vs direct"].status == "fail"  # exactly 1 ms: not under


def test_cache_goals_need_their_baselines_and_fail_on_a_wrong_workload() -> None:
    results = with_cache_targets(0.60, 0.40)
    del results["gw"]
    miss = goals_by_figure(evaluate_goals(results, MICRO))["cache miss: added p50 vs cache off"]
    assert (miss.status, miss.note) == ("n/a", "needs the gw target")
    results = with_cache_targets(0.60, 0.40)
    results["gw-cache-miss"] = replace(results["gw-cache-miss"], error="12 of 900 requests hit")
    miss = goals_by_figure(evaluate_goals(results, MICRO))["cache miss: added p50 vs cache off"]
    assert miss.status == "fail"
    assert miss.note.startswith("12 of 900 requests hit")


def test_interleaved_rounds_judge_the_cache_on_the_median_of_paired_differences() -> None:
    results = with_cache_targets(0.80, 1.20)  # steps apart: both would fail
    rounds = Interleaved(
        duration_s=1.0,
        p50_ms={
            "direct": (0.06, 0.07, 0.06),
            "gw": (0.60, 0.70, 0.58),
            "gw-cache-miss": (0.62, 0.90, 0.61),  # one round hit by the machine's noise
            "gw-cache-hit": (0.30, 0.31, 0.29),
        },
        errors={"direct": 0, "gw": 0, "gw-cache-miss": 0, "gw-cache-hit": 0},
    )
    goals = goals_by_figure(evaluate_goals(results, MICRO, rounds))
    miss = goals["cache miss: added p50 vs cache off"]
    assert (miss.gw, miss.status) == ("0.03 ms", "pass")
    assert miss.note == "median of 3 interleaved rounds (+0.020, +0.200, +0.030); steps apart +0.24"
    hit = goals["cache hit: added p50 vs direct"]
    assert (hit.gw, hit.status) == ("0.24 ms", "pass")
    table = interleaved_table(rounds)
    assert [row[0] for row in table.rows] == ["direct", "gw", "gw-cache-miss", "gw-cache-hit"]
    miss_row = dict(zip(table.columns, table.rows[2], strict=True))
    assert miss_row["p50 by round"] == "0.620 0.900 0.610"
    assert (miss_row["+p50 vs direct"], miss_row["+p50 vs gw"]) == ("+0.560", "+0.030")
    assert dict(zip(table.columns, table.rows[1], strict=True))["+p50 vs gw"] == "n/a"
    assert not table.flagged
    failing = replace(rounds, errors={**rounds.errors, "gw-cache-miss": 3})
    goals = goals_by_figure(evaluate_goals(results, MICRO, failing))
    assert goals["cache miss: added p50 vs cache off"].status == "fail"
    assert interleaved_table(failing).flagged == frozenset({2})
    assert interleaved_table(None).rows == ()


def test_run_json_gives_the_cache_targets_their_figures_over_gw() -> None:
    results = with_cache_targets(0.64, 0.40)
    info = RunInfo(started_at="2026-01-01T00:00:00+00:00", host="h", cpus=2, python="3.11.7")
    document = run_json(info, results, MICRO, evaluate_goals(results, MICRO))
    targets = json.loads(json.dumps(document))["targets"]
    assert list(targets) == ["direct", "gw", "gw-cache-miss", "gw-cache-hit", "litellm"]
    assert targets["gw-cache-miss"]["added_over_gw_ms"]["1"] == {"p50": 0.08, "p99": 0.2}
    assert targets["gw-cache-hit"]["added_over_gw_ms"]["1"]["p50"] == -0.16
    assert targets["gw-cache-hit"]["added_ms"]["1"]["p50"] == 0.34
    assert document["interleaved_c1"] is None

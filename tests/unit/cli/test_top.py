"""``gw top`` without a server: frames computed from two hand-written scrapes (rates,
histogram quantiles over bucket increases, route and provider rows, breakers), and the
screen rendered into a fixed-size console."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from gw.cli.main import app
from gw.cli.top_frame import Quantiles, Scrape, compute_frame, increase, quantile
from gw.cli.top_view import top_renderable

BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def histogram(name: str, labels: str, counts: dict[float, int]) -> str:
    """Cumulative buckets from per-bucket counts (absent bounds: nothing in them)."""
    lines, total = [f"# TYPE {name} histogram"], 0
    for bound in (*BUCKETS, math.inf):
        total += counts.get(bound, 0)
        le = "+Inf" if math.isinf(bound) else repr(bound)
        lines.append(f'{name}_bucket{{le="{le}",{labels}}} {total}.0')
    lines.append(f"{name}_count{{{labels}}} {total}.0")
    lines.append(f"{name}_sum{{{labels}}} 1.0")
    return "\n".join(lines)


def scrape(
    *,
    chat_ok: int,
    chat_limited: int,
    unrouted: int,
    chat_buckets: dict[float, int],
    backup_buckets: dict[float, int],
    tokens_in: int,
    tokens_out: int,
    cost: float,
    attempts_failed: int,
    breaker: int,
    revision: int = 3,
) -> str:
    chat = 'model="gpt-a",provider="primary",route="chat"'
    backup = 'model="gpt-b",provider="backup",route="chat"'
    return "\n".join(
        [
            "# TYPE gw_requests_total counter",
            f'gw_requests_total{{error_code="",{chat},status_class="2xx",tenant="team-a"}} {chat_ok}.0',
            f'gw_requests_total{{error_code="",{backup},status_class="2xx",tenant="team-a"}} 10.0',
            f'gw_requests_total{{error_code="rate_limited",{chat},status_class="4xx",tenant="team-a"}} {chat_limited}.0',
            f'gw_requests_total{{error_code="model_not_found",model="",provider="",route="",status_class="4xx",tenant=""}} {unrouted}.0',
            histogram("gw_request_duration_seconds", chat, chat_buckets),
            histogram("gw_request_duration_seconds", backup, backup_buckets),
            histogram("gw_time_to_first_token_seconds", chat, {0.05: chat_ok}),
            "# TYPE gw_tokens_total counter",
            f'gw_tokens_total{{kind="input",{chat},tenant="team-a"}} {tokens_in}.0',
            f'gw_tokens_total{{kind="output",{chat},tenant="team-a"}} {tokens_out}.0',
            f'gw_tokens_total{{kind="cached_input",{chat},tenant="team-a"}} {tokens_in}.0',
            "# TYPE gw_cost_usd_total counter",
            f'gw_cost_usd_total{{{chat},tenant="team-a"}} {cost}',
            "# TYPE gw_upstream_attempts_total counter",
            f'gw_upstream_attempts_total{{model="gpt-a",outcome="answered",provider="primary"}} {chat_ok}.0',
            f'gw_upstream_attempts_total{{model="gpt-a",outcome="fell_back",provider="primary"}} {attempts_failed}.0',
            'gw_upstream_attempts_total{model="gpt-a",outcome="hedge_lost",provider="primary"} 7.0',
            "# TYPE gw_breaker_state gauge",
            f'gw_breaker_state{{model="gpt-a",provider="primary"}} {breaker}.0',
            'gw_breaker_state{model="gpt-b",provider="backup"} 0.0',
            'gw_breaker_state{model="gpt-c",provider="backup"} 1.0',
            "# TYPE gw_admission_in_flight gauge",
            "gw_admission_in_flight 4.0",
            "# TYPE gw_admission_waiting gauge",
            "gw_admission_waiting 1.0",
            "# TYPE gw_config_revision gauge",
            f"gw_config_revision {revision}.0",
            "# TYPE gw_build_info gauge",
            'gw_build_info{python="3.11.7",version="0.1.0"} 1.0',
            "",
        ]
    )


BEFORE = scrape(
    chat_ok=100,
    chat_limited=5,
    unrouted=2,
    chat_buckets={0.05: 60, 0.1: 45},
    backup_buckets={0.25: 10},
    tokens_in=1000,
    tokens_out=3000,
    cost=0.5,
    attempts_failed=3,
    breaker=0,
)
# Two seconds later: 40 more answers on primary (20 in 0.05-0.1 s, 20 in 0.25-0.5 s),
# 4 more rate limited, 2 unknown models; backup idle; primary's breaker now open.
AFTER = scrape(
    chat_ok=140,
    chat_limited=9,
    unrouted=4,
    chat_buckets={0.05: 60, 0.1: 69, 0.5: 20},
    backup_buckets={0.25: 10},
    tokens_in=1400,
    tokens_out=4200,
    cost=0.5036,
    attempts_failed=7,
    breaker=2,
    revision=4,
)


def test_rates_come_from_counter_increases() -> None:
    top = compute_frame(Scrape.parse(BEFORE), Scrape.parse(AFTER), 2.0)
    assert top.requests == 46
    assert top.rps == 23.0
    assert top.errors == 6
    assert top.error_rate == pytest.approx(6 / 46)
    assert top.errors_by_code == {"model_not_found": 2, "rate_limited": 4}
    assert top.input_tokens_per_s == 200.0  # cached_input is part of input: not added
    assert top.output_tokens_per_s == 600.0
    assert top.cost_usd_per_hour == pytest.approx(0.0036 / 2 * 3600)
    assert top.total_requests == 140 + 10 + 9 + 4
    assert top.total_cost_usd == pytest.approx(0.5036)
    assert (top.revision, top.version, top.in_flight, top.waiting) == (4, "0.1.0", 4, 1)


def test_latency_quantiles_interpolate_over_bucket_increases() -> None:
    top = compute_frame(Scrape.parse(BEFORE), Scrape.parse(AFTER), 2.0)
    # 44 new observations (24 in 0.05-0.1 s, 20 in 0.25-0.5 s); the old 105 are ignored.
    # p50: rank 22 of the 24 in (0.05, 0.1]; p90: rank 39.6 -> 15.6 of 20 in (0.25, 0.5].
    assert top.latency_ms.p50 == pytest.approx(50 + 50 * 22 / 24, abs=0.001)
    assert top.latency_ms.p90 == pytest.approx(250 + 250 * 15.6 / 20, abs=0.001)
    assert top.latency_ms.p99 == pytest.approx(250 + 250 * 19.56 / 20, abs=0.001)
    assert top.ttft_ms.p50 == pytest.approx(25 + 25 * 20 / 40, abs=0.001)


def test_routes_and_providers_rows() -> None:
    top = compute_frame(Scrape.parse(BEFORE), Scrape.parse(AFTER), 2.0)
    chat, unrouted = top.routes
    assert (chat.route, chat.requests, chat.rps, chat.errors) == ("chat", 44, 22.0, 4)
    assert chat.tokens_per_s == 800.0
    assert chat.p50_ms == pytest.approx(50 + 50 * 22 / 24, abs=0.001)
    assert chat.cost_usd_per_hour == pytest.approx(6.48)
    assert (unrouted.route, unrouted.requests, unrouted.errors) == ("", 2, 2)
    primary, backup = top.providers
    assert (primary.provider, primary.requests, primary.errors) == ("primary", 44, 4)
    assert (primary.attempts, primary.failed_attempts) == (44, 4)  # hedge_lost is no failure
    assert (backup.provider, backup.requests, backup.rps) == ("backup", 0, 0.0)
    assert backup.p50_ms is None  # nothing finished on backup in the interval
    assert "" not in [row.provider for row in top.providers]


def test_breaker_states() -> None:
    top = compute_frame(Scrape.parse(BEFORE), Scrape.parse(AFTER), 2.0)
    assert [(b.provider, b.model, b.state) for b in top.breakers] == [
        ("backup", "gpt-b", "closed"),
        ("backup", "gpt-c", "half_open"),
        ("primary", "gpt-a", "open"),
    ]


def test_a_restarted_server_counts_from_zero() -> None:
    assert increase(None, 5.0) == 5.0  # a new series
    assert increase(10.0, 3.0) == 3.0  # a reset
    assert increase(10.0, 12.0) == 2.0
    top = compute_frame(Scrape.parse(AFTER), Scrape.parse(BEFORE), 1.0)
    # A restart resets every series at once: backup's 10, which did not go down, are new too.
    assert top.requests == 100 + 5 + 2 + 10
    # And a histogram's buckets all start from zero together, so its quantiles stay sane.
    assert top.latency_ms.p50 is not None
    assert top.latency_ms.p50 <= (top.latency_ms.p99 or 0)


def test_no_traffic_gives_no_quantiles() -> None:
    top = compute_frame(Scrape.parse(AFTER), Scrape.parse(AFTER), 1.0)
    assert top.requests == 0
    assert top.error_rate is None
    assert top.latency_ms == Quantiles(p50=None, p90=None, p99=None)
    assert quantile(0.5, []) is None


def test_quantile_beyond_the_last_finite_bound_is_that_bound() -> None:
    assert quantile(0.99, [(1.0, 1.0), (2.0, 1.0), (math.inf, 10.0)]) == 2.0
    assert quantile(0.5, [(1.0, 4.0), (math.inf, 4.0)]) == 0.5


def test_the_screen_in_a_fixed_size_console() -> None:
    top = compute_frame(Scrape.parse(BEFORE), Scrape.parse(AFTER), 2.0)
    console = Console(width=100, height=30, record=True, force_terminal=False, color_system=None)
    console.print(top_renderable(top, "http://127.0.0.1:8787"))
    screen = console.export_text()
    lines = screen.splitlines()
    assert lines[0] == (
        "gw 0.1.0 at http://127.0.0.1:8787  revision 4  in flight 4  waiting 1  (last 2.0s)"
    )
    assert "requests 23.0/s  errors 13.0% (model_not_found 2, rate_limited 4)" in screen
    assert "latency p50 96  p90 445  p99 494 ms" in screen
    assert "tokens 200/s in, 600/s out  cost $6.48/h   since start 163 requests, $0.5036" in screen
    assert "primary/gpt-a open  backup/gpt-c half_open  1 closed" in screen
    chat = next(line for line in lines if "│ chat" in line)
    cells = [cell.strip() for cell in chat.split("│")[1:-1]]
    assert cells == ["chat", "22.0", "96", "494", "4", "800", "$6.48"]
    assert any("│ (no route) │   1.0 │" in line for line in lines)
    primary = next(line for line in lines if "│ primary" in line)
    assert "4/44" in primary
    assert max(len(line) for line in lines) <= 100


def test_no_server_fails_like_other_commands(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["top", "--once", "--state-dir", str(tmp_path)])
    assert result.exit_code == 1
    assert "no gw server is running for this state directory" in " ".join(result.stderr.split())

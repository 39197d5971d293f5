"""gw health rendering and the small decisions around the call: which address, which
message, how cells read."""

from __future__ import annotations

import io

import httpx
import msgspec
from rich.console import Console, RenderableType

from gw.cli.admin_client import ServerInfo, call_error, loopback_url
from gw.cli.health_cmd import failures_cell, latency_cell, locks_table, seconds_cell, targets_table
from gw.server.admin.api import AccountView, HealthReport, LatencyView, LockView, TargetView

URL = "http://127.0.0.1:8787"
TARGET = TargetView(
    provider="primary",
    model="gpt-a",
    routes=("chat",),
    status="unhealthy",
    reason="breaker opened: 3 consecutive failures; cooldown 10m",
    breaker="open",
    consecutive_failures=3,
    window_calls=3,
    window_failures=3,
    openings=1,
    cooldown_until=1_773_583_923.0,
    cooldown_remaining_s=599.6,
    trial_in_flight=False,
    latency=None,
    last_probe_ok=None,
)
LOCK = LockView(
    model="gpt-p", locked_until=1_773_583_923.0, remaining_s=42.0, reason="rate limited"
)


def render(renderable: RenderableType) -> str:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined,no-any-return]


def report(*accounts: AccountView) -> HealthReport:
    return HealthReport(now=1_773_583_323.0, revision=2, targets=(TARGET,), accounts=accounts)


def test_a_wildcard_bind_is_reached_over_loopback() -> None:
    def info(host: str | None, url: str = "http://x:1") -> ServerInfo:
        return ServerInfo(url=url, port=1, host=host)

    assert loopback_url(info("0.0.0.0")) == "http://127.0.0.1:1"
    assert loopback_url(info("::")) == "http://[::1]:1"
    assert loopback_url(info("127.0.0.1", URL)) == URL
    assert loopback_url(info("localhost", URL)) == URL
    assert loopback_url(info(None, URL)) == URL


def test_cells() -> None:
    assert seconds_cell(None) == "-"
    assert seconds_cell(4.25) == "4.2s"
    assert seconds_cell(599.6) == "10m00s"
    assert seconds_cell(61) == "1m01s"
    assert latency_cell(None) == "-"
    assert latency_cell(LatencyView(total_ms=1234.0, ttft_ms=None, samples=3)) == (
        "total 1,234 (n=3)"
    )
    assert latency_cell(LatencyView(total_ms=None, ttft_ms=5.0, samples=1)) == "ttft 5.0 (n=1)"


def test_the_failures_cell_says_only_what_there_is() -> None:
    target = report().targets[0]
    assert failures_cell(target) == "3 in a row, 3/3 in window"
    emptied = msgspec.structs.replace(target, window_calls=0, window_failures=0)
    assert failures_cell(emptied) == "3 in a row"  # not "3 (0/0)"
    calm = msgspec.structs.replace(emptied, consecutive_failures=0)
    assert failures_cell(calm) == "-"


def test_the_tables_show_the_facts() -> None:
    shown = render(targets_table(report()))
    for fact in ("primary/gpt-a", "unhealthy", "open", "3 in a row", "10m00s"):
        assert fact in shown
    assert "breaker opened: 3 consecutive failures" in shown

    idle = AccountView(provider="pool", account="west", locks=())
    assert "no account is locked (1 configured" in render(locks_table(report(idle), URL))
    locked = AccountView(provider="pool", account="east", locks=(LOCK,))
    shown = render(locks_table(report(idle, locked), URL))
    for fact in ("Account locks", "pool", "east", "gpt-p", "42.0s", "rate limited"):
        assert fact in shown
    assert "west" not in shown


def test_errors_say_what_the_server_said_and_what_to_do() -> None:
    body = {"error": {"code": "authentication_failed", "message": "no API key"}}
    refused = call_error(httpx.Response(401, json=body), "/admin/v1/health")
    assert "authentication_failed: no API key" in refused
    assert "GW_ADMIN_KEY" in refused
    broken = call_error(httpx.Response(500, text="<html>"), "/admin/v1/health")
    assert "HTTP 500" in broken
    assert "GW_ADMIN_KEY" not in broken

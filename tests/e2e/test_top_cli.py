"""`gw top --once --json` against a live gw taking traffic: the frame it computes from two
scrapes of /metrics shows that traffic by route, provider and error code."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import httpx
import pytest

from e2e.gw_process import GwServer, run_cli

pytestmark = pytest.mark.e2e


def send_traffic(gw: GwServer, stop: threading.Event, sent: list[int]) -> None:
    """Answered requests on route ``mock`` and unknown models, until told to stop."""
    with gw.client() as http:
        while not stop.is_set():
            for model in ("mock", "mock", "no-such-model"):
                http.post(
                    "/v1/chat/completions",
                    json={"model": model, "messages": [{"role": "user", "content": "hi"}]},
                )
                sent.append(1)


def test_top_once_json_shows_the_traffic_between_two_scrapes(tmp_path: Path) -> None:
    with GwServer(tmp_path / "state") as gw:
        stop, sent = threading.Event(), []
        traffic = threading.Thread(target=send_traffic, args=(gw, stop, sent), daemon=True)
        traffic.start()
        try:
            frame = json.loads(gw.cli("top", "--once", "--json", "--interval", "1").stdout)
        finally:
            stop.set()
            traffic.join(timeout=30)
        assert sent
        assert frame["interval_s"] >= 0.9
        assert frame["revision"] == 1
        assert frame["requests"] > 0
        assert frame["rps"] > 0
        assert frame["latency_ms"]["p50"] is not None
        assert set(frame["errors_by_code"]) == {"model_not_found"}
        assert 0 < frame["error_rate"] < 1
        routes = {row["route"]: row for row in frame["routes"]}
        assert routes["mock"]["requests"] > 0
        assert routes["mock"]["errors"] == 0
        assert routes[""]["errors"] == routes[""]["requests"]  # unknown models: no route
        (provider,) = frame["providers"]
        assert provider["provider"] == "mock"
        assert provider["attempts"] == routes["mock"]["requests"]
        assert frame["breakers"] == [{"provider": "mock", "model": "mock-1", "state": "closed"}]
        assert frame["total_requests"] >= frame["requests"]

        # The same frame, rendered for a terminal.
        shown = gw.cli("top", "--once", "--interval", "0.2").stdout
        assert "Routes" in shown
        assert "Providers" in shown
        assert f"at {gw.url}" in shown


def test_top_without_a_server_exits_1(tmp_path: Path) -> None:
    done = run_cli("top", "--once", "--state-dir", str(tmp_path), check=False)
    assert done.returncode == 1
    assert "no gw server is running" in " ".join(done.stderr.split())


def test_top_with_metrics_off_says_so(tmp_path: Path) -> None:
    config = tmp_path / "gw.yaml"
    config.write_text("telemetry: {metrics: false}\n")
    with GwServer(tmp_path / "state", config) as gw:
        done = gw.cli("top", "--once", check=False)
        assert httpx.get(f"{gw.url}/metrics").status_code == 404
    assert done.returncode == 1
    assert "telemetry.metrics is off" in " ".join(done.stderr.split())

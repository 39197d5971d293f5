"""SIGTERM while streams are in flight, through a live gw: the streams finish whole, gw
exits 0, and every request's usage row is in the ledger afterwards."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import httpx

from e2e.gw_process import GwServer, run_cli

CONFIG = """
providers:
  - {name: slow, kind: mock, mock: {chunk_delay: 40ms, words: 40}}
routes: [{name: slow, targets: [{provider: slow, model: slow-1}]}]
"""
STREAMS = 5
BODY = {"model": "slow", "messages": [{"role": "user", "content": "hi"}], "stream": True}


def test_sigterm_lets_streams_finish_then_exits_0_with_usage_recorded(tmp_path: Path) -> None:
    config = tmp_path / "gw.yaml"
    config.write_text(CONFIG)
    gw = GwServer(tmp_path / "state", config).start()
    started = threading.Barrier(STREAMS + 1, timeout=60)
    results: list[tuple[int, bool, int]] = []  # (status, ended with [DONE], content frames)
    lock = threading.Lock()

    def stream() -> None:
        with (
            httpx.Client(base_url=gw.url, timeout=60) as http,
            http.stream("POST", "/v1/chat/completions", json=BODY) as answer,
        ):
            frames, done, first = 0, False, True
            for line in answer.iter_lines():
                if not line.startswith("data: "):
                    continue
                if first:
                    started.wait()  # every stream is under way before SIGTERM
                    first = False
                if line == "data: [DONE]":
                    done = True
                    break
                frames += 1
            with lock:
                results.append((answer.status_code, done, frames))

    threads = [threading.Thread(target=stream) for _ in range(STREAMS)]
    try:
        for thread in threads:
            thread.start()
        started.wait()
        exit_status = gw.stop()  # SIGTERM, then waits for the process
        for thread in threads:
            thread.join(timeout=60)
    finally:
        gw.stop()
    assert exit_status == 0, gw.log()
    assert len(results) == STREAMS
    assert all(status == 200 and done for status, done, _ in results), results
    assert all(frames > 40 for _, _, frames in results), results  # every word arrived
    usage = run_cli("usage", "--by", "model", "--json", "--state-dir", str(tmp_path / "state"))
    rows = json.loads(usage.stdout)
    assert sum(row["requests"] for row in rows) == STREAMS

"""SIGTERM while streams are in flight, through a live gw: the streams finish whole, gw
exits 0, and every request's usage row is in the ledger afterwards; the same when stderr
blocks (nobody reads it)."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import threading
from pathlib import Path

import httpx

from e2e.gw_process import GW, GwServer, run_cli
from e2e.waiting import wait_until
from fakes.blocked_pipe import BlockedPipe

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


FAST_CONFIG = """
providers:
  - {name: fast, kind: mock, mock: {words: 3}}
routes: [{name: fast, targets: [{provider: fast, model: fast-1}]}]
"""
REQUESTS = 30


def test_a_stderr_nobody_reads_holds_neither_requests_nor_the_exit(tmp_path: Path) -> None:
    """stderr is a full pipe (a paused terminal or pager): requests are answered, SIGTERM
    still ends gw promptly with exit 0, and every usage row is in the ledger."""
    config = tmp_path / "gw.yaml"
    config.write_text(FAST_CONFIG)
    state = tmp_path / "state"
    state.mkdir()
    with BlockedPipe() as pipe, (tmp_path / "stdout.log").open("wb") as out:
        process = subprocess.Popen(
            [GW, "serve", "--port", "0", "--state-dir", str(state), "--config", str(config)],
            stdout=out,
            stderr=pipe.write_fd,
        )
        try:
            url = wait_for_url(process, state / "server.json")
            body = {"model": "fast", "messages": [{"role": "user", "content": "hi"}]}
            with httpx.Client(base_url=url, timeout=10) as http:
                for _ in range(REQUESTS):  # each logs a line that cannot be written
                    assert http.post("/v1/chat/completions", json=body).status_code == 200
            process.send_signal(signal.SIGTERM)
            exit_status = process.wait(timeout=20)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=5)
    assert exit_status == 0
    usage = run_cli("usage", "--by", "model", "--json", "--state-dir", str(state))
    assert sum(row["requests"] for row in json.loads(usage.stdout)) == REQUESTS


def wait_for_url(process: subprocess.Popen[bytes], server_file: Path) -> str:
    def url() -> str | None:
        assert process.poll() is None, "gw serve exited early"
        with contextlib.suppress(FileNotFoundError, json.JSONDecodeError):
            info = json.loads(server_file.read_text())
            if info.get("pid") == process.pid:
                return str(info["url"])
        return None

    return wait_until(url, "gw serve to start")

"""Usage is durable through kill -9: every request whose client got a whole 200 answer has
its usage row after a restart, the rows put back from the journal are marked recovered,
a torn journal line is skipped, and a journal that cannot be written fails no request.

Each round kills gw with SIGKILL while concurrent clients (the OpenAI SDK and httpx, in
every client format) are mid-request, once enough answers are in. In most rounds another
connection holds the database's write lock meanwhile (as a busy disk or a CLI could), so
no batch of that round is committed and every answered row must come back from the
journal; one round runs unhindered, the kill landing wherever it lands.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from e2e.gw_process import GwServer
from e2e.waiting import wait_until

CONFIG = """
auth: {mode: open}  # no API-key lookups: the held database lock must not stall requests
providers:
  - {name: mock, kind: mock, mock: {latency: 2ms, chunk_delay: 1ms, words: 24}}
routes: [{name: mock, targets: [{provider: mock, model: mock-1}]}]
"""
ROUNDS = (True, True, False)  # whether the database is write-locked during the round
KILL_AFTER = 40  # answers in a round before the kill; many more are in flight then
CLIENTS = 12
WAIT_S = 30.0
PROMPT = [{"role": "user", "content": "count my tokens"}]


# -- one request per client format; each returns gw's request id once the answer is whole --


def openai_chat(url: str, stream: bool) -> str:
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
    if not stream:
        raw = client.chat.completions.with_raw_response.create(model="mock", messages=PROMPT)  # type: ignore[arg-type]
        assert raw.parse().choices[0].message.content
        return raw.headers["x-gw-request-id"]
    with client.chat.completions.with_streaming_response.create(
        model="mock",
        messages=PROMPT,
        stream=True,  # type: ignore[arg-type]
    ) as response:
        chunks = list(response.parse())  # the SDK stops at [DONE], the last frame
        assert chunks[-1].choices[0].finish_reason == "stop"
        return response.headers["x-gw-request-id"]


def posted(url: str, path: str, body: dict[str, Any], last: bytes | None = None) -> str:
    """POST with httpx and read the whole body (a cut one raises): JSON that parses, or a
    stream whose closing frame holds ``last``."""
    with httpx.Client(base_url=url, timeout=30.0) as client:
        response = client.post(path, json=body)
    assert response.status_code == 200, response.text
    if last is None:
        assert response.json()
    else:
        frames = [frame for frame in response.content.split(b"\n\n") if frame.strip()]
        assert last in frames[-1], frames[-1]
    return response.headers["x-gw-request-id"]


def responses(url: str, stream: bool) -> str:
    body = {"model": "mock", "input": "count my tokens", "stream": stream}
    return posted(url, "/v1/responses", body, b"response.completed" if stream else None)


def anthropic(url: str, stream: bool) -> str:
    body = {"model": "mock", "max_tokens": 64, "messages": PROMPT, "stream": stream}
    return posted(url, "/v1/messages", body, b"message_stop" if stream else None)


def gemini(url: str, stream: bool) -> str:
    action = "streamGenerateContent?alt=sse" if stream else "generateContent"
    body = {"contents": [{"role": "user", "parts": [{"text": "count my tokens"}]}]}
    return posted(url, f"/v1beta/models/mock:{action}", body, b'"finishReason"' if stream else None)


def embeddings(url: str, _stream: bool) -> str:
    body = {"model": "mock", "input": ["count my tokens"]}
    return posted(url, "/v1/embeddings", body)


STREAMING = (openai_chat, responses, anthropic, gemini)
WHOLE = (*STREAMING, embeddings)


# -- the rounds -------------------------------------------------------------------------


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "gw.yaml"
    path.write_text(CONFIG)
    return path


def stored_usage(state: Path) -> dict[str, int]:
    """request id -> recovered, read from the database file."""
    with sqlite3.connect(state / "gw.db") as db:
        return dict(db.execute("SELECT request_id, recovered FROM usage").fetchall())


def stored_traces(state: Path) -> set[str]:
    with sqlite3.connect(state / "gw.db") as db:
        return {row[0] for row in db.execute("SELECT request_id FROM traces")}


def last_run_losses(server: GwServer) -> dict[str, Any]:
    """``trace_losses.last_run`` once the start has counted a killed run's losses."""
    found: dict[str, Any] = {}

    def counted() -> bool:
        found.update(server.cli_json("status")["trace_losses"]["last_run"])
        return found["routed"] is not None

    wait_until(counted, "the count of the traces the killed run lost")
    return found


def kill_mid_load(server: GwServer, stream: bool) -> list[str]:
    """Clients ask until the kill; returns the ids of the whole answers they got."""
    assert server.process is not None
    process = server.process
    answered: list[str] = []
    lock = threading.Lock()
    killed = threading.Event()
    kinds = STREAMING if stream else WHOLE

    def client(worker: int) -> None:
        n = worker
        while not killed.is_set():
            ask = kinds[n % len(kinds)]
            n += CLIENTS
            try:
                request_id = ask(server.url, stream)
            except (httpx.HTTPError, openai.APIError, AssertionError):
                if killed.is_set():
                    return  # cut or refused by the kill: not answered, no row owed
                raise
            with lock:
                answered.append(request_id)
                if len(answered) == KILL_AFTER:
                    # Set first: a client whose request the kill cuts must see it is set.
                    killed.set()
                    process.send_signal(signal.SIGKILL)

    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        for done in [pool.submit(client, worker) for worker in range(CLIENTS)]:
            done.result()
    assert process.wait(timeout=WAIT_S) == -signal.SIGKILL
    return answered


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_kill_9_under_load_loses_no_usage_row(tmp_path: Path, config: Path, stream: bool) -> None:
    state = tmp_path / "state"
    owed: set[str] = set()
    for locked in ROUNDS:
        rows_before = set(stored_usage(state)) if (state / "gw.db").exists() else set()
        server = GwServer(state, config).start()
        blocker = sqlite3.connect(state / "gw.db", isolation_level=None)
        try:
            if locked:
                blocker.execute("BEGIN IMMEDIATE")  # no batch of this round is committed
            answered = kill_mid_load(server, stream)
        finally:
            blocker.close()
            server.stop()
        owed |= set(answered)
        with GwServer(state, config) as restarted:  # recovers the journal before it serves
            stored = stored_usage(state)
            missing = owed - stored.keys()
            assert not missing, f"{len(missing)} answered requests have no usage row"
            report = restarted.cli_json("status")["usage_journal"]
            losses = last_run_losses(restarted)
            status_text = restarted.cli("status").stdout
        recovered = report["recovered_at_start"]
        # Every trace the killed run lost is counted after the restart: its usage rows
        # without a trace, as the test finds them in the database.
        untraced = stored.keys() - rows_before - stored_traces(state)
        assert losses["ended"] == "killed"
        assert losses["stopped_at"] is None
        assert losses["routed"] == len(untraced)
        if locked:  # no trace of the round was committed either
            assert untraced >= set(answered)
        assert "the last run was killed having lost" in restarted.log()
        assert f"last run (killed) {losses['routed'] + losses['unrouted']}" in status_text
        assert recovered["error"] is None
        if locked:  # every row of the round came back from the journal, marked
            assert all(stored[request_id] == 1 for request_id in answered)
            assert recovered["rows"] >= len(answered)
            # Their traces were queued behind the same lock: lost with the process, counted.
            assert recovered["without_trace"] == recovered["rows"]
            assert "usage journal: the last run ended without writing" in restarted.log()
        assert report["errors"] == 0
    rows = restarted.cli_json("usage", "--by", "route")
    assert sum(row["recovered"] for row in rows) == sum(stored.values()) > 0


def row_line(request_id: str) -> bytes:
    now = time.time()
    day, month = (
        time.strftime("d:%Y-%m-%d", time.gmtime(now)),
        time.strftime("m:%Y-%m", time.gmtime(now)),
    )
    row = {
        "request_id": request_id, "time": now, "day": day, "month": month, "tenant": None,
        "key_id": None, "route": "mock", "provider": "mock", "model": "mock-1", "status": 200,
        "error_code": None, "input_tokens": 7, "output_tokens": 11, "usage_source": "estimate",
    }  # fmt: skip
    return json.dumps(row).encode() + b"\n"


def test_a_torn_journal_line_is_skipped_and_the_whole_ones_recovered(
    tmp_path: Path, config: Path
) -> None:
    journal = tmp_path / "state" / "usage-journal"
    journal.mkdir(parents=True)
    torn = row_line("req-torn")[:-30]  # the kill cut this write: its answer never finished
    (journal / "usage-1-000000.jsonl").write_bytes(row_line("req-one") + row_line("req-two") + torn)
    with GwServer(tmp_path / "state", config) as server:
        report = server.cli_json("status")["usage_journal"]
        stored = stored_usage(server.state_dir)
        usage = server.cli_json("usage", "--by", "route")
        assert list(journal.glob("usage-1-*")) == []  # read, put back, deleted
        openai_chat(server.url, False)  # journaled in this run's own segment ...
        assert list(journal.glob("usage-*.jsonl"))
    assert list(journal.glob("usage-*.jsonl")) == []  # ... which a clean stop deletes
    assert report["recovered_at_start"] == {
        "rows": 2, "without_trace": 2, "torn_lines": 1, "error": None
    }  # fmt: skip
    assert stored == {"req-one": 1, "req-two": 1}
    assert usage == [
        {"route": "mock", "requests": 2, "errors": 0, "input_tokens": 14,
         "cached_input_tokens": 0, "output_tokens": 22, "reasoning_tokens": 0, "cost_usd": 0.0,
         "unpriced": 2, "estimated": 2, "recovered": 2, "cached_share": 0.0}  # no cost: no price
    ]  # fmt: skip
    assert "2 of them without a trace" in server.log()
    assert "1 torn lines skipped" in server.log()


def test_a_journal_that_cannot_be_written_fails_no_request(tmp_path: Path, config: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "usage-journal").write_text("a file where the journal's directory should be")
    with GwServer(state, config) as server:
        ids = [kind(server.url, False) for kind in WHOLE]
        ids += [kind(server.url, True) for kind in STREAMING]
        wait_until(lambda: set(ids) <= stored_usage(state).keys(), "the usage rows")
        report = server.cli_json("status")["usage_journal"]
        status_text = server.cli("status").stdout
    assert report["errors"] >= 1
    assert report["appended"] == 0
    assert report["skipped"] == len(ids)
    assert "cannot create" in server.log()
    assert "rows not journaled" in status_text
    assert set(stored_usage(state).values()) == {0}

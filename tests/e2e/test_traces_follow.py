"""`gw traces --follow --json` on a real store file: the last traces first, then each trace
as the test writes it (in write order, even when it started earlier), one JSON object per
line; Ctrl-C exits 0."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import signal
import subprocess
import threading
from pathlib import Path
from typing import IO, Any

import pytest

from gw.record import TraceRecord
from gw.store import SqliteStore

from e2e.gw_process import GW

pytestmark = pytest.mark.e2e
LINE_TIMEOUT_S = 20.0


def trace(request_id: str, time: float, client_request_id: str | None = None) -> TraceRecord:
    return TraceRecord(
        request_id=request_id,
        time=time,
        endpoint="chat.completions",
        requested_model="chat",
        stream=False,
        status=200,
        revision=1,
        latency_ms=12.5,
        provider="mock",
        model="mock-1",
        client_request_id=client_request_id,
    )


def write(path: Path, *traces: TraceRecord) -> None:
    async def body() -> None:
        async with await SqliteStore.open(path) as store:
            await store.write_traces(traces)

    asyncio.run(body())


class Lines:
    """A subprocess's stdout lines, read by a thread, taken with a deadline."""

    def __init__(self, stream: IO[str]) -> None:
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self._lines.put(line)

    def take(self, count: int) -> list[dict[str, Any]]:
        return [json.loads(self._lines.get(timeout=LINE_TIMEOUT_S)) for _ in range(count)]

    def empty(self) -> bool:
        return self._lines.empty()


def follow(home: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [GW, "traces", "--follow", "--json", "--state-dir", str(home), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )


def stop(process: subprocess.Popen[str]) -> int:
    process.send_signal(signal.SIGINT)
    try:
        return process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)
        raise


def test_follow_prints_the_last_traces_then_new_ones_as_written(tmp_path: Path) -> None:
    home = tmp_path / "state"
    database = home / "gw.db"
    write(database, *(trace(f"req-old-{n}", 1000.0 + n) for n in range(5)))
    process = follow(home, "--limit", "3")
    try:
        assert process.stdout is not None
        lines = Lines(process.stdout)
        assert [line["request_id"] for line in lines.take(3)] == [
            "req-old-2",
            "req-old-3",
            "req-old-4",
        ]
        write(database, trace("req-new-1", 2000.0))
        (new,) = lines.take(1)
        assert new["request_id"] == "req-new-1"
        assert new["time"] == "1970-01-01T00:33:20.000Z"
        assert new["status"] == 200
        assert new["provider"] == "mock"
        # A long request is written after shorter ones that started later: still shown.
        write(database, trace("req-new-2", 2100.0), trace("req-new-3", 2050.0))
        write(database, *(trace(f"req-burst-{n}", 3000.0 + n) for n in range(700)))
        ids = [line["request_id"] for line in lines.take(702)]
        assert ids[:2] == ["req-new-2", "req-new-3"]
        assert ids[2:] == [f"req-burst-{n}" for n in range(700)]
    finally:
        code = stop(process)
    assert code == 0, process.stderr.read() if process.stderr else ""
    assert lines.empty()


def test_follow_waits_for_the_store_and_filters_by_client_request_id(tmp_path: Path) -> None:
    home = tmp_path / "state"
    process = follow(home, "--client-request-id", "mine")
    try:
        assert process.stdout is not None
        lines = Lines(process.stdout)
        home.mkdir()
        write(home / "gw.db", trace("req-1", 1.0, "other"), trace("req-2", 2.0, "mine"))
        (line,) = lines.take(1)
        assert line["request_id"] == "req-2"
        assert line["client_request_id"] == "mine"
    finally:
        code = stop(process)
    assert code == 0

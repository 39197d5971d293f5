"""Storage faults under a live gw: a full disk, a removed state directory, an unwritable
-shm. Each time /readyz turns unready with a stable code, the server keeps answering
inference and stays up, and once the fault is over it turns ready again and every usage
row queued meanwhile is written (counted with ``gw usage``).

The full disk is a size-limited tmpfs mounted for the test and the unwritable -shm an
immutable file (``chattr +i``, which held SIGBUS for gw before): both need root, and
skip with the reason without it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from e2e.gw_process import GwServer, run_cli
from e2e.waiting import wait_until

WAIT_S = 60.0  # a full disk and its recovery on a loaded 2-core machine: a generous bound
REQUESTS = 20
CONFIG = """\
providers: [{name: mock, kind: mock}]
routes: [{name: chat, targets: [{provider: mock, model: m}]}]
"""
BODY = {"model": "chat", "messages": [{"role": "user", "content": "hi"}]}


def readyz(gw: GwServer) -> tuple[int, dict[str, Any]]:
    with gw.client() as http:
        answer = http.get("/readyz")
        return answer.status_code, answer.json()


def unready_code(gw: GwServer) -> str | None:
    status, body = readyz(gw)
    return body.get("code") if status == 503 else None


def usage_requests(database_dir: Path) -> int:
    rows = run_cli("usage", "--by", "tenant", "--json", "--state-dir", str(database_dir))
    return sum(int(row["requests"]) for row in json.loads(rows.stdout))


def alive(gw: GwServer) -> bool:
    return gw.process is not None and gw.process.poll() is None


def send(gw: GwServer, count: int) -> None:
    with httpx.Client(base_url=gw.url, timeout=30) as http:
        for _ in range(count):
            answer = http.post("/v1/chat/completions", json=BODY)
            assert answer.status_code == 200, answer.text


def need_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: mounting a size-limited tmpfs, chattr +i")


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "gw.yaml"
    path.write_text(CONFIG)
    return path


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    need_root()
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(directory: Path) -> Path:
    """Write a file until the disk is full; returns it (delete it to free the space)."""
    filler = directory / "filler"
    with filler.open("wb") as out, contextlib.suppress(OSError):
        while True:
            out.write(b"\0" * 65536)
            out.flush()
    return filler


def test_a_full_disk_makes_gw_unready_and_queued_usage_is_written_after(
    small_disk: Path, config: Path
) -> None:
    state = small_disk / "state"
    with GwServer(state, config) as gw:
        send(gw, 3)
        wait_until(lambda: usage_requests(state) == 3, "the first rows written", WAIT_S)
        filler = fill(small_disk)
        code = wait_until(lambda: unready_code(gw), "/readyz unready on a full disk", WAIT_S)
        assert code in ("disk_full", "writes_failing")
        send(gw, REQUESTS)  # answered, their usage queued
        assert unready_code(gw) is not None
        filler.unlink()
        wait_until(lambda: readyz(gw)[0] == 200, "/readyz ready once space is freed", WAIT_S)
        wait_until(
            lambda: usage_requests(state) == 3 + REQUESTS, "every queued row written", WAIT_S
        )
        assert alive(gw)
    assert "the state store cannot be written (disk_full)" in gw.log()


def test_a_removed_state_directory_makes_gw_unready_until_it_is_back(
    tmp_path: Path, config: Path
) -> None:
    state = tmp_path / "state"
    log_dir = tmp_path / "logs"  # the server's log, outside the directory to be removed
    log_dir.mkdir()
    gw = GwServer(state, config)
    gw.log_path = log_dir / "serve.log"
    with gw:
        send(gw, 3)
        wait_until(lambda: usage_requests(state) == 3, "the first rows written", WAIT_S)
        shutil.rmtree(state)
        assert (
            wait_until(lambda: unready_code(gw), "/readyz unready", WAIT_S) == "state_dir_removed"
        )
        send(gw, REQUESTS)
        assert unready_code(gw) == "state_dir_removed"
        state.mkdir()
        # Ready again before any write: the check itself opens the database at the path.
        wait_until(lambda: readyz(gw)[0] == 200, "/readyz ready once the directory is back", WAIT_S)
        assert (state / "gw.db").exists()
        # A new database at the path: the rows queued while it was gone, none lost.
        wait_until(lambda: usage_requests(state) == REQUESTS, "every queued row written", WAIT_S)
    log = gw.log()
    assert "the state store cannot be written (state_dir_removed)" in log
    assert "the state store can be written again" in log


def test_an_unwritable_shm_makes_gw_unready_instead_of_crashing(
    tmp_path: Path, config: Path
) -> None:
    need_root()
    state = tmp_path / "state"
    with GwServer(state, config) as gw:
        send(gw, 3)
        wait_until(lambda: usage_requests(state) == 3, "the first rows written", WAIT_S)
        shm = state / "gw.db-shm"
        done = subprocess.run(
            ["chattr", "+i", str(shm)], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            pytest.skip(f"chattr +i is not supported here: {done.stderr.strip()}")
        try:
            code = wait_until(lambda: unready_code(gw), "/readyz unready", WAIT_S)
            assert code == "shm_unwritable"
            send(gw, REQUESTS)
            assert alive(gw)
        finally:
            subprocess.run(["chattr", "-i", str(shm)], check=False)
        wait_until(lambda: readyz(gw)[0] == 200, "/readyz ready once the -shm is writable", WAIT_S)
        wait_until(
            lambda: usage_requests(state) == 3 + REQUESTS, "every queued row written", WAIT_S
        )
        assert alive(gw)
    assert "cannot write" in gw.log()

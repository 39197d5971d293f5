"""`gw state backup` and `gw state restore` against a live gw: an online backup holds the
traces written so far, a restore is refused while the server runs and puts the backup
back once it stopped, keeping the replaced database aside."""

from __future__ import annotations

import json
import signal
import socket
import sqlite3
from pathlib import Path

import pytest

from e2e.gw_process import GwServer, run_cli
from e2e.waiting import wait_until

pytestmark = pytest.mark.e2e


def send(server: GwServer, text: str) -> str:
    with server.client() as client:
        response = client.post(
            "/v1/chat/completions",
            json={"model": "mock", "messages": [{"role": "user", "content": text}]},
        )
    assert response.status_code == 200, response.text
    request_id = response.headers["x-gw-request-id"]
    server.wait_for_trace(request_id)
    return request_id


def trace_ids(home: Path) -> set[str]:
    done = run_cli("traces", "--json", "--limit", "100", "--state-dir", str(home))
    return {row["request_id"] for row in json.loads(done.stdout)}


def test_backup_while_running_then_restore_after_stop(tmp_path: Path) -> None:
    home = tmp_path / "state"
    copy = tmp_path / "backups" / "gw-backup.db"
    server = GwServer(home).start()
    try:
        backed_up = {send(server, f"hello {n}") for n in range(3)}

        summary = server.cli_json("state", "backup", str(copy))
        assert summary["path"] == str(copy)
        assert summary["traces"] >= 3
        assert summary["config_revisions"] >= 1
        assert summary["bytes"] == copy.stat().st_size
        with sqlite3.connect(copy) as conn:
            stored = {row[0] for row in conn.execute("SELECT request_id FROM traces")}
        assert backed_up <= stored

        again = server.cli("state", "backup", str(copy), check=False)
        assert again.returncode != 0
        assert "--force" in " ".join(again.stderr.split())
        assert server.cli("state", "backup", str(copy), "--force", check=False).returncode == 0

        later = send(server, "after the backup")
        refused = server.cli("state", "restore", str(copy), check=False)
        assert refused.returncode != 0
        assert "running" in " ".join(refused.stderr.split())
        assert later in trace_ids(home)  # the refused restore changed nothing
    finally:
        assert server.stop() == 0

    result = json.loads(server.cli("state", "restore", str(copy), "--json").stdout)
    assert result["restored_from"] == str(copy)
    assert result["database"]["traces"] == summary["traces"]
    aside = Path(result["moved_aside"])
    assert aside.exists()
    assert aside.name.startswith("gw.db.bak-")
    assert not (home / "gw.db-wal").exists()
    assert not (home / "gw.db-shm").exists()

    restored = trace_ids(home)
    assert backed_up <= restored
    assert later not in restored
    with sqlite3.connect(aside) as conn:  # the replaced database is whole, later trace included
        assert conn.execute("SELECT count(*) FROM traces WHERE request_id = ?", (later,)).fetchone()


def test_restore_refuses_a_file_that_is_not_a_gw_database(tmp_path: Path) -> None:
    home = tmp_path / "state"
    home.mkdir()
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    done = run_cli("state", "restore", str(junk), "--state-dir", str(home), check=False)
    assert done.returncode != 0
    assert "not a gw database" in " ".join(done.stderr.split())
    assert not (home / "gw.db").exists()

    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    done = run_cli("state", "restore", str(other), "--state-dir", str(home), check=False)
    assert done.returncode != 0
    assert "not a gw database" in " ".join(done.stderr.split())


def listening(server: GwServer) -> bool:
    try:
        socket.create_connection(("127.0.0.1", server.port), timeout=0.5).close()
    except OSError:
        return False
    return True


def wait_until_not_listening(server: GwServer) -> None:
    """uvicorn closes its socket when shutdown begins; gw's close() runs right after."""
    wait_until(
        lambda: not listening(server),
        lambda: f"gw to stop listening after SIGTERM:\n{server.log()}",
    )


def test_restore_is_refused_until_a_stopping_server_has_flushed(tmp_path: Path) -> None:
    home = tmp_path / "state"
    copy = tmp_path / "gw-backup.db"
    server = GwServer(home).start()
    try:
        server.cli("state", "backup", str(copy))
        # Hold the write lock, so the usage row of the next request stays queued and the
        # server, once told to stop, keeps flushing until the lock is let go.
        blocker = sqlite3.connect(home / "gw.db", isolation_level=None, timeout=30)
        try:
            blocker.execute("BEGIN IMMEDIATE")
            with server.client() as client:
                response = client.post(
                    "/v1/chat/completions",
                    json={"model": "mock", "messages": [{"role": "user", "content": "hi"}]},
                )
            assert response.status_code == 200, response.text
            assert server.process is not None
            server.process.send_signal(signal.SIGTERM)
            wait_until_not_listening(server)

            refused = server.cli("state", "restore", str(copy), check=False)

            assert server.process.poll() is None  # still flushing
            assert (home / "server.json").exists()
            assert refused.returncode != 0, refused.stdout
            assert "running" in " ".join(refused.stderr.split())
        finally:
            blocker.close()  # ends the transaction: the flush goes through
        assert server.process.wait(timeout=30) == 0, server.log()
    finally:
        server.stop()
    assert not (home / "server.json").exists()  # deleted once everything was written
    rows = json.loads(run_cli("usage", "--by", "model", "--json", "--state-dir", str(home)).stdout)
    assert sum(row["requests"] for row in rows) == 1

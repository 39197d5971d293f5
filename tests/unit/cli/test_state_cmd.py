"""``gw state backup`` and ``gw state restore`` through the CLI: the live database is never
a backup destination, and a restore says which config revisions it kept."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from rich.status import Status
from typer.testing import CliRunner

from gw.cli import state_cmd
from gw.cli.main import app
from gw.store import SqliteStore


def make_database(path: Path, *hashes: str) -> None:
    async def body() -> None:
        async with await SqliteStore.open(path) as store:
            for h in hashes:
                await store.record_revision(config_hash=h, source="file", time=1.0)

    asyncio.run(body())


def gw(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("name", ["gw.db", "gw.db-wal", "gw.db-shm", "gw.db-journal"])
def test_backup_onto_the_live_database_fails_and_leaves_it_alone(tmp_path: Path, name: str) -> None:
    home = tmp_path / "state"
    home.mkdir()
    make_database(home / "gw.db", "h1")
    before = hashlib.sha256((home / "gw.db").read_bytes()).hexdigest()

    code, out, err = gw("state", "backup", str(home / name), "--force", "--state-dir", str(home))

    assert code != 0
    assert out == ""
    message = " ".join(err.split())
    assert "backup failed" in message
    assert "live state database" in message
    assert "gw-backup.db" in message  # what to do instead
    assert hashlib.sha256((home / "gw.db").read_bytes()).hexdigest() == before


def test_restore_reports_the_revisions_it_kept(tmp_path: Path) -> None:
    home = tmp_path / "state"
    home.mkdir()
    copy = tmp_path / "copy.db"
    make_database(copy, "h1")
    make_database(home / "gw.db", "h1", "h2", "h3")

    code, out, err = gw("state", "restore", str(copy), "--json", "--state-dir", str(home))

    assert code == 0, err
    result = json.loads(out)
    assert result["carried_revisions"] == [2, 3]
    assert result["warning"] is None

    make_database(copy, "h0")  # copy: 1 (h1), 2 (h0)
    code, out, err = gw("state", "restore", str(copy), "--state-dir", str(home))
    assert code == 0, err
    assert "kept config revisions 3 of the previous database" in " ".join(out.split())


def test_a_spinner_shows_on_a_terminal_only_and_never_with_json(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    terminal = Console(file=io.StringIO(), force_terminal=True)
    monkeypatch.setattr(state_cmd, "stderr", terminal)
    assert isinstance(state_cmd.working("backing up [gw.db]", quiet=False), Status)
    assert not isinstance(state_cmd.working("backing up", quiet=True), Status)
    monkeypatch.setattr(state_cmd, "stderr", Console(file=io.StringIO(), force_terminal=False))
    assert not isinstance(state_cmd.working("backing up", quiet=False), Status)

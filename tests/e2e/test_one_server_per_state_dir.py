"""One ``gw serve`` per state directory: a second one is refused at start, naming the
first, which goes on serving and stays visible to the CLI; ``gw state restore`` is refused
while it runs, even when its server.json is gone."""

from __future__ import annotations

import json
from pathlib import Path

from e2e.gw_process import GwServer, run_cli


def test_a_second_server_on_the_same_state_dir_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with GwServer(state) as first:
        second = run_cli("serve", "--port", "0", "--state-dir", str(state), check=False)
        assert second.returncode != 0
        assert f"another gw serve (pid {first.process.pid}, {first.url})" in second.stderr
        assert "--state-dir" in second.stderr
        facts = json.loads((state / "server.json").read_text())
        assert facts["pid"] == first.process.pid  # not overwritten by the refused one
        assert first.cli("status", "--json").returncode == 0
    # Once the first has stopped, the directory is free again.
    with GwServer(state) as again:
        assert again.cli("status", "--json").returncode == 0


def test_restore_is_refused_while_a_server_holds_the_lock(tmp_path: Path) -> None:
    state = tmp_path / "state"
    backup = tmp_path / "backup.db"
    with GwServer(state) as server:
        server.cli("state", "backup", str(backup))
        (state / "server.json").unlink()  # as if removed by hand, or by an older gw
        refused = server.cli("state", "restore", str(backup), check=False)
        assert refused.returncode != 0
        assert "is running on" in refused.stderr
    run_cli("state", "restore", str(backup), "--state-dir", str(state))  # stopped: allowed

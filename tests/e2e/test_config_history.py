"""Config revisions through a live gw and its CLI: history, diff, rollback, status.

Each revision routes ``chat`` to a different mock model. Waits are bounded polls on
``gw status --json`` (the live revision), never timed assertions.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from e2e.gw_process import GwServer
from e2e.waiting import wait_until

pytestmark = pytest.mark.e2e

TEMPLATE = """# the team's gw config: rollback must keep this comment
providers: [{{name: mock, kind: mock}}]
routes:
  - name: chat   # the route apps call
    targets: [{{provider: mock, model: {model}}}]
"""
ORIGINAL = TEMPLATE.format(model="first-model")
EDITED = TEMPLATE.format(model="second-model")
BROKEN = ORIGINAL.replace("provider: mock, model", "provider: ghost, model")
BODY = {"model": "chat", "messages": [{"role": "user", "content": "hi"}]}


def status(server: GwServer) -> dict[str, Any]:
    return server.cli_json("status")  # type: ignore[no-any-return]


def wait_for(server: GwServer, what: str, ready: Callable[[dict[str, Any]], bool]) -> Any:
    """Poll ``gw status --json`` until ``ready`` holds; the report that showed it."""
    reports: list[dict[str, Any]] = []

    def shown() -> dict[str, Any] | None:
        reports.append(status(server))
        return reports[-1] if ready(reports[-1]) else None

    return wait_until(shown, lambda: f"gw to show {what}; last: {reports[-1]}", interval=0.1)


def ask(server: GwServer) -> tuple[int, str, str]:
    with server.client() as http:
        answer = http.post("/v1/chat/completions", json=BODY)
    return answer.status_code, answer.headers["x-gw-revision"], answer.headers["x-gw-route"]


def test_history_diff_rollback_and_status_follow_every_revision(tmp_path: Path) -> None:
    config = tmp_path / "gw.yaml"
    config.write_text(ORIGINAL)
    state = tmp_path / "state"
    with GwServer(state, config) as server:
        report = status(server)
        assert report["running"] is True
        assert report["revision"] == 1
        assert report["server"]["pid"] == server.process.pid  # type: ignore[union-attr]
        assert report["config"]["path"] == str(config)
        assert report["config"]["error"] is None
        assert report["store"]["schema_version"] >= 3
        assert report["vault"]["references"] == {}
        assert ask(server) == (200, "1", "mock/first-model")

        config.write_text(EDITED)
        wait_for(server, "revision 2", lambda r: r["revision"] == 2)
        assert ask(server) == (200, "2", "mock/second-model")
        history = server.cli_json("config", "history")
        assert [(r["revision"], r["source"]) for r in history] == [(2, "file"), (1, "start")]
        assert set(history[0]) == {"revision", "time", "source", "hash"}  # no audit: a file edit
        assert history[0]["hash"] != history[1]["hash"]

        diff = server.cli("config", "diff", "1", "2").stdout
        assert "-    model: first-model" in diff
        assert "+    model: second-model" in diff
        unknown = server.cli("config", "diff", "1", "99", check=False)
        assert unknown.returncode != 0
        assert "no config revision 99" in " ".join(unknown.stderr.split())

        rolled = server.cli_json("config", "rollback", "1")
        assert rolled == {"revision": 3, "rolled_back_to": 1, "applied": True}
        assert config.read_text() == ORIGINAL  # the file as it was, comments included
        assert ask(server) == (200, "3", "mock/first-model")
        history = server.cli_json("config", "history")
        assert [(r["revision"], r["source"]) for r in history[:1]] == [(3, "rollback")]
        assert history[0]["hash"] == history[2]["hash"]
        assert server.cli_json("config", "diff", "1", "3")["diff"] == ""

        config.write_text(BROKEN)
        report = wait_for(server, "the rejected edit", lambda r: r["config"]["error"] is not None)
        assert str(config) in report["config"]["error"]
        assert "routes[0].targets[0].provider" in report["config"]["error"]
        assert report["revision"] == 3
        assert ask(server) == (200, "3", "mock/first-model")  # service unchanged

        config.write_text(EDITED)
        report = wait_for(server, "revision 4", lambda r: r["revision"] == 4)
        assert report["config"]["error"] is None
        assert report["requests"]["total"] >= 4
        assert report["requests"]["by_class"]["2xx"] >= 4

    # The same state dir after a restart: the revision never goes back, and the stopped
    # server's state still shows.
    stopped = server.cli("status", "--json", check=False)
    assert stopped.returncode != 0
    assert "no gw server" in stopped.stderr
    offline = json.loads(stopped.stdout)
    assert offline["running"] is False
    assert offline["last_revision"]["revision"] == 4
    with GwServer(state, config) as again:
        assert status(again)["revision"] == 4
        assert ask(again) == (200, "4", "mock/second-model")


def test_rollback_to_a_revision_without_a_file_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with GwServer(state) as server:  # no config file: the built-in default, revision 1
        (state / "gw.yaml").write_text(ORIGINAL)
        wait_for(server, "revision 2", lambda r: r["revision"] == 2)
        refused = server.cli("config", "rollback", "1", check=False)
        assert refused.returncode != 0
        message = " ".join(refused.stderr.split())  # the console wraps long lines
        assert "conflict" in message
        assert "no stored file text" in message
        assert (state / "gw.yaml").read_text() == ORIGINAL
        unknown = server.cli("config", "rollback", "42", check=False)
        assert unknown.returncode != 0
        assert "no config revision 42" in " ".join(unknown.stderr.split())

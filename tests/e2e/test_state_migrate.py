"""``gw state migrate`` as an operator runs it: a SQLite state made by a real ``gw serve``
moved to PostgreSQL, served from there, and moved back.

A gateway on SQLite answers requests (mock provider), gets an API key, a background
response (its answer sealed to the vault identity, which the fleet shares through
``GW_VAULT_KEY``) and a second config revision (an edit of its file). While it runs, migrating its state is refused.
Stopped, its state goes to a fresh database; migrating into that database again is
refused (it holds data); the database comes back into a new SQLite file with the same
rows and checksums; and a ``gw serve`` whose ``state.url`` names the database sees the
same traces, usage, revisions and key (the key authenticates), and hands out the
background answer.

Needs a PostgreSQL server (tests/pg.py: fails in CI without one, skips elsewhere).
Waits are bounded polls, never timed assertions.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from pg import fresh_database

from gw.vault import Identity

from e2e.gw_process import GW, GwServer, run_cli
from e2e.gw_process import test_env as gw_env
from e2e.waiting import wait_until

pytestmark = pytest.mark.e2e

CONFIG = """
providers: [{{name: mock, kind: mock}}]
routes: [{{name: mock, targets: [{{provider: mock, model: {model}}}]}}]
tenants: [{{name: team-a}}]
responses:
  background: {{enabled: true, concurrency: 1, max_queued_per_tenant: 8, retention: 1h}}
"""
NO_KEYRING = {"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
BODY = {"model": "mock", "messages": [{"role": "user", "content": "hi"}]}


def ask(gw: GwServer, headers: dict[str, str] | None = None) -> httpx.Response:
    with gw.client() as http:
        return http.post("/v1/chat/completions", json=BODY, headers=headers or {})


def usage_requests(gw: GwServer) -> int:
    rows: list[dict[str, Any]] = gw.cli_json("usage", "--by", "model")
    return sum(int(row["requests"]) for row in rows)


def finished_job(gw: GwServer, response_id: str) -> Any:
    """``gw explain``'s view of a background job once it has ended (never hands it out)."""
    job = gw.cli_json("explain", response_id).get("background_job")
    return job if job and job["status"] == "completed" else None


def migrate(state: Path, source: str, destination: str) -> tuple[int, Any, str]:
    done = run_cli(
        "state", "migrate", "--from", source, "--to", destination, "--yes", "--json",
        "--state-dir", str(state), check=False,
    )  # fmt: skip
    report = json.loads(done.stdout) if done.stdout.strip() else None
    return done.returncode, report, done.stderr


def summary(report: Any) -> list[tuple[str, int, str]]:
    return [(t["name"], t["rows"], t["checksum"]) for t in report["tables"]]


def test_sqlite_state_moves_to_postgres_and_back(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    config = state / "gw.yaml"
    config.write_text(CONFIG.format(model="first"))
    # A background answer is sealed to the vault identity: a fleet shares one.
    env = {"GW_VAULT_KEY": Identity.generate().secret_text(), **NO_KEYRING}
    with GwServer(state, env=env) as gw:
        asked = [ask(gw), ask(gw)]
        assert [a.status_code for a in asked] == [200, 200]
        made = gw.cli_json("keys", "create", "--tenant", "team-a")
        bearer = {"authorization": f"Bearer {made['key']}"}
        wait_until(lambda: ask(gw).status_code == 401, "the gateway to require a key")
        assert ask(gw, bearer).status_code == 200
        with gw.client() as http:
            queued = http.post(
                "/v1/responses",
                json={"model": "mock", "input": "hi", "background": True},
                headers=bearer,
            )
        assert queued.status_code == 200, queued.text
        job = queued.json()["id"]
        wait_until(lambda: finished_job(gw, job), "the background job to finish")
        config.write_text(CONFIG.format(model="second"))
        wait_until(lambda: len(gw.cli_json("config", "history")) == 2, "the edit's revision")
        wait_until(lambda: usage_requests(gw) >= 3, "the usage rows")
        ids = {a.headers["x-gw-request-id"] for a in asked}
        for request_id in ids:
            gw.wait_for_trace(request_id)

        with fresh_database() as url:
            code, _, stderr = migrate(state, "sqlite:", url)
            assert code != 0
            assert "is running on" in stderr
            assert "stop it" in stderr
            served_usage = usage_requests(gw)

    with fresh_database() as url:
        code, there, stderr = migrate(state, "sqlite:", url)
        assert code == 0, stderr
        assert there["ok"]
        assert there["from"] == f"sqlite:{state / 'gw.db'}"
        rows = {t["name"]: t["rows"] for t in there["tables"]}
        assert rows["api_keys"] == 1
        assert rows["config_revisions"] == 2
        assert rows["usage"] == served_usage
        assert rows["runs"] == 1
        assert rows["response_jobs"] == 1
        assert all(t["match"] for t in there["tables"])

        code, _, stderr = migrate(state, "sqlite:", url)
        assert code != 0
        assert "already holds gw data" in stderr

        back = tmp_path / "back" / "gw.db"
        code, again, stderr = migrate(state, url, f"sqlite:{back}")
        assert code == 0, stderr
        assert summary(again) == summary(there)

        shown = run_cli(
            "state", "migrate", "--from", url, "--to", f"sqlite:{tmp_path / 'shown.db'}",
            "--yes", env={"COLUMNS": "200"},
        )  # fmt: skip
        assert "every count and checksum matches" in shown.stdout
        for name, rows, checksum in summary(there):
            assert f"{rows:,}" in shown.stdout
            assert f"{name}" in shown.stdout
            assert checksum[:16] in shown.stdout

        fleet = tmp_path / "fleet"
        fleet.mkdir()
        (fleet / "gw.yaml").write_text(CONFIG.format(model="second") + f"state: {{url: '{url}'}}\n")
        with GwServer(fleet, env=env) as pg:
            assert {t["request_id"] for t in pg.cli_json("traces")} >= ids
            assert usage_requests(pg) == served_usage
            assert made["id"] in [key["id"] for key in pg.cli_json("keys", "list")]
            assert ask(pg).status_code == 401  # keys exist: one is needed
            assert ask(pg, bearer).status_code == 200
            history = pg.cli_json("config", "history")
            assert len(history) >= 2
            with pg.client() as http:  # the sealed answer, opened on the other side
                answer = http.get(f"/v1/responses/{job}", headers=bearer)
            assert answer.status_code == 200, answer.text
            assert answer.json()["status"] == "completed"
            assert answer.json()["output"]
        assert not (fleet / "gw.db").exists()


def test_a_password_in_the_url_is_never_shown(tmp_path: Path) -> None:
    code, _, stderr = migrate(
        tmp_path, f"sqlite:{tmp_path / 'none.db'}", "postgresql://gw:hunter2@127.0.0.1:1/gw"
    )
    assert code != 0
    assert "no gw database at" in stderr
    assert "hunter2" not in stderr
    assert "gw:***@" in stderr


def test_without_a_terminal_it_asks_for_yes(tmp_path: Path) -> None:
    done = subprocess.run(
        [GW, "state", "migrate", "--from", "sqlite:", "--to", f"sqlite:{tmp_path / 'b.db'}",
         "--state-dir", str(tmp_path)],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, env=gw_env(None),
        timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode != 0
    assert "pass --yes" in done.stderr
    assert not (tmp_path / "b.db").exists()

"""gw serve with its state in PostgreSQL (``state.url``): one gateway, then two sharing it.

A real ``gw serve`` whose config names a fresh database serves a request (mock provider)
and the CLI sees it through the same store: ``gw explain``, ``gw traces``, ``gw usage``,
``gw keys``, ``gw status``. Then two ``gw serve`` processes with separate state dirs
and one database (through ``GW_STATE_URL``, with a password that status and logs never
show): a usage row from each lands in one ledger, and a key created through one is
honoured by the other, then revoked through it. ``gw traces --follow`` follows it too.

Needs a PostgreSQL server (tests/pg.py: fails in CI without one, skips elsewhere).
Waits are bounded polls (usage and traces are written off the hot path; the key cache
refreshes within a second), never timed assertions.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest
from pg import fresh_database

from gw.store.migrations import LATEST_VERSION
from gw.store.open import open_store

from e2e.gw_process import GW, GwServer
from e2e.test_traces_follow import Lines, stop, trace
from e2e.waiting import wait_until

CONFIG = """
providers: [{name: mock, kind: mock}]
routes: [{name: mock, targets: [{provider: mock, model: mock-1}]}]
tenants: [{name: team-a}]
"""
BODY = {"model": "mock", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def database() -> Iterator[str]:
    with fresh_database() as url:
        yield url


def ask(gw: GwServer, headers: dict[str, str] | None = None) -> httpx.Response:
    with gw.client() as http:
        return http.post("/v1/chat/completions", json=BODY, headers=headers or {})


def usage_requests(gw: GwServer) -> int:
    rows: list[dict[str, Any]] = gw.cli_json("usage", "--by", "model")
    return sum(int(row["requests"]) for row in rows)


def test_one_gateway_on_postgres_is_seen_by_every_state_command(
    tmp_path: Path, database: str
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    # The config file in the state dir names the database: the CLI finds it there too.
    (state / "gw.yaml").write_text(CONFIG + f"state: {{url: '{database}'}}\n")
    with GwServer(state) as gw:
        answer = ask(gw)
        assert answer.status_code == 200
        request_id = answer.headers["x-gw-request-id"]

        explained = gw.wait_for_trace(request_id)
        assert explained["request_id"] == request_id
        traces = gw.cli_json("traces")
        assert request_id in [trace["request_id"] for trace in traces]
        wait_until(lambda: usage_requests(gw) == 1, "the usage row in PostgreSQL")

        status = gw.cli_json("status")
        assert status["store"]["path"] == database  # no password in it to hide
        assert status["store"]["size_bytes"] is None
        assert status["store"]["schema_version"] == LATEST_VERSION
        assert not (state / "gw.db").exists()  # nothing went to SQLite

        made = gw.cli_json("keys", "create", "--tenant", "team-a")
        assert made["id"] in [key["id"] for key in gw.cli_json("keys", "list")]
        history = gw.cli_json("config", "history")
        assert [row["source"] for row in history] == ["start"]

        refused = gw.cli("state", "backup", str(tmp_path / "copy.db"), check=False)
        assert refused.returncode != 0
        assert "pg_dump" in refused.stderr


def with_password(url: str, password: str) -> str:
    """``url`` with a password (trust authentication on the test server ignores it)."""
    parts = urlsplit(url)
    user = parts.username or "postgres"
    return urlunsplit(parts._replace(netloc=f"{user}:{password}@{parts.hostname}:{parts.port}"))


def test_two_gateways_share_one_ledger_and_their_keys(tmp_path: Path, database: str) -> None:
    config = tmp_path / "gw.yaml"
    config.write_text(CONFIG)
    env = {"GW_STATE_URL": with_password(database, "hunter2")}
    with (
        GwServer(tmp_path / "one", config, env=env) as one,
        GwServer(tmp_path / "two", config, env=env) as two,
    ):
        first, second = ask(one), ask(two)
        assert (first.status_code, second.status_code) == (200, 200)
        ids = {first.headers["x-gw-request-id"], second.headers["x-gw-request-id"]}
        status = one.cli_json("status")
        assert status["store"]["path"] == with_password(database, "***")
        assert "hunter2" not in json.dumps(status)

        # One ledger: either gateway's CLI sees both rows, and both traces.
        wait_until(lambda: usage_requests(one) == 2, "both usage rows in one ledger")
        assert usage_requests(two) == 2
        wait_until(
            lambda: ids <= {trace["request_id"] for trace in two.cli_json("traces")},
            "both traces",
        )
        assert one.wait_for_trace(second.headers["x-gw-request-id"])["request_id"] in ids

        # A key created through one gateway is honoured by the other (cache <= 1 s).
        made = one.cli_json("keys", "create", "--config", str(config), "--tenant", "team-a")
        bearer = {"authorization": f"Bearer {made['key']}"}
        wait_until(lambda: ask(two).status_code == 401, "gateway two now requires a key")
        wait_until(lambda: ask(two, bearer).status_code == 200, "gateway two takes the key")
        assert ask(one, bearer).status_code == 200

        # ... and revoked through the other, refused by the first.
        assert two.cli_json("keys", "revoke", made["id"])["status"] == "revoked"
        wait_until(lambda: ask(one, bearer).status_code == 401, "gateway one refuses it")
    assert "hunter2" not in one.log() + two.log()


def test_traces_follow_reads_postgres(tmp_path: Path, database: str) -> None:
    async def write(*request_ids: str) -> None:
        async with await open_store(database, tmp_path / "unused.db") as store:
            await store.write_traces([trace(rid, 1000.0 + n) for n, rid in enumerate(request_ids)])

    asyncio.run(write("old-1", "old-2"))
    process = subprocess.Popen(
        [GW, "traces", "--follow", "--json", "--limit", "1", "--state-dir", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "GW_STATE_URL": database, "COLUMNS": "200"},
    )
    try:
        assert process.stdout is not None
        lines = Lines(process.stdout)
        assert [line["request_id"] for line in lines.take(1)] == ["old-2"]
        asyncio.run(write("new-1", "new-2"))
        assert [line["request_id"] for line in lines.take(2)] == ["new-1", "new-2"]
    finally:
        code = stop(process)
    assert code == 0, process.stderr.read() if process.stderr else ""
    assert not (tmp_path / "gw.db").exists()

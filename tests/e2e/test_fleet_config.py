"""One config across a fleet: three real ``gw serve`` processes share a fresh PostgreSQL
database (``GW_STATE_URL``), each with a config file of its own.

An admin write on the third gateway becomes the fleet's newest revision, announced on
``gw_config`` (LISTEN/NOTIFY); the first and second serve the new route (polled, bounded)
and write its text back to their own files. A write on the first naming the revision
before it (If-Match) is 412. ``gw status --json`` on any gateway lists all three in its
``fleet``, on one revision and hash (also right after three starts from one file, each
gateway with a setting of its own); a killed gateway shows as gone once its heartbeat
(``GW_FLEET_HEARTBEAT_S``, shortened here) is three intervals old, also to ``gw status``
run where no gateway is (it reads the registry from the store).

Needs a PostgreSQL server (tests/pg.py: fails in CI without one, skips elsewhere).
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from pg import fresh_database

from e2e.gw_process import GwServer
from e2e.waiting import wait_until

pytestmark = pytest.mark.e2e

CONFIG = """\
# This gateway's copy of the fleet's config.
providers: [{name: mock, kind: mock}]
routes:
  - name: chat
    targets: [{provider: mock, model: mock-1}]
"""
HI = [{"role": "user", "content": "hi"}]
FRESH = {"name": "fresh", "targets": [{"provider": "mock", "model": "mock-2"}]}


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[list[GwServer]]:
    with fresh_database() as database, ExitStack() as stack:
        env = {"GW_STATE_URL": database, "GW_FLEET_HEARTBEAT_S": "0.2"}
        gateways = []
        for n in (1, 2, 3):
            config = tmp_path / f"gw{n}.yaml"
            config.write_text(CONFIG)
            # A setting of its own, as each gateway of a real fleet has its --port.
            own = env | {"GW_MAX_CONCURRENCY": str(100 + n)}
            gateways.append(stack.enter_context(GwServer(tmp_path / f"state{n}", config, own)))
        yield gateways


def ask(gw: GwServer, model: str) -> httpx.Response:
    with gw.client() as client:
        return client.post("/v1/chat/completions", json={"model": model, "messages": HI})


def status_fleet(gw: GwServer) -> list[dict[str, Any]]:
    fleet: list[dict[str, Any]] = gw.cli_json("status")["fleet"]
    return fleet


def test_one_file_started_on_three_gateways_is_one_revision(fleet: list[GwServer]) -> None:
    """Each gateway's own overrides (flags, GW_*) are left out of the hash: the later starts
    find the newest revision has their hash and record none."""
    for gw in fleet:
        rows = wait_until(
            lambda gw=gw: len(rows := status_fleet(gw)) == 3 and rows,
            lambda gw=gw: f"all three registered: {status_fleet(gw)}",
        )
        assert {(row["revision"], row["config_hash"]) for row in rows} == {
            (1, rows[0]["config_hash"])
        }, rows
    history = fleet[0].cli_json("config", "history")
    assert [entry["revision"] for entry in history] == [1], history


def test_a_write_on_one_gateway_is_served_by_all(fleet: list[GwServer]) -> None:
    one, two, three = fleet
    assert ask(one, "fresh").status_code == 404  # not a route yet
    with three.client() as client:
        before = int(client.get("/admin/v1/config").json()["revision"])
        put = client.put("/admin/v1/routes/fresh", json=FRESH, headers={"if-match": str(before)})
    assert put.status_code == 201, put.text
    revision = put.json()["revision"]
    assert revision == before + 1

    for gw in (one, two):
        answer = wait_until(
            lambda gw=gw: (r := ask(gw, "fresh")).status_code == 200 and r,
            lambda gw=gw: f"{gw.url} to serve the new route:\n{gw.log()}",
        )
        assert answer.headers["x-gw-revision"] == str(revision)
        assert gw.config is not None
        assert "fresh" in gw.config.read_text()  # the fleet's text, written back to its file

    # A write based on the revision before, even on another gateway, is refused.
    with one.client() as client:
        stale = client.put(
            "/admin/v1/routes/other",
            json={**FRESH, "name": "other"},
            headers={"if-match": str(before)},
        )
    assert stale.status_code == 412, stale.text
    assert stale.json()["error"]["code"] == "precondition_failed"

    # Every gateway's status lists all three, on one revision and one config hash.
    ids: set[str] = set()
    for gw in fleet:
        rows = wait_until(
            lambda gw=gw: (
                (rows := status_fleet(gw))
                and len(rows) == 3
                and all(row["revision"] == revision and row["ready"] for row in rows)
                and rows
            ),
            lambda gw=gw: f"the fleet on revision {revision}: {status_fleet(gw)}",
        )
        assert len({row["config_hash"] for row in rows}) == 1
        assert {row["url"] for row in rows} == {gw.url for gw in fleet}
        assert [row["self"] for row in rows].count(True) == 1
        assert not any(row["gone"] for row in rows)
        ids = {row["id"] for row in rows}
    assert len(ids) == 3


def test_a_killed_gateway_shows_as_gone(fleet: list[GwServer]) -> None:
    one, two, _three = fleet
    wait_until(lambda: len(status_fleet(two)) == 3, "all three registered")
    assert one.process is not None
    killed = one.process.pid
    one.process.send_signal(signal.SIGKILL)  # no clean stop: its row stays, ageing
    one.process.wait(timeout=10)

    def gone() -> dict[str, Any] | None:
        return next(
            (row for row in status_fleet(two) if row["pid"] == killed and row["gone"]), None
        )

    row = wait_until(gone, lambda: f"gateway {killed} to show as gone: {status_fleet(two)}")
    assert row["url"] == one.url
    assert row["age_s"] > 3 * row["heartbeat_s"]
    live = [row for row in status_fleet(two) if not row["gone"]]
    assert len(live) == 2

    # From the killed gateway's state dir, with no gateway running there: the fleet as
    # the store has it.
    offline = one.cli("status", "--json", check=False)
    assert offline.returncode == 1
    report = json.loads(offline.stdout)
    assert report["running"] is False
    seen = {row["pid"]: row["gone"] for row in report["fleet"]}
    assert seen[killed] is True
    assert sorted(seen.values()) == [False, False, True]

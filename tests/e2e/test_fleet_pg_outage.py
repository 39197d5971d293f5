"""PostgreSQL restarted under load: two ``gw serve`` processes sharing one database keep
answering while it is down, spool their usage rows, and drain them when it is back, with
zero rows lost and none counted twice (issue 26, part 3).

The database is a private server (tests/fakes/postgres_server.py) on a free loopback
port, so it can be stopped: ``pg_ctl stop -m fast`` ends every session at once, as a
restart or a failover does. Client threads (a fixed few) send requests with an API key
both gateways have seen, alternating between them, through three phases: before, during
(until each gateway has answered requests with the database down, and ``/readyz`` says
so while staying ready) and after the outage. Then the ledger must hold exactly one row
per answered request id, and each gateway's ``gw status`` must show it spooled rows
and lost none. A key neither gateway had seen is refused with 503 ``overloaded`` while
the database is down. A second test kills a gateway while the database is down: its
spool survives in the usage journal and is put back by the next start, which is refused
until the database is back. Waits are bounded polls (tests/e2e/waiting.py), never sleeps.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from e2e.gw_process import GwServer
from e2e.waiting import wait_until
from fakes.postgres_server import PostgresServer

CONFIG = """
providers: [{name: mock, kind: mock}]
routes: [{name: mock, targets: [{provider: mock, model: mock-1}]}]
tenants: [{name: team-a}]
auth: {admin_key: "env:GW_ADMIN_KEY"}
"""
ADMIN_KEY = "Zq8rV2mW7kT1xN4pL9sB3dF6hJ0cG5yA"  # gw status reads the running server's report
BODY = {"model": "mock", "messages": [{"role": "user", "content": "hi"}]}
CLIENTS = 4
REQUEST_TIMEOUT_S = 30.0


@pytest.fixture
def postgres() -> Iterator[PostgresServer]:
    with PostgresServer() as server:
        yield server


class Load:
    """``CLIENTS`` threads sending requests round-robin to ``urls`` until ``stop``;
    every answer's status and request id is kept."""

    def __init__(self, urls: list[str], key: str) -> None:
        self._urls = urls
        self._headers = {"authorization": f"Bearer {key}"}
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.answers: list[tuple[int, str, int]] = []  # (gateway, request id, status)
        self.failures: list[str] = []
        self._threads = [
            threading.Thread(target=self._client, args=(n,), daemon=True) for n in range(CLIENTS)
        ]

    def _client(self, n: int) -> None:
        clients = [httpx.Client(base_url=url, timeout=REQUEST_TIMEOUT_S) for url in self._urls]
        try:
            turn = n
            while not self._stop.is_set():
                gateway = turn % len(clients)
                turn += 1
                try:
                    answer = clients[gateway].post(
                        "/v1/chat/completions", json=BODY, headers=self._headers
                    )
                except httpx.HTTPError as exc:
                    with self._lock:
                        self.failures.append(f"gateway {gateway}: {type(exc).__name__}")
                    continue
                with self._lock:
                    self.answers.append(
                        (gateway, answer.headers.get("x-gw-request-id", ""), answer.status_code)
                    )
        finally:
            for client in clients:
                client.close()

    def start(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=REQUEST_TIMEOUT_S + 5)

    def count(self, where: Callable[[tuple[int, str, int]], bool] = lambda _: True) -> int:
        with self._lock:
            return sum(1 for answer in self.answers if where(answer))

    def mark(self) -> int:
        with self._lock:
            return len(self.answers)

    def since(self, mark: int) -> list[tuple[int, str, int]]:
        with self._lock:
            return self.answers[mark:]


def readyz(gw: GwServer) -> tuple[int, dict[str, Any]]:
    with gw.client() as http:
        answer = http.get("/readyz")
    return answer.status_code, answer.json()


def metric(gw: GwServer, name: str, labels: dict[str, str] | None = None) -> float | None:
    """One sample of ``GET /metrics`` (read with the admin key), None when absent."""
    with gw.client() as http:
        text = http.get("/metrics", headers={"authorization": f"Bearer {ADMIN_KEY}"}).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels == (labels or {}):
                return float(sample.value)
    return None


def spool(gw: GwServer) -> dict[str, Any]:
    report: dict[str, Any] = gw.cli_json("status")["usage_journal"]["spool"]
    return report


def test_postgres_restarted_under_load_loses_no_usage_row(
    tmp_path: Path, postgres: PostgresServer
) -> None:
    config = tmp_path / "gw.yaml"
    config.write_text(CONFIG)
    env = {"GW_STATE_URL": postgres.url, "GW_ADMIN_KEY": ADMIN_KEY}
    with (
        GwServer(tmp_path / "one", config, env=env) as one,
        GwServer(tmp_path / "two", config, env=env) as two,
    ):
        gateways = [one, two]
        key = str(
            one.cli_json("keys", "create", "--config", str(config), "--tenant", "team-a")["key"]
        )
        unseen = str(
            one.cli_json("keys", "create", "--config", str(config), "--tenant", "team-a")["key"]
        )
        load = Load([one.url, two.url], key).start()
        try:
            # Before: both gateways answer with the key (so both have it cached).
            wait_until(
                lambda: all(
                    load.count(lambda a, g=g: a[0] == g and a[2] == 200) >= 10 for g in (0, 1)
                ),
                lambda: f"answers before the outage: {load.answers[-3:]} {load.failures[-3:]}",
            )
            postgres.stop("fast")
            down = load.mark()

            # During: every request answered; each gateway spools and stays ready.
            def spooling(gw: GwServer) -> bool:
                status, body = readyz(gw)
                return status == 200 and body.get("degraded", {}).get("code") in {
                    "store_unreachable",
                    "writes_failing",
                }

            wait_until(
                lambda: all(spooling(gw) for gw in gateways),
                lambda: f"both gateways to report the outage: {[readyz(gw) for gw in gateways]}",
            )
            wait_until(
                lambda: all(spool(gw)["active"] and spool(gw)["queued"] > 0 for gw in gateways),
                lambda: f"rows to spool: {[spool(gw) for gw in gateways]}",
            )
            assert all(metric(gw, "gw_usage_spool_active") == 1 for gw in gateways)
            during = load.mark()
            wait_until(
                lambda: all(sum(1 for a in load.since(during) if a[0] == g) >= 20 for g in (0, 1)),
                "more answers while PostgreSQL is down",
            )
            with one.client() as http:
                refused = http.post(
                    "/v1/chat/completions",
                    json=BODY,
                    headers={"authorization": f"Bearer {unseen}"},
                )
            assert refused.status_code == 503, refused.text
            assert refused.json()["error"]["code"] == "overloaded"
            assert "has not seen this API key" in refused.json()["error"]["message"]
            outage = load.since(down)

            # After: PostgreSQL is back; the load goes on a little, then stops.
            postgres.start()
            back = load.mark()
            wait_until(
                lambda: all(sum(1 for a in load.since(back) if a[0] == g) >= 10 for g in (0, 1)),
                "answers after the outage",
            )
        finally:
            load.stop()

        assert load.failures == []
        statuses = {status for _, _, status in load.answers}
        assert statuses == {200}, [a for a in load.answers if a[2] != 200][:5]
        assert len(outage) >= 40
        answered = {request_id for _, request_id, _ in load.answers}
        assert len(answered) == len(load.answers)  # every answer has its own request id

        def ledger() -> int:
            return int(str(postgres.fetchval("SELECT count(*) FROM usage")))

        wait_until(
            lambda: ledger() >= len(answered),
            lambda: f"the spools to drain: {ledger()} of {len(answered)} rows",
        )
        stored = postgres.fetchcol("SELECT request_id FROM usage")
        assert len(stored) == len(set(stored))  # none counted twice
        assert answered <= set(map(str, stored))  # zero lost
        # The refused request has a row too (its 503 is a request gw answered); no other.
        assert len(set(map(str, stored)) - answered) <= 1

        for gw in gateways:
            report = spool(gw)
            assert report["spooled"] > 0, report
            assert report["lost"] == 0, report
            assert report["active"] is False, report
            assert readyz(gw)[0] == 200
            assert (metric(gw, "gw_usage_spooled_total") or 0) > 0
            assert metric(gw, "gw_usage_spool_active") == 0
            assert metric(gw, "gw_telemetry_dropped_total", {"queue": "usage"}) == 0
            assert "spooling them" in gw.log()


def test_a_gateway_killed_while_postgres_is_down_loses_none_of_its_spooled_rows(
    tmp_path: Path, postgres: PostgresServer
) -> None:
    """The spool is durable: a gateway killed (kill -9) while PostgreSQL is down keeps its
    spooled rows in its usage journal. A start while PostgreSQL is still down is refused,
    saying why (it needs the database to migrate, recover and seed budgets); once it is
    back, the start puts the rows back before serving."""
    config = tmp_path / "gw.yaml"
    config.write_text(CONFIG)
    env = {"GW_STATE_URL": postgres.url, "GW_ADMIN_KEY": ADMIN_KEY}
    state = tmp_path / "one"
    gw = GwServer(state, config, env=env).start()
    try:
        key = str(
            gw.cli_json("keys", "create", "--config", str(config), "--tenant", "team-a")["key"]
        )
        headers = {"authorization": f"Bearer {key}"}
        with gw.client() as http:
            assert http.post("/v1/chat/completions", json=BODY, headers=headers).status_code == 200
            postgres.stop("fast")
            answered = []
            for _ in range(20):
                answer = http.post("/v1/chat/completions", json=BODY, headers=headers)
                assert answer.status_code == 200, answer.text
                answered.append(answer.headers["x-gw-request-id"])
        assert gw.process is not None
        gw.process.send_signal(signal.SIGKILL)
        assert gw.process.wait(timeout=30) == -signal.SIGKILL
    finally:
        gw.stop()

    with pytest.raises(RuntimeError, match="cannot connect to PostgreSQL"):
        GwServer(state, config, env=env).start()

    postgres.start()
    with GwServer(state, config, env=env) as again:
        stored = set(map(str, postgres.fetchcol("SELECT request_id FROM usage")))
        assert set(answered) <= stored
        recovered = again.cli_json("status")["usage_journal"]["recovered_at_start"]
        assert recovered["rows"] >= len(answered)

"""A million usage rows: reports and the dashboard's API answer right, from the rollup,
while requests run, and those requests all succeed.

The test makes its own ledger: gw's schema, then 1,000,000 rows by one SQL statement
(``bench.usage_reports.fill_usage``, as ``scripts/bench --usage-reports`` does) over the
29 days ending an hour ago. A real gw serves it in ``keys`` mode (so auth reads API keys
from the store whenever its cache runs out) while two clients send chat requests one at a
time; every report is compared with the sums the test computes itself over every row.
The requests' own rows (tenant ``bench``, route ``mock``, ...) land in groups of their
own, left out of the comparison since they grow meanwhile. How long anything takes is
measured by the benchmark, not here.
"""

from __future__ import annotations

import datetime as dt
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.usage_reports import fill_usage, make_database
from gw.execution.periods import period_label
from gw.store.usage import ROWS_ONLY, USAGE_GROUPS
from gw.store.usage_rollup import rollup_query

from e2e.gw_process import GwServer
from e2e.waiting import wait_until

# The groupings the hourly and daily sums answer; by gateway a report sums the rows
# themselves (gw/store/usage.py ROWS_ONLY), a bound the fleet guide states.
ROLLUP_GROUPS = tuple(by for by in USAGE_GROUPS if by not in ROWS_ONLY)

ROWS = 1_000_000
DAYS = 29
CONFIG = """
auth: {admin_key: env:GW_ADMIN_KEY}
providers: [{name: mock, kind: mock}]
routes: [{name: mock, targets: [{provider: mock, model: mock-1}]}]
tenants: [{name: bench}]
"""
CHAT = {"model": "mock", "messages": [{"role": "user", "content": "hi"}]}
LIVE = {"tenant": "bench", "route": "mock", "provider": "mock", "model": "mock-1"}
FIELDS = ("requests", "errors", "input_tokens", "cached_input_tokens", "output_tokens")
FIELDS += ("reasoning_tokens", "cost_usd", "unpriced", "estimated", "recovered")
WAIT_S = 30.0


class Ledger:
    """The gw under test, its database, the fill's end and the live requests' key."""

    def __init__(self, server: GwServer, database: Path, end: float, key: dict[str, Any]):
        self.server, self.database, self.end = server, database, end
        self.api_key, self.key_id = key["key"], key["id"]
        self.admin = {"authorization": f"Bearer {server.env['GW_ADMIN_KEY']}"}


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ledger]:
    state = tmp_path_factory.mktemp("usage-at-scale")
    (state / "gw.yaml").write_text(CONFIG)
    database = state / "gw.db"
    end = time.time() - 3600
    make_database(database)
    fill_usage(database, ROWS, end=end, days=DAYS)
    server = GwServer(state, env={"GW_ADMIN_KEY": secrets.token_urlsafe(32)})
    key = server.cli_json("keys", "create", "--tenant", "bench")
    with server:
        yield Ledger(server, database, end, key)


class Requests:
    """Chat requests one at a time from ``clients`` threads until stopped."""

    def __init__(self, ledger: Ledger, clients: int = 2) -> None:
        self._ledger = ledger
        self._stop = threading.Event()
        self.statuses: list[int] = []
        self._threads = [threading.Thread(target=self._run) for _ in range(clients)]

    def __enter__(self) -> Requests:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(WAIT_S)

    def _run(self) -> None:
        headers = {"authorization": f"Bearer {self._ledger.api_key}"}
        with httpx.Client(base_url=self._ledger.server.url, timeout=WAIT_S) as client:
            while not self._stop.is_set():
                response = client.post("/v1/chat/completions", json=CHAT, headers=headers)
                self.statuses.append(response.status_code)


def expected_reports(database: Path, sinces: list[float]) -> list[dict[str, dict[Any, dict]]]:
    """For no ``since`` and each of ``sinces`` (ascending): the report of every group, by
    the rows, from one pass over the ledger (each row tagged with how many sinces it is
    at or after)."""
    tags = " + ".join("(time >= ?)" for _ in sinces) or "0"
    sql = (
        "SELECT tenant, key_id, route, provider, model, day, "  # noqa: S608 - "?" marks
        + tags
        + " AS tag,"
        " COUNT(*), SUM(error_code IS NOT NULL), SUM(input_tokens), SUM(cached_input_tokens),"
        " SUM(output_tokens), SUM(reasoning_tokens), TOTAL(cost_usd),"
        " SUM(cost_usd IS NULL AND input_tokens + output_tokens > 0),"
        " SUM(usage_source IS 'estimate'), SUM(recovered)"
        " FROM usage GROUP BY tenant, key_id, route, provider, model, day, tag"
    )
    with sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True) as db:
        groups = db.execute(sql, sinces).fetchall()
    db.close()
    names = ("tenant", "key", "route", "provider", "model", "day")
    reports: list[dict[str, dict[Any, dict]]] = []
    for level in range(len(sinces) + 1):
        report: dict[str, dict[Any, dict]] = {by: {} for by in ROLLUP_GROUPS}
        for row in groups:
            keys, tag, measures = dict(zip(names, row[:6], strict=True)), row[6], row[7:]
            if tag < level:
                continue
            for by in ROLLUP_GROUPS:
                key = keys[by].removeprefix("d:") if by == "day" else keys[by]
                sums = report[by].setdefault(key, dict.fromkeys(FIELDS, 0))
                for field, value in zip(FIELDS, measures, strict=True):
                    sums[field] += value
        reports.append(report)
    return reports


def is_live(by: str, key: Any, ledger: Ledger) -> bool:
    """Whether the live requests' rows may be in this group (it grows meanwhile): their
    tenant, key, route, ...; by day, the fill's last day and any later."""
    if by == "day":
        return bool(key >= period_label("day", ledger.end).removeprefix("d:"))
    if by == "key":
        return bool(key == ledger.key_id)
    return bool(key == LIVE[by])


def assert_report_is(
    answer: list[dict[str, Any]], expected: dict[Any, dict], by: str, ledger: Ledger
) -> None:
    got = {row[by]: row for row in answer if not is_live(by, row[by], ledger)}
    want = {key: sums for key, sums in expected.items() if not is_live(by, key, ledger)}
    assert got.keys() == want.keys(), by
    for key, sums in want.items():
        row = got[key]
        assert {f: row[f] for f in FIELDS if f != "cost_usd"} == {
            f: sums[f] for f in FIELDS if f != "cost_usd"
        }, (by, key)
        assert row["cost_usd"] == pytest.approx(sums["cost_usd"], abs=1e-6), (by, key)


def test_reports_and_the_dashboard_answer_right_while_requests_run(ledger: Ledger) -> None:
    # A since inside an hour (days, hours and rows are read), a day's start, and the
    # dashboard's own: 30 days back from the server's now holds every row made here.
    inside = dt.datetime.fromtimestamp(ledger.end - 10.5 * 86_400 - 1234.567, tz=dt.UTC)
    day = dt.datetime.fromtimestamp(ledger.end - 5 * 86_400, tz=dt.UTC).date()
    sinces = {
        inside.isoformat(): dt.datetime.fromisoformat(inside.isoformat()).timestamp(),
        day.isoformat(): dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC).timestamp(),
    }
    everything, after_inside, after_day = expected_reports(ledger.database, list(sinces.values()))
    expected = {"": everything, "30d": everything}
    expected |= dict(zip(sinces, (after_inside, after_day), strict=True))
    server = ledger.server
    with server.client() as admin, Requests(ledger) as requests:
        before = len(requests.statuses)
        for since, reports in expected.items():
            for by in ROLLUP_GROUPS:
                params = {"by": by} | ({"since": since} if since else {})
                answer = admin.get("/admin/v1/usage", params=params, headers=ledger.admin)
                assert answer.status_code == 200, answer.text
                assert_report_is(answer.json(), reports[by], by, ledger)
        # The dashboard's other reads, as its page makes them.
        for path in ("/admin/v1/traces?limit=100", "/admin/v1/health", "/admin/v1/status"):
            assert admin.get(path, headers=ledger.admin).status_code == 200, path
        during = len(requests.statuses) - before
    assert during > 0  # requests ran while the reports were read
    assert requests.statuses
    assert set(requests.statuses) == {200}

    # The requests' own rows reach the report through the rollup as they are written.
    with server.client() as admin:

        def mine() -> list[dict[str, Any]]:
            answer = admin.get("/admin/v1/usage", params={"by": "key"}, headers=ledger.admin)
            return [row for row in answer.json() if row["key"] == ledger.key_id]

        def all_counted() -> bool:
            rows = mine()
            return bool(rows) and rows[0]["requests"] == len(requests.statuses)

        wait_until(
            all_counted,
            lambda: f"the key's {len(requests.statuses)} requests in the report; got {mine()}",
            interval=0.1,
        )


def test_a_report_reads_the_rollup_and_no_more_than_an_hour_of_rows(ledger: Ledger) -> None:
    """Structural, on the million rows: no query plan of any report scans the ledger."""
    with sqlite3.connect(f"{ledger.database.as_uri()}?mode=ro", uri=True) as db:
        for by in ROLLUP_GROUPS:
            for since in (None, ledger.end - 7 * 86_400 - 0.5, ledger.end - 3 * 86_400):
                for tenant in (None, "tenant-1"):
                    sql, params = rollup_query(by, since, tenant)
                    plan = [row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {sql}", params)]
                    assert not any(step.startswith("SCAN usage") for step in plan), plan
                    assert not any("usage_tenant" in step for step in plan), plan
    db.close()

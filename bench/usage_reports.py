"""``scripts/bench --usage-reports [ROWS]``: what usage reports and the dashboard cost the
requests running meanwhile, over a large usage ledger.

A state database is made with ROWS usage rows (default 1,000,000) over the last 30 days,
by one SQL statement (``fill_usage``; tests/e2e/test_usage_at_scale.py makes its ledger
the same way). gw serves it in ``keys`` mode (an API key per request, so the auth check
reads the store whenever its one-second cache runs out) on the built-in ``mock``
provider. One client sends chat requests one at a time (a fresh request as soon as the
last answered), first while nothing else happens (idle), then while two admin clients run
in a loop: one asks ``/admin/v1/usage`` for every group, all time and since 7 and 30
days; the other makes the dashboard's calls (usage by day, route and model since 30 days,
at once, then traces, health, status and config). Reported: the one-at-a-time client's
requests per second, median, 99th percentile and slowest request in each phase, and how
long the admin calls took. Saved to ``bench-results/usage-reports-<time>.json``.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import secrets
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gw
from bench.errors import BenchError
from bench.probe import first_answer
from bench.processes import ProcessSet, clean_env
from bench.reload_stall import summary
from gw.store import SqliteStore

DEFAULT_ROWS = 1_000_000
DAYS = 30
IDLE_S = 5.0
BUSY_S = 10.0
START_TIMEOUT_S = 120.0
CALL_TIMEOUT_S = 120.0
BODY = json.dumps({"model": "mock", "messages": [{"role": "user", "content": "hi"}]}).encode()
CONFIG = """\
auth: {admin_key: env:GW_ADMIN_KEY}
providers: [{name: mock, kind: mock}]
routes: [{name: mock, targets: [{provider: mock, model: mock-1}]}]
tenants: [{name: bench}]
"""
GROUPS = ("tenant", "model", "key", "day", "route", "provider")
DASHBOARD_USAGE = tuple(f"/admin/v1/usage?by={by}&since=30d" for by in ("day", "route", "model"))
DASHBOARD_REST = (
    "/admin/v1/traces?limit=100",
    "/admin/v1/health",
    "/admin/v1/status",
    "/admin/v1/config",
)

# One row per x in 1..N, spread evenly over [start, start + span): 5 tenants and 10 keys
# (one in ten rows has neither, as in open mode), 3 routes, 2 providers, 4 models, one in
# fifty an error with no model, one in 23 unpriced, one in 11 estimated, one in 101
# recovered. Costs are whole micro-dollars.
FILL_SQL = """
WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < :rows),
t(x, time) AS (SELECT x, :start + (x - 0.5) * :span / :rows FROM n)
INSERT INTO usage (
    request_id, time, day, month, tenant, key_id, route, provider, model, status, error_code,
    input_tokens, output_tokens, cached_input_tokens, cache_write_tokens, reasoning_tokens,
    cost_usd, usage_source, recovered
)
SELECT
    printf('bench-%09d', x), time,
    strftime('d:%Y-%m-%d', time, 'unixepoch'), strftime('m:%Y-%m', time, 'unixepoch'),
    CASE WHEN x % 10 = 9 THEN NULL ELSE 'tenant-' || (x % 5) END,
    CASE WHEN x % 10 = 9 THEN NULL ELSE 'key-' || (x % 10) END,
    'route-' || (x % 3),
    CASE WHEN x % 50 = 0 THEN NULL ELSE 'provider-' || (x % 2) END,
    CASE WHEN x % 50 = 0 THEN NULL ELSE 'model-' || (x % 4) END,
    CASE WHEN x % 50 = 0 THEN 503 ELSE 200 END,
    CASE WHEN x % 50 = 0 THEN 'no_route' END,
    CASE WHEN x % 50 = 0 THEN 0 ELSE 100 + x % 900 END,
    CASE WHEN x % 50 = 0 THEN 0 ELSE 16 + x % 290 END,
    CASE WHEN x % 50 = 0 THEN 0 ELSE x % 64 END,
    0,
    CASE WHEN x % 50 = 0 THEN 0 ELSE x % 16 END,
    CASE WHEN x % 50 = 0 OR x % 23 = 0 THEN NULL ELSE (1 + x % 97) / 1e6 END,
    CASE WHEN x % 11 = 0 THEN 'estimate' ELSE 'provider' END,
    x % 101 = 0
FROM t
"""


def make_database(path: Path) -> None:
    """An empty state database at the schema of the gw this runs with."""

    async def create() -> None:
        async with await SqliteStore.open(path):
            pass

    asyncio.run(create())


def fill_usage(path: Path, rows: int, *, end: float, days: int = DAYS) -> None:
    """Add ``rows`` usage rows (see ``FILL_SQL``) over the ``days`` before ``end`` to the
    database at ``path`` (made by gw: its triggers keep the rollup), in one transaction."""
    span = days * 86_400.0
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("PRAGMA synchronous = OFF")  # this connection only: a bulk load
        db.execute("PRAGMA cache_size = -262144")  # 256 MiB: the indexes stay in memory
        db.execute("BEGIN")
        db.execute(FILL_SQL, {"rows": rows, "start": end - span, "span": span})
        db.execute("COMMIT")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()


class Client:
    """A keep-alive HTTP client for one thread; each call waits for the last answer."""

    def __init__(self, url: str, token: str) -> None:
        host, port = url.removeprefix("http://").split(":")
        self._connection = http.client.HTTPConnection(host, int(port), timeout=CALL_TIMEOUT_S)
        self._headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}

    def call(self, method: str, path: str, body: bytes | None = None) -> tuple[float, int]:
        """(seconds, status)."""
        started = time.perf_counter()
        self._connection.request(method, path, body=body, headers=self._headers)
        response = self._connection.getresponse()
        response.read()
        return time.perf_counter() - started, response.status

    def close(self) -> None:
        self._connection.close()


def one_at_a_time(client: Client, seconds: float) -> tuple[list[float], int]:
    """Chat requests back to back for ``seconds``: their latencies and how many failed."""
    latencies: list[float] = []
    failed = 0
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        took, status = client.call("POST", "/v1/chat/completions", BODY)
        latencies.append(took)
        failed += status != 200
    return latencies, failed


class AdminLoad:
    """The two admin clients of the busy phase (see the module docstring), in threads."""

    def __init__(self, url: str, admin_key: str) -> None:
        self._url, self._key = url, admin_key
        self._stop = threading.Event()
        self.reports: list[float] = []  # seconds per /admin/v1/usage call
        self.dashboard: list[float] = []  # seconds per round of the dashboard's calls
        self.failed = 0
        self._threads = [
            threading.Thread(target=self._reports_loop, daemon=True),
            threading.Thread(target=self._dashboard_loop, daemon=True),
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(CALL_TIMEOUT_S)

    def _reports_loop(self) -> None:
        client = Client(self._url, self._key)
        paths = [f"/admin/v1/usage?by={by}{since}" for by in GROUPS for since in ("", "&since=7d")]
        paths += [f"/admin/v1/usage?by={by}&since=30d" for by in GROUPS]
        try:
            while not self._stop.is_set():
                for path in paths:
                    took, status = client.call("GET", path)
                    self.reports.append(took)
                    self.failed += status != 200
                    if self._stop.is_set():
                        break
        finally:
            client.close()

    def _dashboard_loop(self) -> None:
        clients = [Client(self._url, self._key) for _ in DASHBOARD_USAGE]
        pool = ThreadPoolExecutor(len(clients))
        try:
            while not self._stop.is_set():
                started = time.perf_counter()
                answers = list(pool.map(lambda c, p: c.call("GET", p), clients, DASHBOARD_USAGE))
                answers += [clients[0].call("GET", path) for path in DASHBOARD_REST]
                self.failed += sum(status != 200 for _, status in answers)
                self.dashboard.append(time.perf_counter() - started)
        finally:
            pool.shutdown()
            for client in clients:
                client.close()


def server_env(admin_key: str) -> dict[str, str]:
    """The server runs the gw this benchmark imports (the one that made the database)."""
    return clean_env({"GW_ADMIN_KEY": admin_key, "PYTHONPATH": str(Path(gw.__file__).parents[1])})


def run_usage_reports(
    rows: int, work: Path, logs: Path, tell: Callable[[str], None]
) -> dict[str, object]:
    """Run the scenario (see the module docstring); the figures, as saved."""
    gw_cli = str(Path(sys.executable).parent / "gw")
    state = work / "usage-state"
    state.mkdir(parents=True)
    (state / "gw.yaml").write_text(CONFIG)
    database = state / "gw.db"
    admin_key = secrets.token_urlsafe(32)
    env = server_env(admin_key)
    started = time.perf_counter()
    make_database(database)
    fill_usage(database, rows, end=time.time())
    fill_s = time.perf_counter() - started
    size = database.stat().st_size
    tell(f"{rows:,} usage rows made by SQL in {fill_s:.1f} s ({size / 2**20:.0f} MiB)")
    created = subprocess.run(
        [gw_cli, "keys", "create", "--tenant", "bench", "--json", "--state-dir", str(state)],
        check=True,
        capture_output=True,
        env=env,
        text=True,
    )
    api_key = json.loads(created.stdout)["key"]
    argv = [gw_cli, "serve", "--port", "0", "--state-dir", str(state)]
    logs.mkdir(parents=True, exist_ok=True)
    with ProcessSet(logs) as processes:
        spawned = processes.spawn("gw-usage-reports", argv, env=env)

        def locate() -> str | None:
            try:
                url = json.loads((state / "server.json").read_text())["url"]
            except (OSError, ValueError, KeyError):
                return None
            return f"{url}/v1/chat/completions"

        start_s = first_answer(spawned, locate, BODY, START_TIMEOUT_S, api_key)
        tell(f"gw serve: first answer {start_s:.2f} s after start")
        url = (locate() or "").removesuffix("/v1/chat/completions")
        client = Client(url, api_key)
        idle, idle_failed = one_at_a_time(client, IDLE_S)
        load = AdminLoad(url, admin_key)
        load.start()
        busy, busy_failed = one_at_a_time(client, BUSY_S)
        load.stop()
        client.close()
        processes.stop(spawned)
    if idle_failed or busy_failed or load.failed:
        raise BenchError(
            f"failed calls: {idle_failed} idle, {busy_failed} busy, {load.failed} admin"
        )
    quiet, loaded = summary(idle), summary(busy)
    quiet["per_s"] = round(len(idle) / IDLE_S, 1)
    loaded["per_s"] = round(len(busy) / BUSY_S, 1)
    reports, dashboard = summary(load.reports), summary(load.dashboard)
    tell(
        f"one request at a time: idle {quiet['per_s']}/s, p50 {quiet['p50_ms']} ms, p99 "
        f"{quiet['p99_ms']} ms, max {quiet['max_ms']} ms; while reports run "
        f"{loaded['per_s']}/s, p50 {loaded['p50_ms']} ms, p99 {loaded['p99_ms']} ms, "
        f"max {loaded['max_ms']} ms"
    )
    tell(
        f"meanwhile {reports['requests']} usage reports (p50 {reports['p50_ms']} ms, max "
        f"{reports['max_ms']} ms) and {dashboard['requests']} dashboard refreshes (p50 "
        f"{dashboard['p50_ms']} ms, max {dashboard['max_ms']} ms)"
    )
    return {
        "rows": rows,
        "database_bytes": size,
        "fill_s": round(fill_s, 3),
        "start_to_first_answer_s": round(start_s, 3),
        "idle": quiet,
        "during_reports": loaded,
        "usage_reports": reports,
        "dashboard_refreshes": dashboard,
        "cpus": len(os.sched_getaffinity(0)),
    }

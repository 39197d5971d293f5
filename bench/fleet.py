"""``scripts/bench --fleet [SECONDS]``: what a fleet's shared state costs a request, and
what three gateways serve next to one (issue 26's "Speed").

Every gateway serves the built-in ``mock`` provider (no upstream process to share the
CPU with) to one tenant that has every kind of limit and a budget, none ever reached, so
that each request is admitted, reserved, settled and billed as in production. The client
is wrk, through one key of that tenant. Three layouts, measured in one run:

- ``sqlite``: one gateway, SQLite state and limits counted in-process (the default);
- ``fleet x1``: one gateway, state in PostgreSQL (a database of this run's own, dropped
  after) and limits in Redis (under a tenant name of this run's own, deleted after);
- ``fleet x3``: three such gateways sharing that database and Redis.

(a) Added latency: c=1 p50 / p99 of ``sqlite`` and ``fleet x1`` (SECONDS each).
(b) Throughput at c=64: each layout. wrk takes one URL, so ``fleet x3`` is three wrk
processes at once, one per gateway, at c=21/21/22, their requests/s summed: the
round-robin a load balancer would do, fixed per connection.

Every gateway, wrk and the two services share this machine's CPUs: the load average
after the three-gateway load and the CPU count are saved next to the figures, because on
a machine with fewer cores than gateways the ratio says how many cores there are, not
how well gw scales. PostgreSQL: ``GW_BENCH_POSTGRES_URL`` (an administration database;
default the local server); Redis: ``GW_BENCH_REDIS_URL`` (default ``127.0.0.1:6379/0``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import redis

from bench import proctree
from bench.errors import BenchError
from bench.loadgen import WrkReport, ensure_wrk, lua_script, run_wrk
from bench.probe import first_answer
from bench.processes import ProcessSet, Spawned, clean_env
from bench.targets import compile_gw

DEFAULT_SECONDS = 10
CONCURRENCY = 64
GATEWAYS = 3
START_TIMEOUT_S = 60.0
CONFIG = """
{state}
providers:
  - {{name: mock, kind: mock}}
models:
  - {{provider: mock, model: mock-1, input_per_mtok: 0.1, output_per_mtok: 0.1}}
routes:
  - {{name: chat, targets: [{{provider: mock, model: mock-1}}]}}
telemetry: {{request_log: "off"}}
tenants:
  - name: {tenant}
    limits: {{requests_per_minute: 100000000, tokens_per_minute: 100000000000,
              max_concurrency: 100000}}
    budget: {{daily_usd: 1000000000, monthly_usd: 10000000000}}
"""
BODY = json.dumps(
    {"model": "chat", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 16}
).encode()


def postgres_admin_url() -> str:
    return os.environ.get("GW_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


def redis_url() -> str:
    return os.environ.get("GW_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")


async def _admin(statement: str) -> None:
    conn = await asyncpg.connect(postgres_admin_url(), timeout=10)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


@contextmanager
def bench_database() -> Iterator[str]:
    """A new database of this run's own, dropped afterwards."""
    name = f"gw_bench_{secrets.token_hex(4)}"
    try:
        asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as exc:
        raise BenchError(
            f"--fleet needs PostgreSQL at {postgres_admin_url()} (GW_BENCH_POSTGRES_URL): {exc}"
        ) from None
    try:
        yield urlunsplit(urlsplit(postgres_admin_url())._replace(path=f"/{name}"))
    finally:
        asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@contextmanager
def redis_namespace(tenant: str) -> Iterator[str]:
    """The Redis URL, checked; afterwards the keys of ``tenant`` (this run's own) go."""
    client = redis.Redis.from_url(redis_url(), socket_timeout=5)
    try:
        client.ping()
    except redis.RedisError as exc:
        raise BenchError(
            f"--fleet needs Redis at {redis_url()} (GW_BENCH_REDIS_URL): {exc}"
        ) from None
    try:
        yield redis_url()
    finally:
        made = list(client.scan_iter(match=f"*{{{tenant}}}*", count=1000))
        if made:
            client.delete(*made)
        client.close()


class Layout:
    """Gateways sharing one config, each with its own state dir, and a key of the tenant."""

    def __init__(self, name: str, work: Path, config: str, env: dict[str, str]) -> None:
        self.name = name
        self.home = work / name.replace(" ", "-")
        self.home.mkdir(parents=True)
        self.config = self.home / "gw.yaml"
        self.config.write_text(config)
        self.env = clean_env(env)
        self.gw = str(Path(sys.executable).parent / "gw")
        self.urls: list[str] = []
        self.spawned: list[Spawned] = []

    def key(self, tenant: str) -> str:
        made = subprocess.run(
            [self.gw, "keys", "create", "--tenant", tenant, "--json", "--config",
             str(self.config), "--state-dir", str(self.home / "gw0")],
            capture_output=True, text=True, check=True, env=self.env,
        )  # fmt: skip
        return str(json.loads(made.stdout)["key"])

    def start(self, processes: ProcessSet, count: int, key: str) -> None:
        for n in range(count):
            state = self.home / f"gw{n}"
            argv = [self.gw, "serve", "--port", "0", "--state-dir", str(state),
                    "--config", str(self.config)]  # fmt: skip
            spawned = processes.spawn(f"{self.name.replace(' ', '-')}-gw{n}", argv, env=self.env)
            self.spawned.append(spawned)

            def locate(state: Path = state) -> str | None:
                try:
                    url = json.loads((state / "server.json").read_text())["url"]
                except (OSError, ValueError, KeyError):
                    return None
                return f"{url}/v1/chat/completions"

            first_answer(spawned, locate, BODY, START_TIMEOUT_S, key)
            self.urls.append(locate() or "")

    def stop(self, processes: ProcessSet) -> None:
        for spawned in self.spawned:
            processes.stop(spawned)
        self.spawned.clear()
        self.urls.clear()


def wrk_figures(report: WrkReport) -> dict[str, float | int]:
    return {
        "rps": round(report.rps, 1),
        "p50_ms": round(report.p50_ms, 3),
        "p99_ms": round(report.p99_ms, 3),
        "requests": report.requests,
        "errors": report.non_2xx + report.socket_errors,
    }


def machine_ticks() -> tuple[int, int]:
    """(busy, total) CPU ticks of the whole machine so far (/proc/stat's first line)."""
    with open("/proc/stat", encoding="ascii") as stat:
        fields = [int(word) for word in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def gateways_cpu_s(roots: list[int]) -> float:
    return sum(proctree.sample(root).cpu_seconds for root in roots)


def spread_load(
    wrk: str, urls: list[str], script: Path, seconds: float, roots: list[int]
) -> dict[str, Any]:
    """wrk at c=64 over ``urls``: one wrk per URL at once, the connections dealt evenly;
    requests/s summed, the worst p50 and p99 of the parts. Also what the gateways (pids
    ``roots``) and the whole machine spent of the CPU meanwhile."""
    cpu_before, (busy_before, total_before) = gateways_cpu_s(roots), machine_ticks()
    wall = time.perf_counter()
    shares = [CONCURRENCY // len(urls) + (n < CONCURRENCY % len(urls)) for n in range(len(urls))]
    threads = max(1, 2 // len(urls))
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(urls)) as pool:
        parts = list(
            pool.map(
                lambda pair: run_wrk(wrk, pair[0], script, concurrency=pair[1],
                                     duration_s=seconds, threads=threads),
                zip(urls, sorted(shares), strict=True),
            )
        )  # fmt: skip
    wall = time.perf_counter() - wall
    cpu = gateways_cpu_s(roots) - cpu_before
    busy, total = machine_ticks()
    load = os.getloadavg()[0]
    return {
        "gateway_cores": round(cpu / wall, 2),
        "machine_busy": round((busy - busy_before) / max(1, total - total_before), 3),
        "rps": round(sum(part.rps for part in parts), 1),
        "p50_ms": round(max(part.p50_ms for part in parts), 3),
        "p99_ms": round(max(part.p99_ms for part in parts), 3),
        "requests": sum(part.requests for part in parts),
        "errors": sum(part.non_2xx + part.socket_errors for part in parts),
        "connections": sorted(shares),
        "load_average_after": round(load, 2),
    }


def run_fleet(
    seconds: int, work: Path, logs: Path, tell: Callable[[str], None]
) -> dict[str, object]:
    """Run the scenario (see the module docstring); the figures, as saved."""
    wrk = ensure_wrk(tell)
    compile_gw()
    logs.mkdir(parents=True, exist_ok=True)
    tenant = f"bench-{secrets.token_hex(4)}"
    results: dict[str, dict[str, Any]] = {}
    with (
        bench_database() as database,
        redis_namespace(tenant) as shared_redis,
        ProcessSet(logs) as processes,
    ):
        fleet_state = f'state: {{url: "{database}", redis_url: "{shared_redis}"}}'
        layouts = [
            ("sqlite", "", 1),
            ("fleet x1", fleet_state, 1),
            ("fleet x3", fleet_state, GATEWAYS),
        ]
        for name, state, count in layouts:
            layout = Layout(name, work, CONFIG.format(state=state, tenant=tenant), {})
            key = layout.key(tenant)
            script = layout.home / "post.lua"
            script.write_text(lua_script(BODY, key))
            started = time.perf_counter()
            layout.start(processes, count, key)
            tell(
                f"{name}: {count} gateway(s) answering after {time.perf_counter() - started:.1f} s"
            )
            figures: dict[str, Any] = {"gateways": count}
            if count == 1:
                c1 = run_wrk(wrk, layout.urls[0], script, concurrency=1, duration_s=seconds,
                             threads=1)  # fmt: skip
                figures["c1"] = wrk_figures(c1)
                tell(f"{name}: c=1 p50 {c1.p50_ms:.2f} ms, p99 {c1.p99_ms:.2f} ms")
            figures["c64"] = spread_load(
                wrk, layout.urls, script, seconds, [spawned.pid for spawned in layout.spawned]
            )
            c64 = figures["c64"]
            tell(
                f"{name}: c=64 {c64['rps']} requests/s, gateways using {c64['gateway_cores']}"
                f" cores, the machine {c64['machine_busy']:.0%} busy"
            )
            layout.stop(processes)
            results[name] = figures
    one, three = (results[name]["c64"]["rps"] for name in ("fleet x1", "fleet x3"))
    return {
        "seconds": seconds,
        "cpus": len(os.sched_getaffinity(0)),
        "layouts": results,
        "three_vs_one": round(three / one, 2) if one else None,
    }

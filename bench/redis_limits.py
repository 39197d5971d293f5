"""What the fleet's limits in Redis add to a request, next to limits counted in-process.

Two measurements, each side by side:

1. admit + settle, alone: ``LocalLimits`` against ``RedisLimits`` (one EVALSHA each way)
   on a tenant with every kind of limit (rpm, tpm, concurrency, daily and monthly budget),
   sequential, settle awaited (``drain``) so that its round trip is counted too;
2. end to end: one ``gw serve`` per mode in front of the built-in ``mock`` provider,
   the same tenant and key, requests from a keep-alive HTTP client, sequential and at
   concurrency 16. The client is Python: compare the modes, not the absolute figures.

Usage: ``.venv/bin/python -m bench.redis_limits [--redis-url URL] [--ops N] [--requests N]``.
Redis keys are written under a prefix of this run's own and deleted afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import redis

from gw.config.schema import TenantBudget, TenantConfig, TenantLimits
from gw.execution.local_limits import LocalLimits
from gw.fleet.redis_limits import RedisLimits
from gw.ports import TenantLimits as Limits

TENANT = TenantConfig(
    name="bench",
    limits=TenantLimits(
        requests_per_minute=10_000_000, tokens_per_minute=10_000_000_000, max_concurrency=10_000
    ),
    budget=TenantBudget(daily_usd=1e9, monthly_usd=1e10),
)
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
  - name: bench
    limits: {{requests_per_minute: 10000000, tokens_per_minute: 10000000000,
              max_concurrency: 10000}}
    budget: {{daily_usd: 1000000000, monthly_usd: 10000000000}}
"""
BODY = {"model": "chat", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 16}


def percentiles(samples_s: list[float]) -> dict[str, float]:
    ordered = sorted(samples_s)
    cut = statistics.quantiles(ordered, n=100, method="inclusive")
    return {
        "p50_ms": round(cut[49] * 1000, 3),
        "p99_ms": round(cut[98] * 1000, 3),
        "mean_ms": round(statistics.fmean(ordered) * 1000, 3),
    }


async def time_limits(limits: Limits, ops: int) -> dict[str, float]:
    samples: list[float] = []
    wall = time.time()
    for n in range(ops + ops // 10):  # the first tenth warms up and is not counted
        started = time.perf_counter()
        await limits.admit(
            TENANT, f"r{n}", tokens=100, cost_usd=0.0001, lease_ttl=660, now=0, wall=wall
        )
        limits.settle(f"r{n}", tokens=50, cost_usd=0.00005)
        await limits.drain()
        if n >= ops // 10:
            samples.append(time.perf_counter() - started)
    await limits.aclose()
    return percentiles(samples)


def micro(redis_url: str, ops: int) -> dict[str, dict[str, float]]:
    prefix = f"gwbench:{uuid.uuid4().hex[:8]}:"

    async def shared() -> dict[str, float]:
        return await time_limits(await RedisLimits.connect(redis_url, prefix=prefix), ops)

    try:
        return {
            "in_process": asyncio.run(time_limits(LocalLimits(), ops)),
            "redis": asyncio.run(shared()),
        }
    finally:
        client = redis.Redis.from_url(redis_url)
        keys = list(client.scan_iter(match=f"{prefix}*"))
        if keys:
            client.delete(*keys)
        client.close()


@contextlib.contextmanager
def gw_serve(home: Path, state: str) -> Iterator[tuple[str, str]]:
    """A gw serve with the bench tenant; yields its URL and a key of the tenant."""
    home.mkdir(parents=True)
    config = home / "gw.yaml"
    config.write_text(CONFIG.format(state=state))
    gw = str(Path(sys.executable).parent / "gw")
    made = subprocess.run(
        [gw, "keys", "create", "--tenant", "bench", "--json", "--config", str(config),
         "--state-dir", str(home / "state")],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    key = json.loads(made.stdout)["key"]
    log = (home / "serve.log").open("wb")
    process = subprocess.Popen(
        [gw, "serve", "--port", "0", "--state-dir", str(home / "state"), "--config", str(config)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        server_file = home / "state" / "server.json"
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(FileNotFoundError, json.JSONDecodeError):
                info = json.loads(server_file.read_text())
                if info.get("pid") == process.pid:
                    break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError((home / "serve.log").read_text())
            time.sleep(0.05)
        yield str(info["url"]), key
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


def end_to_end(url: str, key: str, requests: int, concurrency: int) -> dict[str, float]:
    headers = {"authorization": f"Bearer {key}"}
    per_worker = requests // concurrency

    def worker(_: int) -> list[float]:
        samples: list[float] = []
        with httpx.Client(base_url=url, headers=headers, timeout=30) as http:
            for n in range(per_worker + per_worker // 10):
                started = time.perf_counter()
                response = http.post("/v1/chat/completions", json=BODY)
                response.raise_for_status()
                if n >= per_worker // 10:
                    samples.append(time.perf_counter() - started)
        return samples

    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=concurrency) as pool:
        samples = [s for part in pool.map(worker, range(concurrency)) for s in part]
    elapsed = time.perf_counter() - started
    return {**percentiles(samples), "rps": round(len(samples) / elapsed, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--redis-url", default=os.environ.get("GW_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
    )
    parser.add_argument("--ops", type=int, default=5000)
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()
    results: dict[str, object] = {"admit_settle": micro(args.redis_url, args.ops)}
    flush_db = redis.Redis.from_url(args.redis_url)
    with tempfile.TemporaryDirectory() as tmp:
        modes: dict[str, Callable[[], str]] = {
            "in_process": lambda: "",
            "redis": lambda: f'state: {{redis_url: "{args.redis_url}"}}',
        }
        e2e: dict[str, dict[str, dict[str, float]]] = {}
        for mode, state in modes.items():
            with gw_serve(Path(tmp) / mode, state()) as (url, key):
                e2e[mode] = {f"c={c}": end_to_end(url, key, args.requests, c) for c in (1, 16)}
        results["end_to_end"] = e2e
    # The gw serve runs wrote under gw:v1:{bench}: delete them.
    keys = list(flush_db.scan_iter(match="gw:v1:{bench}:*"))
    if keys:
        flush_db.delete(*keys)
    flush_db.close()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

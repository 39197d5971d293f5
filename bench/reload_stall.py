"""``scripts/bench --reload-stall [ROUTES]``: what a hot reload of a large config costs the
requests running meanwhile, and how long gw takes to check and start that config.

gw serves a config of ROUTES routes (default 5,000) on its built-in ``mock`` provider;
one client sends requests one at a time (a fresh request as soon as the last answered),
first while nothing happens (idle), then while the config file is edited and gw reloads
it, until responses carry the new revision. Reported: the slowest request and the 99th
percentile idle and during the reload (the stall is their difference), how long the
reload took to apply, ``gw config validate`` on the file, and the start to the first
answer. Saved to ``bench-results/reload-stall-<time>.json``.
"""

from __future__ import annotations

import http.client
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench.errors import BenchError
from bench.probe import first_answer
from bench.processes import ProcessSet, clean_env

IDLE_S = 3.0
RELOAD_TIMEOUT_S = 300.0
PROVIDERS = 20
BODY = json.dumps({"model": "route-0", "messages": [{"role": "user", "content": "hi"}]}).encode()


def large_config(routes: int, model_suffix: str = "") -> str:
    """``routes`` two-target routes over ``PROVIDERS`` mock providers (~150 bytes each)."""
    lines = ["providers:"]
    lines += [f"  - {{name: p{p}, kind: mock}}" for p in range(PROVIDERS)]
    lines.append("routes:")
    for r in range(routes):
        first, second = r % PROVIDERS, (r + 1) % PROVIDERS
        lines += [
            f"  - name: route-{r}",
            "    targets:",
            f"      - {{provider: p{first}, model: m{first}{model_suffix}, priority: 1}}",
            f"      - {{provider: p{second}, model: m{second}{model_suffix}, priority: 2}}",
        ]
    return "\n".join(lines) + "\n"


class OneAtATime:
    """A keep-alive client: each request waits for the last answer."""

    def __init__(self, url: str) -> None:
        host, port = url.removeprefix("http://").split(":")
        self._connection = http.client.HTTPConnection(host, int(port), timeout=RELOAD_TIMEOUT_S)

    def send(self) -> tuple[float, int, str]:
        """(seconds, status, x-gw-revision) of one chat completion."""
        started = time.perf_counter()
        self._connection.request(
            "POST", "/v1/chat/completions", body=BODY, headers={"content-type": "application/json"}
        )
        response = self._connection.getresponse()
        response.read()
        return (
            time.perf_counter() - started,
            response.status,
            response.getheader("x-gw-revision", ""),
        )

    def close(self) -> None:
        self._connection.close()


def summary(latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies)
    return {
        "requests": len(ordered),
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 2),
        "max_ms": round(ordered[-1] * 1000, 2),
    }


def run_reload_stall(
    routes: int, work: Path, logs: Path, tell: Callable[[str], None]
) -> dict[str, object]:
    """Run the scenario (see the module docstring); the figures, as saved."""
    gw = Path(sys.executable).parent / "gw"
    state = work / "reload-state"
    state.mkdir(parents=True)
    config = state / "gw.yaml"
    config.write_text(large_config(routes))
    size = config.stat().st_size
    started = time.perf_counter()
    subprocess.run([str(gw), "config", "validate", str(config)], check=True, capture_output=True)
    validate_s = time.perf_counter() - started
    tell(f"{routes} routes, {size / 2**20:.1f} MiB: gw config validate {validate_s:.2f} s")
    argv = [str(gw), "serve", "--port", "0", "--state-dir", str(state), "--config", str(config)]
    logs.mkdir(parents=True, exist_ok=True)
    with ProcessSet(logs) as processes:
        spawned = processes.spawn("gw-reload", argv, env=clean_env())

        def locate() -> str | None:
            try:
                url = json.loads((state / "server.json").read_text())["url"]
            except (OSError, ValueError, KeyError):
                return None
            return f"{url}/v1/chat/completions"

        start_s = first_answer(spawned, locate, BODY, RELOAD_TIMEOUT_S)
        tell(f"gw serve: first answer {start_s:.2f} s after start")
        url = (locate() or "").removesuffix("/v1/chat/completions")
        client = OneAtATime(url)
        idle: list[float] = []
        until = time.perf_counter() + IDLE_S
        while time.perf_counter() < until:
            seconds, status, revision = client.send()
            if status != 200:
                raise BenchError(f"idle request answered {status}")
            idle.append(seconds)
        during: list[float] = []
        config.write_text(large_config(routes, model_suffix="-next"))
        edited = time.perf_counter()
        failed = 0
        while True:
            seconds, status, new_revision = client.send()
            during.append(seconds)
            failed += status != 200
            if new_revision != revision:
                break
            if time.perf_counter() - edited > RELOAD_TIMEOUT_S:
                raise BenchError(f"no new revision {RELOAD_TIMEOUT_S:.0f} s after the edit")
        applied_s = time.perf_counter() - edited
        client.close()
        processes.stop(spawned)
    quiet, busy = summary(idle), summary(during)
    tell(
        f"reload applied after {applied_s:.2f} s; one request at a time: idle max "
        f"{quiet['max_ms']} ms (p99 {quiet['p99_ms']}), during the reload max "
        f"{busy['max_ms']} ms (p99 {busy['p99_ms']}), {failed} failed"
    )
    return {
        "routes": routes,
        "config_bytes": size,
        "validate_s": round(validate_s, 3),
        "start_to_first_answer_s": round(start_s, 3),
        "reload_applied_s": round(applied_s, 3),
        "idle": quiet,
        "during_reload": busy,
        "failed_during_reload": failed,
    }

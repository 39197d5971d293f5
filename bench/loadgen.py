"""Non-streaming load with wrk (Debian package ``wrk``), installed with apt-get if missing.

wrk is an established, C-speed load generator: at the rates gw should reach, a Python
client would measure itself. Its ``--latency`` report is parsed for requests/s, p50, p90,
p99 and the error counts; errors are reported, never dropped.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.errors import BenchError

_UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0, "h": 3_600_000.0}
_DURATION = r"([\d.]+)(us|ms|s|m|h)"
_PERCENTILE = re.compile(rf"^\s*(50|90|99)(?:\.0+)?%\s+{_DURATION}\s*$", re.MULTILINE)
_REQUESTS = re.compile(rf"^\s*(\d+) requests in {_DURATION}", re.MULTILINE)
_RPS = re.compile(r"^Requests/sec:\s+([\d.]+)", re.MULTILINE)
_NON_2XX = re.compile(r"^\s*Non-2xx or 3xx responses:\s+(\d+)", re.MULTILINE)
_SOCKET = re.compile(
    r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", re.MULTILINE
)


@dataclass(frozen=True)
class WrkReport:
    requests: int
    duration_s: float
    rps: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    non_2xx: int
    socket_errors: int


def to_ms(value: str, unit: str) -> float:
    return float(value) * _UNITS_MS[unit]


def parse_wrk(output: str) -> WrkReport:
    """Read a ``wrk --latency`` report; raises BenchError when a figure is missing."""
    percentiles = {m.group(1): to_ms(m.group(2), m.group(3)) for m in _PERCENTILE.finditer(output)}
    requests, rps = _REQUESTS.search(output), _RPS.search(output)
    if requests is None or rps is None or set(percentiles) != {"50", "90", "99"}:
        raise BenchError(f"unexpected wrk output:\n{output}")
    non_2xx = _NON_2XX.search(output)
    socket = _SOCKET.search(output)
    return WrkReport(
        requests=int(requests.group(1)),
        duration_s=to_ms(requests.group(2), requests.group(3)) / 1000,
        rps=float(rps.group(1)),
        p50_ms=percentiles["50"],
        p90_ms=percentiles["90"],
        p99_ms=percentiles["99"],
        non_2xx=int(non_2xx.group(1)) if non_2xx else 0,
        socket_errors=sum(int(n) for n in socket.groups()) if socket else 0,
    )


def lua_script(body: bytes, bearer: str) -> str:
    """A wrk script that POSTs ``body`` as JSON (a long-bracket string needs no escaping)."""
    text = body.decode()
    if "]==]" in text:
        raise ValueError("the request body cannot hold the Lua long-bracket terminator")
    return (
        'wrk.method = "POST"\n'
        f"wrk.body = [==[{text}]==]\n"
        'wrk.headers["Content-Type"] = "application/json"\n'
        f'wrk.headers["Authorization"] = "Bearer {bearer}"\n'
    )


def wrk_command(
    wrk: str, url: str, script: Path, *, concurrency: int, duration_s: float, threads: int
) -> list[str]:
    threads = max(1, min(threads, concurrency))  # wrk needs connections >= threads
    return [
        wrk,
        f"-t{threads}",
        f"-c{concurrency}",
        f"-d{max(1, round(duration_s))}s",
        "--timeout",
        "10s",  # a slow gateway's answers count as latency, not as timeouts
        "--latency",
        "-s",
        str(script),
        url,
    ]


def run_wrk(
    wrk: str, url: str, script: Path, *, concurrency: int, duration_s: float, threads: int
) -> WrkReport:
    command = wrk_command(
        wrk, url, script, concurrency=concurrency, duration_s=duration_s, threads=threads
    )
    try:
        done = subprocess.run(  # argv built above from the benchmark's own values
            command, capture_output=True, text=True, timeout=duration_s + 60, check=False
        )
    except subprocess.TimeoutExpired:
        raise BenchError(f"wrk did not finish: {' '.join(command)}") from None
    if done.returncode != 0:
        raise BenchError(f"wrk failed ({done.returncode}): {done.stderr.strip()}")
    return parse_wrk(done.stdout)


def _apt(arguments: Sequence[str]) -> bool:
    apt = shutil.which("apt-get")
    if apt is None:
        return False
    command = [apt, *arguments]
    if os.geteuid() != 0:
        sudo = shutil.which("sudo")
        if sudo is None:
            return False
        command = [sudo, "-n", *command]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    done = subprocess.run(command, capture_output=True, timeout=900, check=False, env=env)
    return done.returncode == 0


def ensure_wrk(say: Callable[[str], None]) -> str:
    """The path of wrk, installing Debian's package first if it is missing."""
    found = shutil.which("wrk")
    if found is not None:
        return found
    say("wrk is missing: apt-get install -y wrk")
    if not _apt(["install", "-y", "wrk"]):
        say("apt-get install failed: apt-get update, then install again")
        _apt(["update"])
        _apt(["install", "-y", "wrk"])
    found = shutil.which("wrk")
    if found is None:
        raise BenchError("wrk is not installed and apt-get could not install it (run as root?)")
    return found

"""The response cache under load: gw with ``policies[].cache`` on, asked questions that
always miss or always hit (gw/execution/response_cache.py; issue 28's "Speed").

- ``gw-cache-miss``: every request asks a question never asked before (a random prefix
  per wrk thread or stream run, and a counter), so each one looks up, misses, calls the
  upstream and keeps the answer. Its p50 at concurrency 1 minus ``gw``'s (the same config
  with the cache off) is what the cache costs a request it cannot answer.
- ``gw-cache-hit``: every request asks the same question as ``direct`` and ``gw`` do;
  the start's first answer keeps it, so every measured request is a hit, answered with
  no upstream call. Its p50 at concurrency 1 minus ``direct``'s is what a hit adds.

After its load, each target's ``gw_cache_requests_total`` (GET /metrics, with the state
dir's admin token) must say the workload did what it claims: no hit for the miss target,
no miss but the first for the hit target; otherwise the figures are not what they are
labelled and the target's row says so.
"""

from __future__ import annotations

import http.client
import re
import secrets
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from bench.results import TargetName
from bench.upstream import PROMPT, chat_body

CacheRole = Literal["miss", "hit"]
CACHE_TARGETS: dict[TargetName, CacheRole] = {"gw-cache-miss": "miss", "gw-cache-hit": "hit"}
CACHE_TTL = "10m"
_MARK = "@@prompt@@"  # where the unique prompt goes in the body's template
_OUTCOME = re.compile(r'^gw_cache_requests_total\{[^}]*outcome="(\w+)"[^}]*\}\s+([\d.e+]+)$', re.M)
_METRICS_TIMEOUT_S = 10.0


def cache_policy_yaml() -> str:
    """The policy that turns the cache on for every route; everything else as gw's
    built-in default policy."""
    return (
        "policies:\n"
        "  - name: default\n"
        '    match: {routes: ["*"]}\n'
        f"    cache: {{enabled: true, ttl: {CACHE_TTL}}}\n"
    )


def unique_lua_script(bearer: str) -> str:
    """A wrk script whose every request asks a question no request asked before.

    Each wrk thread draws 8 random bytes in ``init`` (so neither two threads nor two wrk
    runs repeat each other) and counts its requests. wrk builds the request before it
    starts the request's clock, so building it is not in the measured latency.
    """
    before, after = chat_body(stream=False, prompt=_MARK).decode().split(_MARK)
    if "]==]" in before + after:
        raise ValueError("the request body cannot hold the Lua long-bracket terminator")
    return (
        'wrk.method = "POST"\n'
        'wrk.headers["Content-Type"] = "application/json"\n'
        f'wrk.headers["Authorization"] = "Bearer {bearer}"\n'
        f"local before = [==[{before}]==]\n"
        f"local after = [==[{after}]==]\n"
        "local prefix = nil\n"
        "local counter = 0\n"
        "function init(args)\n"
        '  local urandom = assert(io.open("/dev/urandom", "rb"))\n'
        "  local bytes = urandom:read(8)\n"
        "  urandom:close()\n"
        '  prefix = (bytes:gsub(".", function(c) return string.format("%02x", c:byte()) end))\n'
        "end\n"
        "function request()\n"
        "  counter = counter + 1\n"
        f'  local prompt = "{PROMPT} " .. prefix .. "-" .. counter\n'
        "  return wrk.format(nil, nil, nil, before .. prompt .. after)\n"
        "end\n"
    )


def unique_bodies(*, stream: bool) -> Callable[[int], bytes]:
    """Request bodies, the ``i``-th asking ``hi <random>-<i>``: unique within this call's
    bodies, and (by the random prefix) against every other call's."""
    prefix = secrets.token_hex(8)
    return lambda i: chat_body(stream=stream, prompt=f"{PROMPT} {prefix}-s{i}")


def same_body(*, stream: bool) -> Callable[[int], bytes]:
    """The usual request body, whatever the index."""
    body = chat_body(stream=stream)
    return lambda _: body


def cache_outcomes(metrics: str) -> dict[str, int]:
    """``gw_cache_requests_total`` summed by outcome (hit, miss, bypass) over routes."""
    counts: dict[str, int] = {}
    for match in _OUTCOME.finditer(metrics):
        counts[match.group(1)] = counts.get(match.group(1), 0) + int(float(match.group(2)))
    return counts


def read_metrics(chat_url: str, state_dir: Path) -> str:
    """GET /metrics of the gw serving ``chat_url``, with its state dir's admin token."""
    parts = urlsplit(chat_url)
    if parts.hostname is None:
        raise ValueError(f"no host in {chat_url!r}")
    token = (state_dir / "admin-token").read_text().strip()
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=_METRICS_TIMEOUT_S)
    try:
        connection.request("GET", "/metrics", headers={"authorization": f"Bearer {token}"})
        response = connection.getresponse()
        text = response.read().decode(errors="replace")
    finally:
        connection.close()
    if response.status != 200:
        raise OSError(f"GET /metrics answered {response.status}")
    return text


def outcome_problem(role: CacheRole, outcomes: Mapping[str, int]) -> str | None:
    """Why ``outcomes`` are not what ``role``'s workload must give (None: they are).

    The miss target must never hit. The hit target may miss once: the start's first
    request, which keeps the answer every later request is served from.
    """
    hits, misses = outcomes.get("hit", 0), outcomes.get("miss", 0)
    bypassed = outcomes.get("bypass", 0)
    if hits + misses == 0:
        return "gw counted no cache lookup: is the cache on?"
    if bypassed:
        return f"{bypassed} requests bypassed the cache"
    if role == "miss" and hits:
        return f"{hits} of {hits + misses} requests hit the cache: not unique"
    if role == "hit" and misses > 1:
        return f"{misses} of {hits + misses} requests missed the cache"
    return None


def outcome_note(outcomes: Mapping[str, int]) -> str:
    hits, misses = outcomes.get("hit", 0), outcomes.get("miss", 0)
    return f"response cache: {hits:,} hits, {misses:,} misses"

"""What ``GET /admin/v1/status`` (and ``gw status``) reports about the running server.

``RequestCounts`` wraps the gateway's trace sink: every request gw answers records one
trace, so counting there is one addition per request (a stream counts when it ends).
``ServerFacts`` are the things wiring knows at start (address, pid, version, paths) and
the callables that read the rest when asked. The report::

    {"server": {"url", "host", "port", "pid", "version", "started_at", "uptime_s",
                "auth_mode"},
     "revision": 3,                     // the running config revision
     "config": {"path", "exists", "source", "revision", "applied_at", "error",
                "error_at", "reloads", "failures"},  // error: file:line: field: reason
     "store": {"path",                  // the database file, or state.url without password
               "size_bytes",            // null for PostgreSQL (the server's business)
               "schema_version",        // null: the store did not answer (within 2 s)
               "problem": {"code", "message"} | null,  // why it cannot be written (/readyz)
               "prune_rounds"},                         // trace pruning rounds since start
     "vault": {"path", "exists", "references": {"providers[0].api_key": "NAME", ...}},
     "requests": {"total", "by_class": {"2xx", "3xx", "4xx", "5xx"}, "since"},
     "upstream_proxies": {"http", "https", "all", "no_proxy"},  // those set; {}: none
     "usage_journal": {"path", "bytes", "appended", "skipped", "errors",   // this run's
                       "recovered_at_start": {"rows", "without_trace", "torn_lines",
                                              "error"},
                       "spool": {"active", "error", "failing_for_s", "queued", "limit",
                                 "full", "journal_full", "spooled", "lost"}},  // null: none
                     // spool: usage rows waiting while the store is unreachable
                     // (gw/telemetry/usage.py); lost: rows let go with the spool full
     "trace_losses": {"this_run": {"routed", "unrouted"},  // traces dropped so far
                      "last_run": {"started_at", "stopped_at", "ended",  // stopped | killed
                                   "routed", "unrouted", "counted_from"} | null},
                     // routed: of requests with a usage row (null: being counted after a
                     // kill); unrouted: of requests refused before routing (none)
     "fleet": [{"id", "url", "host", "pid", "started_at", "revision", "config_hash",
                "ready", "heartbeat_at", "heartbeat_s", "age_s", "gone", "self"}, ...]}
                     // only with state.url (PostgreSQL): every registered gateway, this
                     // one included ("self"); "gone": no heartbeat for 3 of its intervals;
                     // null while the store does not answer
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

import msgspec

from gw.adapters.secrets import vault_references
from gw.config.snapshot import Snapshot
from gw.ports import TraceSink
from gw.record import TraceRecord
from gw.store.file_checks import StoreProblem

STATUS_CLASSES = ("2xx", "3xx", "4xx", "5xx")


class RequestCounts:
    """A ``TraceSink`` that counts requests by status class, then hands the trace on."""

    def __init__(self, sink: TraceSink) -> None:
        self._sink = sink
        self.total = 0
        self._by_class = [0] * 6  # index: status // 100 (499 client_aborted is a 4xx)

    def submit(self, trace: TraceRecord) -> None:
        self.total += 1
        self._by_class[min(max(trace.status // 100, 0), 5)] += 1
        self._sink.submit(trace)

    def by_class(self) -> dict[str, int]:
        return {name: self._by_class[int(name[0])] for name in STATUS_CLASSES}


class ServerFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What wiring hands the status report: fixed at start, or read when asked."""

    url: str
    host: str
    port: int
    pid: int
    version: str
    started_at: float  # wall clock
    started_mono: float
    database: str  # StateStore.location: a path, or a URL with its password hidden
    database_size: Callable[[], Awaitable[int | None]]  # StateStore.size_bytes
    vault_file: Path
    schema_version: Callable[[], Awaitable[int]]
    counts: RequestCounts
    upstream_proxies: dict[str, str]  # env_proxy.public_proxies: no credentials
    usage_journal: Callable[[], dict[str, object] | None] | None = None  # TelemetryHub's
    trace_losses: Callable[[], dict[str, object] | None] | None = None  # TelemetryHub's
    store_problem: Callable[[], StoreProblem | None] | None = None  # StoreHealth.problem
    prune_rounds: Callable[[], int] | None = None  # TracePruner.rounds
    # With state.url (a fleet): every registered gateway, as gw/startup/fleet_registry.py
    # ``fleet_view`` shows them; None for a gateway alone (the report has no "fleet").
    fleet: Callable[[], Awaitable[list[dict[str, Any]]]] | None = None


class ReloadFacts(Protocol):
    """The reloader's status (gw/reload.py ``ReloadStatus``), as the report needs it."""

    path: str
    revision: int
    applied_at: float | None
    error: str | None
    error_at: float | None
    reloads: int
    failures: int


async def status_report(
    facts: ServerFacts,
    snapshot: Snapshot,
    *,
    reload: ReloadFacts | None,
    auth_mode: str,
    now: float,
    mono: float,
) -> dict[str, Any]:
    """The report in the module docstring's shape."""
    config: dict[str, Any] = {"source": snapshot.source, "revision": snapshot.revision}
    if reload is not None:
        config |= {
            "path": reload.path,
            "exists": await asyncio.to_thread(Path(reload.path).exists),
            "applied_at": reload.applied_at or facts.started_at,
            "error": reload.error,
            "error_at": reload.error_at,
            "reloads": reload.reloads,
            "failures": reload.failures,
        }
    problem = facts.store_problem() if facts.store_problem is not None else None
    fleet = {"fleet": await _unless_down(facts.fleet)} if facts.fleet is not None else {}
    return fleet | {
        "server": {
            "url": facts.url,
            "host": facts.host,
            "port": facts.port,
            "pid": facts.pid,
            "version": facts.version,
            "started_at": round(facts.started_at, 3),
            "uptime_s": round(mono - facts.started_mono, 3),
            "auth_mode": auth_mode,
        },
        "revision": snapshot.revision,
        "config": config,
        "store": {
            "path": facts.database,
            "size_bytes": await facts.database_size(),
            "schema_version": await _unless_down(facts.schema_version),
            "problem": msgspec.to_builtins(problem) if problem is not None else None,
            "prune_rounds": facts.prune_rounds() if facts.prune_rounds is not None else 0,
        },
        "vault": {
            "path": str(facts.vault_file),
            "exists": await asyncio.to_thread(facts.vault_file.exists),
            "references": vault_references(snapshot.config),
        },
        "requests": {
            "total": facts.counts.total,
            "by_class": facts.counts.by_class(),
            "since": round(facts.started_at, 3),
        },
        "upstream_proxies": facts.upstream_proxies,
        "usage_journal": None if facts.usage_journal is None else facts.usage_journal(),
        "trace_losses": None if facts.trace_losses is None else facts.trace_losses(),
        "now": round(now, 3),
    }


STORE_QUERY_TIMEOUT_S = 2.0
T = TypeVar("T")


async def _unless_down(read: Callable[[], Awaitable[T]]) -> T | None:
    """``read()``, or None when the store does not answer: a fleet's PostgreSQL down must
    not take ``gw status`` with it, when status is where an operator looks (the problem
    is in ``store.problem``)."""
    try:
        async with asyncio.timeout(STORE_QUERY_TIMEOUT_S):
            return await read()
    except Exception:  # noqa: BLE001 -- any engine's failure: reported as unknown, not as a 500
        return None

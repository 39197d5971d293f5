"""A period's traces replayed under a candidate config, summed up: the JSON ``gw replay
--json`` prints and ``POST /admin/v1/config/replay`` answers (shape in
docs/reference/cli.md). Pure: the caller reads the traces and builds the snapshot.

Changes are grouped so a day of traffic reads in a screen: traffic that moves from one
first choice to another, requests the candidate would refuse (by route, error code and
reason) or newly serve, decisions newly degraded, and the cost before and after by route
and by tenant.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from gw.config import compile_snapshot, load_config
from gw.config.catalog import ShippedCatalog
from gw.config.snapshot import Snapshot
from gw.execution.cost import DIGITS
from gw.execution.replay import ASSUMPTIONS, Outcome, Replayed, replay_trace
from gw.record import TraceRecord

MAX_CHANGES = 200
"""Changed requests listed one by one (``changes``); the groups count all of them."""


def candidate_snapshot(text: str, source: str, shipped: ShippedCatalog) -> Snapshot:
    """The snapshot a candidate config's ``text`` would compile to (revision 0, no
    plugins loaded, no ``GW_*`` overrides); ``ConfigError`` (file, line, field, reason)
    when it is not a valid config."""
    config = load_config(text, source)
    return compile_snapshot(config, revision=0, source=source, shipped=shipped)


def replay_report(
    traces: Iterable[TraceRecord],
    candidate: Snapshot,
    *,
    since: float,
    until: float,
    source: str,
    truncated: bool = False,
) -> dict[str, Any]:
    """Replay every trace of ``traces`` (one period's) under ``candidate``; the summary.

    ``source`` names the candidate (its file); ``truncated``: the period held more traces
    than were read (``--limit``), said in ``requests.truncated``.
    """
    read = 0
    not_routed: Counter[str] = Counter()
    replayed: list[Replayed] = []
    for trace in traces:
        if trace.endpoint.startswith("admin"):  # admin API calls are traced, never routed
            continue
        read += 1
        if trace.cache == "hit":  # answered from the response cache: no routing to redo
            not_routed["cache_hit"] += 1
            continue
        outcome = replay_trace(trace, candidate)
        if outcome is None:
            not_routed[trace.error_code or "none"] += 1
        else:
            replayed.append(outcome)
    changed = [r for r in replayed if r.changed]
    return {
        "since": since,
        "until": until,
        "candidate": {"source": source, "config_hash": candidate.config_hash},
        "requests": {
            "read": read,
            "replayed": len(replayed),
            "unchanged": len(replayed) - len(changed),
            "changed": len(changed),
            "without_inputs": sum(not r.inputs_known for r in replayed),
            "breaker_shaped": sum(r.breaker_shaped for r in replayed),
            "not_routed": dict(sorted(not_routed.items())),
            "truncated": truncated,
        },
        "moved": _moved(changed),
        "refused": _refused(changed),
        "served": _served(changed),
        "degraded": _degraded(replayed),
        "cost": _cost(replayed),
        "assumptions": list(ASSUMPTIONS),
        "changes": [_change(r) for r in changed[:MAX_CHANGES]],
    }


def _moved(changed: list[Replayed]) -> list[dict[str, Any]]:
    """Served before and after, by another first choice: from -> to, most requests first."""
    pairs = Counter(
        (r.route, r.before.target, r.after.target)
        for r in changed
        if r.before.target and r.after.target
    )
    return [
        {"route": route, "from": before, "to": after, "requests": n}
        for (route, before, after), n in _most_first(pairs)
    ]


def _refused(changed: list[Replayed]) -> list[dict[str, Any]]:
    """Requests the candidate refuses that were not refused so (or not so) before."""
    groups: dict[tuple[str, str, str | None], Counter[str]] = {}
    for r in changed:
        if r.after.code:
            key = (r.route, r.after.code, r.after.reason)
            groups.setdefault(key, Counter())[r.before.label] += 1
    totals = Counter({key: sum(before.values()) for key, before in groups.items()})
    return [
        {
            "route": key[0],
            "code": key[1],
            "reason": key[2],
            "requests": n,
            "before": dict(_most_first(groups[key])),
        }
        for key, n in _most_first(totals)
    ]


def _served(changed: list[Replayed]) -> list[dict[str, Any]]:
    """Requests refused before that the candidate would serve."""
    groups = Counter(
        (r.route, r.before.code, r.after.target)
        for r in changed
        if r.before.code and r.after.target
    )
    return [
        {"route": route, "before_code": code, "to": target, "requests": n}
        for (route, code, target), n in _most_first(groups)
    ]


def _degraded(replayed: list[Replayed]) -> list[dict[str, Any]]:
    """Decisions the candidate degrades (a filter relaxed) that were not degraded so."""
    groups = Counter(
        (r.route, r.after.degraded_reasons)
        for r in replayed
        if r.after.degraded_reasons and r.after.degraded_reasons != r.before.degraded_reasons
    )
    return [
        {"route": route, "reasons": list(reasons), "requests": n}
        for (route, reasons), n in _most_first(groups)
    ]


def _cost(replayed: list[Replayed]) -> dict[str, Any]:
    by_route: dict[str, list[Replayed]] = {}
    by_tenant: dict[str | None, list[Replayed]] = {}
    for r in replayed:
        by_route.setdefault(r.route, []).append(r)
        by_tenant.setdefault(r.tenant, []).append(r)
    return {
        **_sums(replayed),
        "unpriced": sum(r.after_usd is None for r in replayed),
        "by_route": [{"route": k, **_sums(v)} for k, v in sorted(by_route.items())],
        "by_tenant": [
            {"tenant": k, **_sums(v)} for k, v in sorted(by_tenant.items(), key=_tenant_order)
        ],
    }


def _sums(rows: list[Replayed]) -> dict[str, Any]:
    before = round(sum(r.before_usd for r in rows), DIGITS)
    after = round(sum(r.after_usd or 0.0 for r in rows), DIGITS)
    return {
        "requests": len(rows),
        "before_usd": before,
        "after_usd": after,
        "delta_usd": round(after - before, DIGITS),
    }


def _change(r: Replayed) -> dict[str, Any]:
    return {
        "request_id": r.request_id,
        "time": r.time,
        "route": r.route,
        "tenant": r.tenant,
        "before": _outcome(r.before),
        "after": _outcome(r.after),
        "before_usd": r.before_usd,
        "after_usd": r.after_usd,
        "inputs_known": r.inputs_known,
    }


def _outcome(outcome: Outcome) -> dict[str, Any]:
    return {
        "target": outcome.target,
        "code": outcome.code,
        "reason": outcome.reason,
        "degraded_reasons": list(outcome.degraded_reasons),
    }


def _most_first(counts: Counter[Any]) -> list[tuple[Any, int]]:
    """Most requests first, then by key (as text), so the order is stable."""
    return sorted(counts.items(), key=lambda item: (-item[1], repr(item[0])))


def _tenant_order(item: tuple[str | None, object]) -> tuple[bool, str]:
    return item[0] is None, item[0] or ""

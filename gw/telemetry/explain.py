"""A trace as the JSON ``gw explain --json`` prints (shape: gw/cli/explain_view.py), for
the admin API (``GET /admin/v1/traces``) and the route preview, which sit below the CLI.
"""

from __future__ import annotations

from datetime import UTC, datetime

from gw.record import AttemptRecord, TraceRecord
from gw.routing.decision import RouteDecision
from gw.routing.inputs import RoutingInputs


def iso_utc(timestamp: float) -> str:
    """``2026-03-15T14:02:03.120Z``: the time format of every ``--json`` output."""
    moment = datetime.fromtimestamp(timestamp, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def explain_json(trace: TraceRecord) -> dict[str, object]:
    """One trace, decision and attempts included."""
    usage = trace.usage
    return {
        "request_id": trace.request_id,
        "time": iso_utc(trace.time),
        "client_request_id": trace.client_request_id,
        "tenant": trace.tenant,
        "key_id": trace.key_id,
        "endpoint": trace.endpoint,
        "requested_model": trace.requested_model,
        "stream": trace.stream,
        "background": trace.background,
        "replay_of": trace.replay_of,
        "cache": trace.cache,
        "cache_of": trace.cache_of,
        "status": trace.status,
        "error": (
            None
            if trace.error_code is None
            else {"code": trace.error_code, "message": trace.error_message}
        ),
        "revision": trace.revision,
        "latency_ms": trace.latency_ms,
        "ttft_ms": trace.ttft_ms,
        "answered_by": (
            {"provider": trace.provider, "model": trace.model} if trace.answered else None
        ),
        "decision": None if trace.decision is None else decision_json(trace.decision),
        "attempts": [attempt_json(attempt) for attempt in trace.attempts],
        "usage": (
            None
            if usage is None
            else {
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "cached_input_tokens": usage.cached_input_tokens,
                "reasoning_tokens": usage.reasoning_tokens,
                "source": trace.usage_source,
            }
        ),
        "cost_usd": trace.cost_usd,
        "gateway": trace.gateway,
    }


def decision_json(decision: RouteDecision) -> dict[str, object]:
    """The ``decision`` object of ``gw explain --json``."""
    return {
        "route": decision.route,
        "direct": decision.direct,
        "policy": decision.policy,
        "strategy": decision.strategy,
        "degraded": decision.degraded,
        "degraded_reasons": list(decision.degraded_reasons),
        "notes": list(decision.notes),
        "warnings": list(decision.warnings),
        "estimated_input_tokens": decision.estimated_input_tokens,
        "max_output_tokens": decision.max_output_tokens,
        "chain": [target.key for target in decision.chain],
        "inputs": None if decision.inputs is None else inputs_json(decision.inputs),
        "candidates": [
            {
                "provider": c.provider,
                "model": c.model,
                "priority": c.priority,
                "weight": c.weight,
                "rank": c.rank,
                "score": c.score,
                "estimated_cost_usd": c.estimated_cost_usd,
                "rejected": c.rejected,
                "detail": c.detail,
                "relaxed": c.relaxed,
            }
            for c in decision.candidates
        ],
    }


def attempt_json(attempt: AttemptRecord) -> dict[str, object]:
    return {
        "number": attempt.number,
        "provider": attempt.provider,
        "model": attempt.model,
        "account": attempt.account,
        "started_at": iso_utc(attempt.started_at),
        "latency_ms": attempt.latency_ms,
        "ttft_ms": attempt.ttft_ms,
        "outcome": attempt.outcome,
        "upstream_status": attempt.upstream_status,
        "error_code": attempt.error_code,
        "error_message": attempt.error_message,
        "blame": attempt.blame,
        "retry_after_s": attempt.retry_after_s,
        "backoff_ms": attempt.backoff_ms,
        "provider_kind": attempt.provider_kind,
        "translation_notes": list(attempt.translation_notes),
        "limit_notes": list(attempt.limit_notes),
        "hedge": attempt.hedge,
        "upstream_response_id": attempt.upstream_response_id,
    }


def inputs_json(inputs: RoutingInputs) -> dict[str, object]:
    """What the request was routed on (``decision.inputs``): sizes and flags, never text."""
    hints = inputs.hints
    return {
        "kind": inputs.kind,
        "stream": inputs.stream,
        "max_tokens": inputs.max_tokens,
        "needs": sorted(inputs.needs),
        "input_tokens": inputs.input_tokens,
        "window_tokens": inputs.window_tokens,
        "native_format": inputs.native_format,
        "native_tools": list(inputs.native_tools),
        "hints": None
        if hints is None
        else {
            "strategy": hints.strategy,
            "max_cost_usd": hints.max_cost_usd,
            "provider": hints.provider,
        },
    }

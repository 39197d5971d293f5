"""What one request leaves behind, written in one place: its trace (for ``gw explain``,
traces and metrics), its usage-ledger row (gw/execution/usage_row.py), and the settling
of the limits it was admitted under (the real tokens and cost for what was reserved)."""

from __future__ import annotations

from gw.config.snapshot import MODEL_NAME_MAX_CHARS
from gw.errors import GatewayError, clipped
from gw.execution.cost import cost_usd
from gw.execution.request_context import RequestContext
from gw.execution.tenant_admission import ticket_ids
from gw.execution.usage_row import usage_row
from gw.ir import Usage
from gw.ports import Clock, TenantLimits, TraceSink, UsageSink
from gw.record import AttemptRecord, CacheOutcome, TraceRecord, UsageSource
from gw.routing.decision import RouteDecision, TargetRef


class TraceRecorder:
    def __init__(
        self,
        traces: TraceSink,
        clock: Clock,
        *,
        limits: TenantLimits | None,
        usage: UsageSink | None,
        gateway: str | None,
    ) -> None:
        self._traces = traces
        self._clock = clock
        self._limits = limits
        self._usage = usage
        self._gateway = gateway  # this gateway's id, on each trace (gw/fleet/gateway_id.py)

    def record(
        self,
        ctx: RequestContext,
        *,
        requested_model: str,
        stream: bool,
        decision: RouteDecision | None = None,
        attempts: list[AttemptRecord] | None = None,
        target: TargetRef | None = None,
        usage: Usage | None = None,
        usage_source: UsageSource | None = None,
        error: GatewayError | None = None,
        committed: bool = False,
        ttft_ms: float | None = None,
        replay_of: str | None = None,
        cache: CacheOutcome | None = None,
        cache_of: str | None = None,
    ) -> TraceRecord:
        attempts = attempts or []
        if target is None and attempts:
            target = TargetRef(provider=attempts[-1].provider, model=attempts[-1].model)
        entry = ctx.snapshot.catalog.get((target.provider, target.model)) if target else None
        status = 200 if error is None else error.status
        trace = TraceRecord(
            request_id=ctx.request_id,
            time=ctx.started_at,
            endpoint=ctx.endpoint,
            requested_model=clipped(requested_model, MODEL_NAME_MAX_CHARS),  # client text
            stream=stream,
            status=status,
            revision=ctx.snapshot.revision,
            latency_ms=round((self._clock.monotonic() - ctx.started_mono) * 1000, 3),
            route=decision.route if decision else None,
            policy=decision.policy if decision else None,
            provider=target.provider if target else None,
            model=target.model if target else None,
            error_code=error.code if error else None,
            error_message=error.message if error else None,
            client_request_id=ctx.client_request_id,
            tenant=ctx.tenant,
            key_id=ctx.key_id,
            ttft_ms=ttft_ms,
            decision=decision,
            attempts=tuple(attempts),
            usage=usage,
            usage_source=usage_source,
            cost_usd=cost_usd(entry, usage),
            committed=committed,
            background=ctx.background,
            gateway=self._gateway,
            replay_of=replay_of,
            cache=cache,
            cache_of=cache_of,
        )
        if self._limits is not None:
            tokens = usage.input_tokens + usage.output_tokens if usage else 0
            for ticket in ticket_ids(ctx.request_id):
                self._limits.settle(ticket, tokens=tokens, cost_usd=trace.cost_usd)
        self._traces.submit(trace)
        if self._usage is not None:
            row = usage_row(trace)
            if row is not None:
                self._usage.submit(row)
        return trace

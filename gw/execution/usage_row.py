"""A request's usage-ledger row, made from its trace: the same tokens and the same cost.

Which requests get a row: every request that routing decided (``trace.decision`` is
set), whatever came of it: answered, failed upstream, found no usable target, or left by
its client. Each says its status and error code; one that never reached an upstream
has no tokens and costs nothing. Requests refused before routing (a malformed body,
failed auth, an unknown model, an overloaded gateway, admin calls) spend nothing and are
in the traces only.
"""

from __future__ import annotations

from gw.execution.periods import period_label
from gw.ports import UsageRow
from gw.record import TraceRecord


def usage_row(trace: TraceRecord) -> UsageRow | None:
    """The ledger row for ``trace``, or ``None`` when the request never reached routing."""
    decision = trace.decision
    if decision is None:
        return None
    usage = trace.usage
    return UsageRow(
        request_id=trace.request_id,
        time=trace.time,
        day=period_label("day", trace.time),
        month=period_label("month", trace.time),
        tenant=trace.tenant,
        key_id=trace.key_id,
        route=decision.route,
        provider=trace.provider,
        model=trace.model,
        status=trace.status,
        error_code=trace.error_code,
        input_tokens=usage.input_tokens if usage else 0,
        output_tokens=usage.output_tokens if usage else 0,
        cached_input_tokens=usage.cached_input_tokens if usage else 0,
        cache_write_tokens=usage.cache_write_tokens if usage else 0,
        reasoning_tokens=usage.reasoning_tokens if usage else 0,
        cost_usd=trace.cost_usd,
        usage_source=trace.usage_source,
        gateway=trace.gateway,
        policy=decision.policy,
    )

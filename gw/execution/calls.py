"""The call each target gets, and each attempt's own copy of it.

A call is built once per target and account (its model, stream mode and output limit),
then copied for every attempt, so the notes an adapter adds belong to that attempt.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

import msgspec

from gw.config.snapshot import ProviderAccount
from gw.execution.execution_plan import ExecutionPlan
from gw.execution.output_limit import output_limit
from gw.ir import ChatRequest, EmbeddingRequest
from gw.ports import AttemptTimeouts, EmbeddingCall, UpstreamCall
from gw.routing.decision import TargetRef

if TYPE_CHECKING:
    from collections.abc import Callable

CallT = TypeVar("CallT", UpstreamCall, EmbeddingCall)


def chat_calls(
    plan: ExecutionPlan[ChatRequest], *, stream: bool
) -> Callable[[TargetRef, ProviderAccount, AttemptTimeouts], UpstreamCall]:
    """Each target's chat call: its model, the stream mode, its output limit."""

    def call_for(
        target: TargetRef, account: ProviderAccount, timeouts: AttemptTimeouts
    ) -> UpstreamCall:
        limit = output_limit(
            plan.decision.max_output_tokens,
            plan.policy.limits.max_output_tokens,
            plan.catalog.get((target.provider, target.model)),
            target.key,
        )
        return UpstreamCall(
            request_id=plan.request_id,
            provider=account.provider,
            request=msgspec.structs.replace(
                plan.request, model=target.model, stream=stream, max_tokens=limit.max_tokens
            ),
            account=account.name,
            timeouts=timeouts,
            output_ceiling=limit.ceiling,
            limit_notes=list(limit.notes),
        )

    return call_for


def embedding_calls(
    plan: ExecutionPlan[EmbeddingRequest],
) -> Callable[[TargetRef, ProviderAccount, AttemptTimeouts], EmbeddingCall]:
    """Each target's embeddings call: its model."""

    def call_for(
        target: TargetRef, account: ProviderAccount, timeouts: AttemptTimeouts
    ) -> EmbeddingCall:
        return EmbeddingCall(
            request_id=plan.request_id,
            provider=account.provider,
            request=msgspec.structs.replace(plan.request, model=target.model),
            account=account.name,
            timeouts=timeouts,
        )

    return call_for


def fresh_attempt(call: CallT) -> CallT:
    """The call for one attempt: no adapter notes yet, the target's limit notes again."""
    if isinstance(call, UpstreamCall):
        return msgspec.structs.replace(call, notes=[], limit_notes=list(call.limit_notes))
    return msgspec.structs.replace(call, notes=[])


def limit_notes(call: UpstreamCall | EmbeddingCall) -> list[str] | None:
    """What the attempt's record keeps of its output limit (embeddings have none)."""
    return call.limit_notes if isinstance(call, UpstreamCall) else None

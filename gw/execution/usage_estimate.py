"""gw's own token count for output a provider did not report (a cut stream, a quiet server)."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from gw.ir import ChatRequest, ToolCall, Usage
from gw.record import UsageSource
from gw.routing.estimate import estimate_input_tokens


def tokens_for_chars(chars: int) -> int:
    """About four characters a token for English text; an estimate, marked as such."""
    return (max(chars, 0) + 3) // 4


def estimate_output_tokens(text: str | None, tool_calls: Sequence[ToolCall]) -> int:
    chars = len(text or "") + sum(len(call.name) + len(call.arguments) for call in tool_calls)
    return tokens_for_chars(chars)


def usage_or_estimate(
    usage: Usage | None, request: ChatRequest, output_estimate: int
) -> tuple[Usage, UsageSource]:
    """The provider's counts when it sent them, else gw's estimate, and which it is."""
    if usage is not None:
        return usage, "provider"
    estimate = Usage(input_tokens=estimate_input_tokens(request), output_tokens=output_estimate)
    return estimate, "estimate"


def cut_short_usage(usage: Usage | None, request: ChatRequest, output_estimate: int) -> Usage:
    """A stream that ended early: what the provider reported so far (Anthropic reports
    the input first), raised to gw's estimate of what was produced."""
    if usage is None:
        return Usage(input_tokens=estimate_input_tokens(request), output_tokens=output_estimate)
    return msgspec.structs.replace(
        usage,
        input_tokens=usage.input_tokens or estimate_input_tokens(request),
        output_tokens=max(usage.output_tokens, output_estimate),
    )

"""gw's own token count for output a provider did not report (a cut stream, a quiet server)."""

from __future__ import annotations

from collections.abc import Sequence

from gw.ir import ToolCall


def tokens_for_chars(chars: int) -> int:
    """About four characters a token for English text; an estimate, marked as such."""
    return (max(chars, 0) + 3) // 4


def estimate_output_tokens(text: str | None, tool_calls: Sequence[ToolCall]) -> int:
    chars = len(text or "") + sum(len(call.name) + len(call.arguments) for call in tool_calls)
    return tokens_for_chars(chars)

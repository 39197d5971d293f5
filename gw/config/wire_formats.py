"""Which wire format each provider kind speaks: the format a ``NativeBlock`` must match to
be sent to it (an Anthropic server tool goes only to ``kind: anthropic``)."""

from __future__ import annotations

from gw.config.schema import ProviderKind
from gw.ir import NativeFormat

_NATIVE_FORMATS: dict[ProviderKind, NativeFormat] = {
    "anthropic": "anthropic",
    "openai_responses": "openai_responses",
    "gemini": "gemini",
}


def native_format(kind: ProviderKind) -> NativeFormat | None:
    """The format whose native blocks and tools ``kind`` takes; None: no such blocks
    (Chat Completions and its compatibles, the mock)."""
    return _NATIVE_FORMATS.get(kind)

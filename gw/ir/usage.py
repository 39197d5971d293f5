"""Token usage as providers report it, normalised."""

from __future__ import annotations

from gw.ir.base import IRStruct


class Usage(IRStruct, frozen=True, kw_only=True):
    """Token counts. ``input_tokens`` counts every prompt token, of which
    ``cached_input_tokens`` were read from a prompt cache and ``cache_write_tokens`` written
    to one (Anthropic reports the three apart; its codec adds them up);
    ``reasoning_tokens`` are a subset of ``output_tokens``."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

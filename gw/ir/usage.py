"""Token usage as providers report it, normalised."""

from __future__ import annotations

from gw.ir.base import IRStruct


class Usage(IRStruct, frozen=True, kw_only=True):
    """Token counts; ``cached_input_tokens`` and ``reasoning_tokens`` are subsets of the totals."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

"""Embeddings in canonical form: texts (or token arrays) in, one vector per input out."""

from __future__ import annotations

from typing import Any

from gw.ir.base import IRStruct
from gw.ir.usage import Usage

EmbeddingInput = str | tuple[int, ...]
"""One input: a text, or the token ids of one (OpenAI accepts both)."""


class EmbeddingRequest(IRStruct, frozen=True, kw_only=True):
    """``model`` is what the client asked for (route or target); ``inputs`` keep their order.

    ``extensions`` carries wire-format fields by wire-format name, as in ``ChatRequest``:
    the OpenAI codec keeps the client's ``encoding_format`` there (a property of its answer,
    not of the upstream call) and any key it does not know.
    """

    model: str
    inputs: tuple[EmbeddingInput, ...]
    dimensions: int | None = None
    user: str | None = None
    extensions: dict[str, dict[str, Any]] = {}


class EmbeddingResponse(IRStruct, frozen=True, kw_only=True):
    """``vectors[i]`` embeds ``inputs[i]``; ``usage`` is ``None`` when the upstream sent none.

    Tuples, not lists: msgspec decodes JSON arrays into them at least as fast, and they
    keep the value immutable like the rest of the IR.
    """

    model: str
    vectors: tuple[tuple[float, ...], ...]
    usage: Usage | None = None

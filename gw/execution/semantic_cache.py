"""The response cache's second level: a question that means nearly the same as a kept one.

Exact keys miss as soon as one word differs. With ``policies[].cache.semantic`` a request
that misses is split into its *question* (the text of its last message, which must be
the user's) and its *frame* (everything else: the model asked for, the earlier turns,
the system prompt, the tools, the response format, sampling: the cache key of the request
without its last message). The question is embedded by gw's own embeddings route; a kept
answer whose frame is the same and whose question's embedding has a cosine similarity of
at least ``threshold`` with this one serves it. So a hit is always for the same model
class, the same tools and the same conversation so far; only the wording of the last
question may differ.

The vectors are kept with their answers in the response cache (their bytes count against
``cache.max_bytes``) and go when their answers go.
"""

from __future__ import annotations

import array
import math
import operator

import msgspec

from gw.execution.cache_keys import cache_key
from gw.ir import ChatRequest, TextPart, UserMessage


class Probe(msgspec.Struct, frozen=True, kw_only=True):
    """A request's frame and its question's embedding (float32 bytes, unit length)."""

    frame: str
    vector: bytes


def question_and_frame(request: ChatRequest, scope: str) -> tuple[str, str] | None:
    """The question's text and the frame's key; None when the last message is not a
    user's text (a tool result, an image: nothing to compare by meaning)."""
    if not request.messages:
        return None
    last = request.messages[-1]
    if not isinstance(last, UserMessage) or not all(
        isinstance(part, TextPart) for part in last.content
    ):
        return None
    question = "\n".join(part.text for part in last.content if isinstance(part, TextPart))
    if not question.strip():
        return None
    frame = msgspec.structs.replace(request, messages=request.messages[:-1])
    return question, cache_key(frame, scope)


def unit_vector(values: tuple[float, ...] | list[float]) -> bytes:
    """``values`` scaled to length 1, as float32 bytes (a zero vector stays zero)."""
    norm = math.sqrt(math.fsum(value * value for value in values)) or 1.0
    return array.array("f", (value / norm for value in values)).tobytes()


def similarity(one: bytes, other: bytes) -> float:
    """The cosine similarity of two unit vectors (0 when their dimensions differ)."""
    if len(one) != len(other):
        return 0.0
    a, b = array.array("f"), array.array("f")
    a.frombytes(one)
    b.frombytes(other)
    return float(sum(map(operator.mul, a, b)))

"""RoutingInputs: everything routing reads of a request, and nothing of its content.

``decide`` (gw/routing/router.py) first reads a request into these inputs, then decides
from the inputs alone (``decide_inputs``); the decision keeps them (``RouteDecision.inputs``),
so every trace holds what it was routed on, and ``gw replay`` can route a recorded request
again under another config exactly as the gateway would (gw/execution/replay.py).

What is kept is sizes and flags, never text: the estimated input tokens, the capabilities
the request needs, whether it streams, the client's ``max_tokens``, the request kind, the
routing hints of its headers, and, for a request whose provider-side tools only one kind
of provider runs, that format and the tools' type names (``native_tool_names``: plain
names only, as the rejection detail shows them).
"""

from __future__ import annotations

import msgspec

from gw.config.schema import Capability, RequestKind
from gw.ir.content import NativeBlock, NativeFormat
from gw.ir.embeddings import EmbeddingRequest
from gw.ir.request import ChatRequest
from gw.routing.estimate import embedding_input_tokens, estimate_input_tokens
from gw.routing.hints import RoutingHints
from gw.routing.needs import (
    EMBEDDING_NEEDS,
    native_tool_names,
    required_capabilities,
    required_native_format,
)


class RoutingInputs(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What ``decide_inputs`` routes on (see the module docstring).

    ``input_tokens``: the estimate a policy's ``prompt_tokens`` and the cost projection
    read; ``window_tokens``: what must fit a context window (the largest input of an
    embeddings request, which embeds each input on its own; else ``input_tokens``).
    Unknown fields are tolerated, as in every decision value (old readers, new traces).
    """

    kind: RequestKind = "chat"
    stream: bool = False
    max_tokens: int | None = None
    needs: frozenset[Capability] = frozenset()
    input_tokens: int = 0
    window_tokens: int = 0
    native_format: NativeFormat | None = None
    native_tools: tuple[str, ...] = ()
    hints: RoutingHints | None = None

    def native_blocks(self) -> tuple[NativeBlock, ...]:
        """The required provider-side tools as the filters read them (format and type)."""
        if self.native_format is None:
            return ()
        names = self.native_tools or ("native tool",)
        return tuple(NativeBlock(format=self.native_format, data={"type": n}) for n in names)


def routing_inputs(
    request: ChatRequest | EmbeddingRequest,
    *,
    kind: RequestKind | None = None,
    hints: RoutingHints | None = None,
) -> RoutingInputs:
    """Read ``request`` as routing sees it. ``kind`` None: chat, or embeddings for an
    ``EmbeddingRequest``."""
    if isinstance(request, EmbeddingRequest):
        per_input = [embedding_input_tokens(item) for item in request.inputs]
        return RoutingInputs(
            kind=kind or "embeddings",
            max_tokens=0,  # an embedding has no output tokens
            needs=EMBEDDING_NEEDS,
            input_tokens=sum(per_input),
            window_tokens=max(per_input, default=0),
            hints=hints,
        )
    tokens = estimate_input_tokens(request)
    # Only tools the request cannot do without narrow the targets (see needs.py).
    native = required_native_format(request)
    return RoutingInputs(
        kind=kind or "chat",
        stream=request.stream,
        max_tokens=request.max_tokens,
        needs=required_capabilities(request),
        input_tokens=tokens,
        window_tokens=tokens,
        native_format=native,
        native_tools=native_tool_names(request.native_tools) if native else (),
        hints=hints,
    )

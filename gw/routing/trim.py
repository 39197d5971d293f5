"""Trimming a conversation to a token budget: the rule prompt shaping states.

The rule (docs/routing.md, "Prompt shaping"):

- system messages are never dropped, wherever they stand;
- the current turn, from the last user message to the end (the tool calls and results
  the model has made since included), is never dropped;
- before it, whole turns are dropped, oldest first: a turn begins at a user message and
  runs to the next one; what stands before the first user message (after the system
  prompt) is the oldest turn;
- an assistant's tool call and the tool results that answer it are never parted: a user
  message between them begins no turn, so the turns on either side go (or stay) together;
- as few turns as make the estimate fit: the estimate is routing's own
  (``estimate_input_tokens``), so a trimmed request that fits here passes routing's
  context-window filter.

A conversation trimmed this way still begins (after its system messages) with a user
message, which Anthropic and Gemini require.
"""

from __future__ import annotations

import msgspec

from gw.ir.messages import AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage
from gw.ir.request import ChatRequest
from gw.routing.estimate import estimate_input_tokens


class Trimmed(msgspec.Struct, frozen=True, kw_only=True):
    """A request after trimming: ``dropped`` of ``total`` messages gone, about ``tokens``
    input tokens left (routing's estimate)."""

    request: ChatRequest
    dropped: int
    total: int
    tokens: int


def cut_points(messages: tuple[Message, ...]) -> list[int]:
    """Where the kept part may begin, ascending: each index at which a turn begins and
    whose cut drops something; the last one begins the current turn. Cutting at ``i``
    drops every message before ``i`` but the system messages. Empty: nothing may go."""
    answered_at: dict[str, int] = {}  # a tool call's id -> the index of its last result
    for index, message in enumerate(messages):
        if isinstance(message, ToolMessage):
            answered_at[message.tool_call_id] = index
    # A cut at i parts a call made before i from a result at i or later: i is no cut.
    parted: set[int] = set()
    for index, message in enumerate(messages):
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                parted.update(range(index + 1, answered_at.get(call.id, index) + 1))
    cuts: list[int] = []
    droppable = False  # a non-system message stands before the index
    for index, message in enumerate(messages):
        if isinstance(message, UserMessage) and droppable and index not in parted:
            cuts.append(index)
        droppable = droppable or not isinstance(message, SystemMessage)
    return cuts


def cut_at(request: ChatRequest, cut: int) -> ChatRequest:
    """``request`` without the messages before ``cut`` that are not system messages."""
    messages = request.messages
    kept = tuple(m for m in messages[:cut] if isinstance(m, SystemMessage)) + messages[cut:]
    return msgspec.structs.replace(request, messages=kept)


def shortest_form(request: ChatRequest) -> ChatRequest:
    """``request`` trimmed as far as the rule allows (the system messages and the current
    turn); ``request`` itself when nothing may go."""
    cuts = cut_points(request.messages)
    return cut_at(request, cuts[-1]) if cuts else request


def trim_to_fit(request: ChatRequest, budget: int) -> Trimmed:
    """``request`` with the fewest oldest turns dropped that bring routing's input estimate
    to ``budget`` tokens or below; trimmed as far as the rule allows when none does (the
    caller compares ``tokens`` with the budget)."""
    total = len(request.messages)
    tokens = estimate_input_tokens(request)
    if tokens <= budget:
        return Trimmed(request=request, dropped=0, total=total, tokens=tokens)
    cuts = cut_points(request.messages)
    if not cuts:
        return Trimmed(request=request, dropped=0, total=total, tokens=tokens)
    # The estimate only falls as more turns go: the first cut that fits, by bisection.
    low, high = 0, len(cuts) - 1
    best = cut_at(request, cuts[high])
    best_tokens = estimate_input_tokens(best)
    if best_tokens <= budget:
        while low < high:
            middle = (low + high) // 2
            candidate = cut_at(request, cuts[middle])
            candidate_tokens = estimate_input_tokens(candidate)
            if candidate_tokens <= budget:
                high, best, best_tokens = middle, candidate, candidate_tokens
            else:
                low = middle + 1
    return Trimmed(
        request=best, dropped=total - len(best.messages), total=total, tokens=best_tokens
    )

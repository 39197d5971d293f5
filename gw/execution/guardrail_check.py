"""Guardrails applied to one request: its prompt before routing's chain is run, its
answer after (whole, or a stream at a bounded window).

The rules come compiled with the snapshot (gw/config/guardrails.py). What is checked:
the text of every message (system, user, assistant, tool results) and each text input
of an embeddings request; of an answer, its text and refusal. Images, files, provider
blocks and tool-call arguments are not text a rule reads. Every refusal is
``content_blocked`` naming the rule and never the matched text; a mask is noted (counts
by kind, never what was masked) and sent to the client as a warning.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

import msgspec

from gw.config.guardrails import Guardrails, GuardrailTimeoutError, PolicyGuards, TextRule
from gw.errors import ContentBlockedError
from gw.execution.execution_plan import RequestT
from gw.ir import (
    AssistantMessage,
    ChatRequest,
    ChatResponse,
    EmbeddingRequest,
    Message,
    SystemMessage,
    TextPart,
    ToolMessage,
    UserMessage,
)
from gw.routing.decision import RouteDecision

P = TypeVar("P")


def blocked_error(rule: str, policy: str, stage: str) -> ContentBlockedError:
    what = "request" if stage == "input" else "answer"
    return ContentBlockedError(
        f"the {what} was blocked by guardrail {rule!r} (policy {policy}): its content "
        f"matches what the rule refuses in the {stage}; change the content, or ask the "
        "operator about the rule"
    )


def timed_out_error(rule: str, policy: str, stage: str) -> ContentBlockedError:
    return ContentBlockedError(
        f"guardrail {rule!r} (policy {policy}) could not finish checking the {stage} within "
        "its timeout, and guardrails fail closed; the operator can simplify the rule's "
        "patterns or raise its timeout"
    )


def _first_blocking(rules: tuple[TextRule, ...], texts: Iterator[str]) -> str | None:
    """The name of the first rule that finds something in any of ``texts``."""
    pending = list(texts)
    for rule in rules:
        deadline = rule.deadline()
        for text in pending:
            if text and rule.found(text, deadline):
                return rule.name
    return None


def _texts(request: ChatRequest | EmbeddingRequest) -> Iterator[str]:
    if isinstance(request, EmbeddingRequest):
        yield from (text for text in request.inputs if isinstance(text, str))
        return
    for message in request.messages:
        for part in message.content:
            if isinstance(part, TextPart):
                yield part.text


def screen_prompt(
    request: RequestT, guardrails: Guardrails, decision: RouteDecision
) -> tuple[RequestT, RouteDecision]:
    """The request as the decision's policy lets it go upstream (masked, perhaps), and
    the decision noting each mask (also as a warning: the client is told its prompt was
    changed, never what was in it); raises ``ContentBlockedError``."""
    guards = guardrails.for_policy(decision.policy)
    if guards is None or not (guards.input_block or guards.input_mask):
        return request, decision
    masked: tuple[str, ...]
    screened, masked = guard_input(request, guards, decision.policy)
    if not masked:
        return screened, decision
    noted = msgspec.structs.replace(
        decision, notes=(*decision.notes, *masked), warnings=(*decision.warnings, *masked)
    )
    return screened, noted


def screen_answer(response: ChatResponse, guardrails: Guardrails, policy: str) -> None:
    """Raises ``ContentBlockedError`` when an output rule of ``policy`` finds something."""
    guards = guardrails.for_policy(policy)
    if guards is not None and guards.output_block:
        guard_answer(response, guards, policy)


def stream_guard(guardrails: Guardrails, policy: str) -> StreamGuard | None:
    """The guard for a streamed answer under ``policy``; None when it has no output rule."""
    guards = guardrails.for_policy(policy)
    if guards is None or not guards.output_block:
        return None
    return StreamGuard(guards, policy)


def guard_input(
    request: RequestT, guards: PolicyGuards, policy: str
) -> tuple[RequestT, tuple[str, ...]]:
    """The request after the policy's input rules: masked where a mask rule found
    something, with a note per rule that masked; raises ``ContentBlockedError`` when a
    block rule finds something (or a rule runs out of time)."""
    notes: list[str] = []
    try:
        blocking = _first_blocking(guards.input_block, _texts(request))
        if blocking is not None:
            raise blocked_error(blocking, policy, "input")
        for rule in guards.input_mask:
            counts: dict[str, int] = {}
            request = _masked(request, rule, counts)
            if counts:
                kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(counts.items()))
                notes.append(
                    f"guardrail {rule.name!r} masked {sum(counts.values())} span(s) of the "
                    f"prompt ({kinds}) before any upstream saw it"
                )
    except GuardrailTimeoutError as timeout:
        raise timed_out_error(timeout.rule, policy, "input") from None
    return request, tuple(notes)


def _masked(request: RequestT, rule: TextRule, counts: dict[str, int]) -> RequestT:
    deadline = rule.deadline()  # the whole prompt within the rule's timeout
    if isinstance(request, EmbeddingRequest):
        inputs = tuple(
            rule.masked(text, counts, deadline) if isinstance(text, str) else text
            for text in request.inputs
        )
        return msgspec.structs.replace(request, inputs=inputs) if counts else request
    messages = tuple(
        _masked_message(message, rule, counts, deadline) for message in request.messages
    )
    return msgspec.structs.replace(request, messages=messages) if counts else request


def _masked_message(
    message: Message, rule: TextRule, counts: dict[str, int], deadline: float
) -> Message:
    before = sum(counts.values())
    content = _masked_parts(message.content, rule, counts, deadline)
    if isinstance(message, AssistantMessage) and message.blocks:
        # The interleaved copy of the same parts, which an Anthropic or Responses upstream
        # is sent: masked too, counted once (in content).
        blocks = _masked_parts(message.blocks, rule, {}, deadline)
        if blocks != message.blocks:
            return msgspec.structs.replace(message, content=content, blocks=blocks)
    if sum(counts.values()) == before:
        return message
    assert isinstance(message, (SystemMessage, UserMessage, AssistantMessage, ToolMessage))  # noqa: S101
    return msgspec.structs.replace(message, content=content)


def _masked_parts(
    parts: tuple[P, ...], rule: TextRule, counts: dict[str, int], deadline: float
) -> tuple[P, ...]:
    """Each text part masked. A part whose text changed loses its provider form
    (``native``, e.g. an Anthropic text with citations, which quotes the text again)."""
    return tuple(_masked_part(part, rule, counts, deadline) for part in parts)


def _masked_part(part: P, rule: TextRule, counts: dict[str, int], deadline: float) -> P:
    if not isinstance(part, TextPart) or not part.text:
        return part
    text = rule.masked(part.text, counts, deadline)
    if text == part.text:
        return part
    return msgspec.structs.replace(part, text=text, native=None)


def guard_answer(response: ChatResponse, guards: PolicyGuards, policy: str) -> None:
    """Raises ``ContentBlockedError`` when an output rule finds something in the answer."""
    texts = (text for text in (response.text, response.refusal) if text)
    try:
        rule = _first_blocking(guards.output_block, texts)
    except GuardrailTimeoutError as timeout:
        raise timed_out_error(timeout.rule, policy, "output") from None
    if rule is not None:
        raise blocked_error(rule, policy, "output")


class StreamGuard:
    """The output rules over a streamed answer. Each piece of text is checked with the
    ``window`` characters before it, so a match split across chunks (up to that long) is
    found when its last piece arrives, before that piece reaches the client: the client
    may have seen the beginning of a match, never all of it."""

    __slots__ = ("_policy", "_rules", "_tail", "_window")

    def __init__(self, guards: PolicyGuards, policy: str) -> None:
        self._rules = guards.output_block
        self._window = guards.stream_window
        self._policy = policy
        self._tail = ""

    def check(self, text: str) -> None:
        """Raises ``ContentBlockedError`` when ``text`` completes a match."""
        seen = self._tail + text
        try:
            rule = _first_blocking(self._rules, iter((seen,)))
        except GuardrailTimeoutError as timeout:
            raise timed_out_error(timeout.rule, self._policy, "output") from None
        if rule is not None:
            raise blocked_error(rule, self._policy, "output")
        self._tail = seen[-self._window :]

"""Gemini's ``streamGenerateContent?alt=sse`` body -> IR stream events, incrementally.

Each SSE ``data:`` line is a whole ``GenerateContentResponse`` holding the next parts of
the first candidate. Parts map as in ``upstream_response``: text -> ``TextDelta``, thought
parts -> ``ThinkingDelta``, a ``thoughtSignature`` on a text or call part -> a
``ThinkingDelta`` with only that signature, just before the part's own event; each
``functionCall`` arrives whole and becomes one complete ``ToolCallDelta`` (id, name, all
the arguments) at the next index.

``StreamStart`` comes with the first chunk that yields anything (``responseId`` and
``modelVersion``). Usage arrives on many chunks, each a running total; it is kept and sent
once, as a ``UsageEvent`` just before ``Finish`` (and again if a later chunk changes it).
Gemini has no end marker: the body ending after a ``finishReason`` is a normal end, before
one an ``UpstreamError``. A prompt blocked up front, or a filtering finish reason before
any content, raises ``ContentBlockedError``; a filter after some content is
``Finish(reason="content_filter")``.
"""

from __future__ import annotations

from gw.codecs.gemini.upstream_response import (
    PartIn,
    ResponseIn,
    arguments,
    decode_chunk,
    finish_error,
    finish_reason,
    prompt_blocked,
    tool_call_id,
)
from gw.codecs.sse import SSEMessage
from gw.codecs.sse_decoder import SSEStreamDecoder
from gw.errors import UpstreamError
from gw.ir import (
    Finish,
    StreamEvent,
    StreamStart,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    Usage,
    UsageEvent,
)


class UpstreamStreamDecoder(SSEStreamDecoder):
    """Feed the raw body as it arrives; call ``close()`` at EOF.

    ``feed`` raises the mapped ``GatewayError`` for an error object in the stream and
    ``UpstreamError`` for a chunk gw cannot read. Events decoded in the same ``feed`` call
    before the failure are returned first; the error is raised by the next ``feed`` or
    ``close``. ``done`` turns true once ``close()`` accepted the end of the body: Gemini
    sends no end marker, so a reader always reads to EOF.
    """

    def __init__(self, *, model: str = "") -> None:
        super().__init__()
        self._model = model
        self._started = False
        self._finished = False
        self._content = False  # a text, thinking or tool call event was produced
        self._calls = 0
        self._usage: Usage | None = None
        self._sent_usage: Usage | None = None

    def _take_message(self, message: SSEMessage, events: list[StreamEvent]) -> None:
        self._take(decode_chunk(message.data), events)

    def _check_end(self) -> None:
        """End of body: accept it after a finish reason (Gemini sends no end marker)."""
        if not self._finished:
            raise UpstreamError("upstream stream ended before a finish reason", blame="upstream")
        self.done = True

    def _take(self, chunk: ResponseIn, events: list[StreamEvent]) -> None:
        candidate = chunk.first_candidate()
        feedback = chunk.prompt_feedback
        if candidate is None and feedback is not None and feedback.block_reason:
            raise prompt_blocked(feedback.block_reason)
        produced: list[StreamEvent] = []
        if candidate is not None and not self._finished:
            for part in (candidate.content.parts if candidate.content else None) or ():
                self._part(part, chunk.response_id, produced)
        if chunk.usage_metadata is not None:
            self._usage = chunk.usage_metadata.to_ir()
        if candidate is not None and candidate.finish_reason and not self._finished:
            reason = finish_reason(candidate.finish_reason, called=self._calls > 0)
            failed = finish_error(reason, candidate.finish_reason, produced=self._content)
            if failed is not None:
                raise failed
            self._finished = True
            self._send_usage(produced)
            produced.append(Finish(reason=reason))
        elif self._finished:
            self._send_usage(produced)  # usage that came after the finish reason
        if produced and not self._started:
            self._started = True
            model = chunk.model_version or self._model
            events.append(StreamStart(id=chunk.response_id or "", model=model))
        events.extend(produced)

    def _part(self, part: PartIn, response_id: str | None, out: list[StreamEvent]) -> None:
        if part.thought:
            if part.text or part.thought_signature:
                out.append(ThinkingDelta(text=part.text or "", signature=part.thought_signature))
                self._content = True
            return
        if part.thought_signature:
            out.append(ThinkingDelta(signature=part.thought_signature))
            self._content = True
        call = part.function_call
        if call is not None:
            out.append(
                ToolCallDelta(
                    index=self._calls,
                    id=tool_call_id(call, response_id, self._calls),
                    name=call.name,
                    arguments=arguments(call),
                )
            )
            self._calls += 1
            self._content = True
        elif part.text:
            out.append(TextDelta(text=part.text))
            self._content = True

    def _send_usage(self, out: list[StreamEvent]) -> None:
        if self._usage is not None and self._usage != self._sent_usage:
            self._sent_usage = self._usage
            out.append(UsageEvent(usage=self._usage))

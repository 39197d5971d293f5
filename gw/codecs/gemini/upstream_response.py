"""A Gemini ``GenerateContentResponse`` -> IR ``ChatResponse``; the wire structs both paths share.

Only the first candidate is read (gw always asks for one). Its parts become:

- text parts -> ``text``, joined; ``thought: true`` parts -> ``thinking``, consecutive ones
  joined into one ``ThinkingPart``;
- a ``thoughtSignature`` on a thought part closes that ``ThinkingPart``; one on a text or
  ``functionCall`` part becomes a ``ThinkingPart`` with no text and that signature, so a
  client that sends thinking back (Anthropic's format) returns it to Gemini intact;
- ``functionCall`` parts -> ``ToolCall`` with the arguments as compact JSON. Gemini gives an
  id only sometimes; without one gw makes ``call_<responseId>_<n>`` (``call_<n>`` when the
  response has no id), ``n`` counting calls from 0: the same for a stream and a whole
  answer, and unique across the turns of a conversation;
- other parts (``inlineData``, ``executableCode``, ...) are not read.

``finishReason`` maps by ``FINISH_REASONS``; ``STOP`` with function calls is ``tool_calls``.
An answer withheld entirely (no content, only a blocked prompt or a filtering finish
reason) raises ``ContentBlockedError`` rather than returning an empty answer.
"""

from __future__ import annotations

from typing import Any

import msgspec

from gw.codecs.gemini.upstream_errors import GoogleError, error_from_payload
from gw.errors import ContentBlockedError, GatewayError, PersistentUpstreamError, UpstreamError
from gw.ir import ChatResponse, FinishReason, ThinkingPart, ToolCall, Usage

# Gemini finishReason -> IR. Unlisted values (FINISH_REASON_UNSPECIFIED, OTHER, image
# generation reasons, new ones) read as "stop": the answer ended for no reason gw can name;
# with nothing produced, such an end is a failure (``finish_error``).
FINISH_REASONS: dict[str, FinishReason] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "LANGUAGE": "content_filter",  # an unsupported language: the output was withheld
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
    "MALFORMED_FUNCTION_CALL": "error",
    "UNEXPECTED_TOOL_CALL": "error",
    "TOO_MANY_TOOL_CALLS": "error",
    "MALFORMED_RESPONSE": "error",
    "MISSING_THOUGHT_SIGNATURE": "error",
}
# Unnamed ends that leave an empty answer: a failure, not an empty success.
_EMPTY_ENDS = frozenset({"FINISH_REASON_UNSPECIFIED", "OTHER", "NO_IMAGE", "IMAGE_OTHER"})

_ARGS = msgspec.json.Encoder()


def finish_reason(value: str | None, *, called: bool) -> FinishReason:
    reason = FINISH_REASONS.get(value or "STOP", "stop")
    return "tool_calls" if reason == "stop" and called else reason


class FunctionCallIn(msgspec.Struct, rename="camel"):
    name: str
    args: dict[str, Any] | None = None
    id: str | None = None


class PartIn(msgspec.Struct, rename="camel"):
    text: str | None = None
    thought: bool = False
    thought_signature: str | None = None
    function_call: FunctionCallIn | None = None


class ContentIn(msgspec.Struct, rename="camel"):
    parts: list[PartIn] | None = None
    role: str | None = None


class CandidateIn(msgspec.Struct, rename="camel"):
    content: ContentIn | None = None
    finish_reason: str | None = None
    index: int = 0


class PromptFeedbackIn(msgspec.Struct, rename="camel"):
    block_reason: str | None = None


class UsageIn(msgspec.Struct, rename="camel"):
    prompt_token_count: int = 0
    candidates_token_count: int = 0
    cached_content_token_count: int = 0
    thoughts_token_count: int = 0
    tool_use_prompt_token_count: int = 0

    def to_ir(self) -> Usage:
        """``candidatesTokenCount`` leaves thoughts out; the IR's output counts them."""
        return Usage(
            input_tokens=self.prompt_token_count + self.tool_use_prompt_token_count,
            output_tokens=self.candidates_token_count + self.thoughts_token_count,
            cached_input_tokens=self.cached_content_token_count,
            reasoning_tokens=self.thoughts_token_count,
        )


class ResponseIn(msgspec.Struct, rename="camel"):
    candidates: list[CandidateIn] | None = None
    prompt_feedback: PromptFeedbackIn | None = None
    usage_metadata: UsageIn | None = None
    model_version: str | None = None
    response_id: str | None = None
    error: GoogleError | None = None  # an error object sent inside a 200 stream

    def first_candidate(self) -> CandidateIn | None:
        return next((c for c in self.candidates or () if c.index == 0), None)


RESPONSE_DECODER = msgspec.json.Decoder(ResponseIn)


def malformed(reason: str) -> PersistentUpstreamError:
    """The error for an upstream body gw cannot read; ``reason`` must not quote the body."""
    return PersistentUpstreamError(
        f"upstream sent a malformed Gemini response: {reason}", blame="upstream"
    )


def decode_chunk(data: bytes | str) -> ResponseIn:
    """One response (a whole body or one stream chunk); an ``error`` object raises."""
    try:
        response = RESPONSE_DECODER.decode(data)
    except msgspec.ValidationError as exc:
        raise malformed(str(exc)) from None
    except msgspec.DecodeError:
        raise malformed("not JSON") from None
    if response.error is not None:
        raise error_from_payload(response.error)
    return response


def prompt_blocked(reason: str) -> ContentBlockedError:
    return ContentBlockedError(
        f"Gemini blocked the prompt (blockReason {reason})", upstream_status=200, blame="upstream"
    )


def answer_withheld(reason: str | None) -> ContentBlockedError:
    return ContentBlockedError(
        f"Gemini withheld the answer (finishReason {reason})", upstream_status=200, blame="upstream"
    )


def output_unusable(reason: str | None) -> UpstreamError:
    """Gemini ended on output it could not finish (a malformed or unexpected tool call, too
    many calls): an upstream failure, retried and fallen back from, never a clean finish
    that would leave an agent with no tool call and no error."""
    return UpstreamError(
        f"Gemini ended the answer with finishReason {reason}: its output is unusable",
        upstream_status=200,
        blame="upstream",
    )


def finish_error(reason: FinishReason, raw: str | None, *, produced: bool) -> GatewayError | None:
    """What a finish reason means as an error: an answer withheld entirely, or unusable
    output; None for a finish that ends a usable answer."""
    if reason == "content_filter" and not produced:
        return answer_withheld(raw)
    if reason == "error" or (raw in _EMPTY_ENDS and not produced):
        return output_unusable(raw)
    return None


def tool_call_id(call: FunctionCallIn, response_id: str | None, number: int) -> str:
    if call.id:
        return call.id
    return f"call_{response_id}_{number}" if response_id else f"call_{number}"


def arguments(call: FunctionCallIn) -> str:
    return _ARGS.encode(call.args or {}).decode()


def decode_upstream_response(body: bytes, *, model: str) -> ChatResponse:
    """Parse a whole answer; ``model`` stands in when Gemini names no ``modelVersion``."""
    response = decode_chunk(body)
    candidate = response.first_candidate()
    if candidate is None:
        feedback = response.prompt_feedback
        if feedback is not None and feedback.block_reason:
            raise prompt_blocked(feedback.block_reason)
        raise malformed("no candidates")
    texts: list[str] = []
    thinking: list[ThinkingPart] = []
    calls: list[ToolCall] = []
    pending_thought: list[str] = []
    for part in (candidate.content.parts if candidate.content else None) or ():
        if part.thought:
            pending_thought.append(part.text or "")
            if part.thought_signature:
                thinking.append(
                    ThinkingPart(text="".join(pending_thought), signature=part.thought_signature)
                )
                pending_thought.clear()
            continue
        if pending_thought:
            thinking.append(ThinkingPart(text="".join(pending_thought)))
            pending_thought.clear()
        if part.thought_signature:
            thinking.append(ThinkingPart(signature=part.thought_signature))
        if part.function_call is not None:
            call = part.function_call
            calls.append(
                ToolCall(
                    id=tool_call_id(call, response.response_id, len(calls)),
                    name=call.name,
                    arguments=arguments(call),
                )
            )
        elif part.text is not None:
            texts.append(part.text)
    if pending_thought:
        thinking.append(ThinkingPart(text="".join(pending_thought)))
    reason = finish_reason(candidate.finish_reason, called=bool(calls))
    failed = finish_error(
        reason, candidate.finish_reason, produced=bool(any(texts) or calls or thinking)
    )
    if failed is not None:
        raise failed
    return ChatResponse(
        id=response.response_id or "",
        model=response.model_version or model,
        text="".join(texts) if texts else None,
        thinking=tuple(thinking),
        tool_calls=tuple(calls),
        finish_reason=reason,
        usage=None if response.usage_metadata is None else response.usage_metadata.to_ir(),
    )

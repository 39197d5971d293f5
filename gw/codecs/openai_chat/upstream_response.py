"""An OpenAI-shaped upstream's ``chat.completion`` body -> IR ``ChatResponse``.

Decoding is lenient on what OpenAI-compatible servers leave out (``id``, ``created``,
usage details) and strict on shape: a wrong type or no choice is an ``UpstreamError``
whose message names the problem, never the body text. A refusal (structured outputs)
arrives as ``content: null`` plus ``refusal``, kept apart as the IR's ``refusal``.
"""

from __future__ import annotations

import msgspec

from gw.codecs.openai_chat.upstream_errors import error_from_payload
from gw.errors import PersistentUpstreamError
from gw.ir import ChatResponse, FinishReason, ToolCall, Usage

# OpenAI finish_reason -> IR; anything else (null, "eos", vendor values) reads as "stop".
FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}


def finish_reason(value: str | None, *, called: bool = False) -> FinishReason:
    """``value`` in the IR; ``stop`` with tool calls is ``tool_calls`` (some compatible
    servers, vLLM and Ollama among them, end a tool-call turn with ``stop``)."""
    reason = FINISH_REASONS.get(value or "stop", "stop")
    return "tool_calls" if reason == "stop" and called else reason


class PromptDetailsIn(msgspec.Struct):
    cached_tokens: int | None = None


class CompletionDetailsIn(msgspec.Struct):
    reasoning_tokens: int | None = None


class UsageIn(msgspec.Struct):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    prompt_tokens_details: PromptDetailsIn | None = None
    completion_tokens_details: CompletionDetailsIn | None = None

    def to_ir(self) -> Usage:
        prompt = self.prompt_tokens_details
        completion = self.completion_tokens_details
        return Usage(
            input_tokens=self.prompt_tokens or 0,
            output_tokens=self.completion_tokens or 0,
            cached_input_tokens=(prompt.cached_tokens if prompt else None) or 0,
            reasoning_tokens=(completion.reasoning_tokens if completion else None) or 0,
        )


class _FunctionIn(msgspec.Struct):
    name: str
    arguments: str = ""


class _ToolCallIn(msgspec.Struct):
    id: str
    function: _FunctionIn


class _MessageIn(msgspec.Struct):
    content: str | None = None
    refusal: str | None = None
    tool_calls: list[_ToolCallIn] | None = None


class _ChoiceIn(msgspec.Struct):
    message: _MessageIn
    finish_reason: str | None = None


class _CompletionIn(msgspec.Struct):
    id: str = ""
    model: str = ""
    created: int = 0
    choices: list[_ChoiceIn] | None = None
    usage: UsageIn | None = None
    # Some compatible servers answer 200 with an error object instead of a completion.
    error: object | None = None


_DECODER = msgspec.json.Decoder(_CompletionIn)


def malformed(reason: str) -> PersistentUpstreamError:
    """The error for an upstream body gw cannot read; ``reason`` must not quote the body."""
    return PersistentUpstreamError(
        f"upstream sent a malformed chat completion: {reason}", blame="upstream"
    )


def decode_upstream_response(body: bytes) -> ChatResponse:
    """Parse a non-streaming answer; raise ``UpstreamError`` (or the mapped error) on failure."""
    try:
        completion = _DECODER.decode(body)
    except msgspec.ValidationError as exc:
        raise malformed(str(exc)) from None
    except msgspec.DecodeError:
        raise malformed("not JSON") from None
    if completion.error is not None:
        raise error_from_payload(completion.error)
    if not completion.choices:
        raise malformed("no choices")
    message = completion.choices[0].message
    return ChatResponse(
        id=completion.id,
        model=completion.model,
        text=message.content,
        refusal=message.refusal,
        tool_calls=tuple(
            ToolCall(id=call.id, name=call.function.name, arguments=call.function.arguments)
            for call in message.tool_calls or ()
        ),
        finish_reason=finish_reason(
            completion.choices[0].finish_reason, called=bool(message.tool_calls)
        ),
        usage=None if completion.usage is None else completion.usage.to_ir(),
        created=completion.created,
    )

"""IR answers as OpenAI ``chat.completion`` JSON, field for field as the real API sends it."""

from __future__ import annotations

from typing import Literal

import msgspec

from gw.ir import ChatResponse, FinishReason, ToolCall, Usage

# IR finish reason -> OpenAI finish_reason. OpenAI has no "error"; an answer cut short by
# an upstream failure reports "stop", the closest value the SDK accepts. Nor has it
# "pause" (a provider paused a long turn): the turn ends there, so "stop".
FINISH_REASONS: dict[FinishReason, str] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "content_filter": "content_filter",
    "error": "stop",
    "pause": "stop",
}


class PromptTokensDetails(msgspec.Struct):
    cached_tokens: int


class CompletionTokensDetails(msgspec.Struct):
    reasoning_tokens: int


class UsageOut(msgspec.Struct):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: PromptTokensDetails
    completion_tokens_details: CompletionTokensDetails


class FunctionOut(msgspec.Struct):
    name: str
    arguments: str


class ToolCallOut(msgspec.Struct, kw_only=True):
    id: str
    type: Literal["function"] = "function"
    function: FunctionOut


class _MessageOut(msgspec.Struct, kw_only=True):
    role: Literal["assistant"] = "assistant"
    content: str | None
    # UNSET drops the key: OpenAI sends tool_calls only when there are some.
    tool_calls: list[ToolCallOut] | msgspec.UnsetType = msgspec.UNSET
    refusal: str | None = None


class _ChoiceOut(msgspec.Struct, kw_only=True):
    index: int = 0
    message: _MessageOut
    logprobs: None = None
    finish_reason: str


class _CompletionOut(msgspec.Struct, kw_only=True):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[_ChoiceOut]
    usage: UsageOut | None
    system_fingerprint: None = None


_ENCODER = msgspec.json.Encoder()


def usage_out(usage: Usage) -> UsageOut:
    """OpenAI's usage object for IR usage."""
    return UsageOut(
        prompt_tokens=usage.input_tokens,
        completion_tokens=usage.output_tokens,
        total_tokens=usage.total_tokens,
        prompt_tokens_details=PromptTokensDetails(cached_tokens=usage.cached_input_tokens),
        completion_tokens_details=CompletionTokensDetails(reasoning_tokens=usage.reasoning_tokens),
    )


def tool_call_out(call: ToolCall) -> ToolCallOut:
    return ToolCallOut(id=call.id, function=FunctionOut(name=call.name, arguments=call.arguments))


def encode_chat_response(response: ChatResponse, *, model: str) -> bytes:
    """The ``chat.completion`` body; ``model`` is the upstream model that answered.

    ``id`` and ``created`` come from ``response``; ``usage`` is null when it is unknown.
    """
    message = _MessageOut(
        content=response.text,
        refusal=response.refusal,
        tool_calls=[tool_call_out(call) for call in response.tool_calls]
        if response.tool_calls
        else msgspec.UNSET,
    )
    body = _CompletionOut(
        id=response.id,
        created=response.created,
        model=model,
        choices=[_ChoiceOut(message=message, finish_reason=FINISH_REASONS[response.finish_reason])],
        usage=None if response.usage is None else usage_out(response.usage),
    )
    return _ENCODER.encode(body)

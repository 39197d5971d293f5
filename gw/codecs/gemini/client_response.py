"""IR answers as Gemini's ``GenerateContentResponse``, as google-genai and Gemini CLI read it.

One candidate (index 0) whose ``content`` is ``{"role": "model", "parts": [...]}``:

- reasoning -> thought parts ``{"text", "thought": true}``, with ``thoughtSignature`` when
  the reasoning was signed (Anthropic's signature, or Gemini's own);
- text -> a text part (a refusal too: Gemini has no refusal field);
- tool calls -> ``functionCall`` parts ``{"id", "name", "args"}``. ``args`` is the call's
  arguments parsed as a JSON object (empty arguments are ``{}``); arguments that are not
  an object raise ``UpstreamError`` (``check_response``) rather than hand the client a call
  it never asked for. The ``id`` is the IR's: the client sends it back on the call and its
  ``functionResponse``, and gw pairs them by it.
- Gemini's signatures without text (the IR's ``ThinkingPart`` with only a signature) go
  back where Gemini put them: on the function calls in order, else on the last text part.
  A signature that is not base64 is left out: google-genai refuses the whole answer over
  it (``thoughtSignature`` is ``bytes`` there). Anthropic's redacted thinking has no
  Gemini form and is left out.
- Native blocks of Gemini's format (``executableCode``, ...) go back as the parts they
  were; another format's are left out.

``finishReason`` by ``FINISH_REASONS`` (tool calls end with ``STOP``, as Gemini ends them);
``usageMetadata`` counts thoughts apart (``candidatesTokenCount`` excludes them, as
Gemini's does); ``responseId`` is gw's request id, which ``gw explain`` takes.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from gw.errors import UpstreamError
from gw.ir import (
    ChatResponse,
    FinishReason,
    NativeBlock,
    TextPart,
    ThinkingPart,
    ToolCall,
    Usage,
)

JSONObject = dict[str, Any]

# A reason not listed (one the IR gains later) reads as STOP.
FINISH_REASONS: dict[FinishReason, str] = {
    "stop": "STOP",
    "length": "MAX_TOKENS",
    "tool_calls": "STOP",
    "content_filter": "SAFETY",
    "error": "OTHER",
}
_ENCODER = msgspec.json.Encoder()
_ARGUMENTS = msgspec.json.Decoder(dict[str, Any])
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/_-]{4})*(?:[A-Za-z0-9+/_-]{2}==|[A-Za-z0-9+/_-]{3}=)?")


def finish_reason(reason: FinishReason) -> str:
    return FINISH_REASONS.get(reason, "STOP")


def usage_metadata(usage: Usage) -> JSONObject:
    """Gemini's ``usageMetadata``: thoughts apart from the candidates' tokens."""
    out: JSONObject = {
        "promptTokenCount": usage.input_tokens,
        "candidatesTokenCount": max(usage.output_tokens - usage.reasoning_tokens, 0),
        "totalTokenCount": usage.total_tokens,
    }
    if usage.cached_input_tokens:
        out["cachedContentTokenCount"] = usage.cached_input_tokens
    if usage.reasoning_tokens:
        out["thoughtsTokenCount"] = usage.reasoning_tokens
    return out


def wire_signature(signature: str | None) -> str | None:
    """``signature`` if google-genai can read it (base64), else None."""
    if signature and _BASE64.fullmatch(signature):
        return signature
    return None


def tool_args(arguments: str) -> JSONObject:
    """A call's arguments as Gemini's ``args`` object (see the module docstring)."""
    if not arguments.strip():
        return {}
    try:
        return _ARGUMENTS.decode(arguments)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        raise UpstreamError(
            "the upstream returned tool call arguments that are not a JSON object"
        ) from None


def function_call_part(call: ToolCall) -> JSONObject:
    return {"functionCall": {"id": call.id, "name": call.name, "args": tool_args(call.arguments)}}


def thought_part(text: str, signature: str | None) -> JSONObject:
    part: JSONObject = {"text": text, "thought": True}
    signed = wire_signature(signature)
    if signed is not None:
        part["thoughtSignature"] = signed
    return part


def check_response(response: ChatResponse) -> None:
    """Raise ``UpstreamError`` if ``encode_response`` cannot express ``response``."""
    for call in response.tool_calls:
        tool_args(call.arguments)


def encode_response(response: ChatResponse, *, response_id: str, model: str) -> bytes:
    """The ``GenerateContentResponse`` body; ``model`` is the model that answered."""
    parts = _ordered_parts(response.blocks) if response.blocks else _grouped_parts(response)
    candidate: JSONObject = {
        "content": {"role": "model", "parts": parts or [{"text": ""}]},
        "finishReason": finish_reason(response.finish_reason),
        "index": 0,
    }
    body: JSONObject = {"candidates": [candidate]}
    if response.usage is not None:
        body["usageMetadata"] = usage_metadata(response.usage)
    body["modelVersion"] = model
    body["responseId"] = response_id
    return _ENCODER.encode(body)


def _grouped_parts(response: ChatResponse) -> list[JSONObject]:
    parts: list[JSONObject] = []
    loose: list[str] = []  # signatures of text or call parts (a Gemini upstream's)
    for thinking in response.thinking:
        if thinking.text:
            parts.append(thought_part(thinking.text, thinking.signature))
        elif (signature := wire_signature(thinking.signature)) is not None:
            loose.append(signature)
    texts: list[JSONObject] = []
    text = response.text or response.refusal
    if text:
        texts.append({"text": text})
    calls = [function_call_part(call) for call in response.tool_calls]
    _place_signatures(loose, texts, calls)
    return [*parts, *texts, *calls]


def _place_signatures(loose: list[str], texts: list[JSONObject], calls: list[JSONObject]) -> None:
    """Gemini's place for signatures without text: the calls in order, else the last text
    part (the same rule the upstream codec sends them back by)."""
    if calls:
        for call, signature in zip(calls, loose, strict=False):
            call["thoughtSignature"] = signature
    elif loose:
        if not texts:
            texts.append({"text": ""})
        texts[-1]["thoughtSignature"] = loose[-1]


def _ordered_parts(
    blocks: tuple[TextPart | ThinkingPart | NativeBlock | ToolCall, ...],
) -> list[JSONObject]:
    """Blocks in the order produced (an Anthropic upstream's); a signature without text
    goes on the part after it."""
    parts: list[JSONObject] = []
    pending: str | None = None
    for block in blocks:
        part: JSONObject | None = None
        if isinstance(block, ThinkingPart):
            if block.text:
                parts.append(thought_part(block.text, block.signature))
            elif block.signature:
                pending = wire_signature(block.signature) or pending
            continue
        if isinstance(block, TextPart):
            part = {"text": block.text} if block.text else None
        elif isinstance(block, ToolCall):
            part = function_call_part(block)
        elif block.format == "gemini":
            part = dict(block.data)
        if part is not None:
            if pending is not None:
                part["thoughtSignature"], pending = pending, None
            parts.append(part)
    if pending is not None:
        parts.append({"text": "", "thoughtSignature": pending})
    return parts

"""IR stream events as Gemini's ``streamGenerateContent`` chunks, for one client stream.

Each chunk is a whole ``GenerateContentResponse`` (one candidate, index 0, ``modelVersion``
and ``responseId``). With ``?alt=sse`` (what google-genai and Gemini CLI ask for) each is
framed ``data: {...}\\r\\n\\r\\n`` as Google frames them; without it the body is one JSON
array of the chunks (``[{...}``, ``,\\r\\n{...}``, ..., ``]``), as Google sends that form.

- ``StreamStart`` and ``UsageEvent`` write nothing (usage is remembered): nothing is
  committed before the upstream produced output, so the engine may still fall back.
- ``TextDelta`` -> a chunk with one text part; ``ThinkingDelta`` with text -> a chunk
  with one thought part (``thought: true``, and its ``thoughtSignature`` when signed).
- A ``ThinkingDelta`` with only a signature: from an upstream whose signatures close a
  thinking block (Anthropic) it ends the open thought as a part of its own
  (``{"text": "", "thought": true, "thoughtSignature"}``, which ``client_contents`` joins
  back to the thought); from a Gemini upstream (``signatures_lead``), or with no thought
  open, it goes on the next part, where Gemini had it.
- ``ToolCallDelta`` fragments are held until the call is whole (text or thinking starts,
  or the answer finishes) and go out as ``functionCall`` parts, all pending calls in one
  chunk, as Gemini streams them. Arguments that are not a JSON object end the stream with
  an error chunk.
- ``Finish`` sends the held calls and remembers the reason; ``done()`` writes the last
  chunk: ``finishReason``, ``usageMetadata`` and a part carrying any signature still
  pending (else an empty text part: google-genai's chats refuse a chunk without parts).
- ``ErrorEvent`` writes one error chunk in Google's error shape; nothing follows it.
"""

from __future__ import annotations

from typing import Any

import msgspec

from gw.codecs.gemini.client_errors import encode_stream_error
from gw.codecs.gemini.client_response import (
    JSONObject,
    finish_reason,
    function_call_part,
    thought_part,
    usage_metadata,
    wire_signature,
)
from gw.errors import ERRORS_BY_CODE, GatewayError
from gw.ir import (
    ErrorEvent,
    Finish,
    FinishReason,
    NativeEvent,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
    UsageEvent,
)
from gw.ir.cut_calls import whole_arguments

_ENCODER = msgspec.json.Encoder()


class GeminiStreamEncoder:
    """Stateful encoder for one client stream; ``encode`` each event, then ``done()``."""

    def __init__(
        self, *, response_id: str, model: str, sse: bool = True, signatures_lead: bool = False
    ) -> None:
        self._id = response_id
        self._model = model
        self._sse = sse
        self._signatures_lead = signatures_lead
        self._chunks = 0  # chunks written (the array form separates them)
        self._finished = False  # an error chunk or done() went out: nothing more
        self._thought_open = False  # the last part written is unsigned thought text
        self._pending: str | None = None  # a signature for the next part
        self._calls: dict[int, list[ToolCallDelta]] = {}
        self._finish: FinishReason = "stop"
        self._usage: Usage | None = None

    def encode(self, event: StreamEvent) -> bytes:
        """Zero or more whole chunks for ``event``."""
        if self._finished:
            return b""
        try:
            return self._encode(event)
        except GatewayError as error:  # held tool call arguments that are not an object
            return self.encode(ErrorEvent(code=error.code, message=error.client_message))

    def _encode(self, event: StreamEvent) -> bytes:
        out = b""
        match event:
            case TextDelta(text=text) if text:
                out = self._calls_chunk() + self._chunk([self._signed({"text": text})])
            case ThinkingDelta(text=text, signature=signature) if text:
                out = self._calls_chunk()
                self._thought_open = signature is None
                out += self._chunk([thought_part(text, signature)])
            case ThinkingDelta(signature=signature) if signature:
                out = self._signature(signature)
            case ToolCallDelta():
                self._calls.setdefault(event.index, []).append(event)
            case NativeEvent(block=block) if block.format == "gemini":
                out = self._calls_chunk() + self._chunk([self._signed(dict(block.data))])
            case UsageEvent(usage=usage):
                self._usage = usage
            case Finish(reason=reason):
                self._finish = reason
                out = self._calls_chunk(drop_cut=reason == "length")
            case ErrorEvent(code=code, message=message):
                self._finished = True
                cls = ERRORS_BY_CODE.get(code)
                status = 500 if cls is None else cls.status
                error = encode_stream_error(code=code, status=status, message=message)
                out = self._frame(error) + (b"" if self._sse else b"]")
        return out

    def done(self) -> bytes:
        """The last chunk (finish reason and usage); none after an error."""
        if self._finished:
            return b""
        try:
            out = self._calls_chunk()
        except GatewayError as error:
            return self.encode(ErrorEvent(code=error.code, message=error.client_message))
        self._finished = True
        parts = [self._signed({"text": ""})]
        last = self._chunk(parts, finish=finish_reason(self._finish), usage=self._usage)
        return out + last + (b"" if self._sse else b"]")

    def _signature(self, signature: str) -> bytes:
        signed = wire_signature(signature)
        if signed is None:
            return b""
        if self._thought_open and not self._signatures_lead:
            self._thought_open = False
            return self._chunk([thought_part("", signed)])
        self._pending = signed
        return b""

    def _signed(self, part: JSONObject) -> JSONObject:
        """``part``, carrying the pending signature if there is one."""
        if self._pending is not None:
            part["thoughtSignature"], self._pending = self._pending, None
        return part

    def _calls_chunk(self, *, drop_cut: bool = False) -> bytes:
        """The held tool calls, whole, in one chunk; nothing when none are held. With
        ``drop_cut`` (the output limit ended the answer) a call cut short is left out."""
        parts: list[JSONObject] = []
        for index, fragments in sorted(self._calls.items()):
            first = next((f for f in fragments if f.id or f.name), fragments[0])
            call = ToolCall(
                id=first.id or f"call_{self._id}_{index}",
                name=first.name or "",
                arguments="".join(f.arguments for f in fragments),
            )
            if not (drop_cut and not whole_arguments(call.arguments)):
                parts.append(function_call_part(call))
        self._calls.clear()
        if not parts:
            return b""
        parts[0] = self._signed(parts[0])
        return self._chunk(parts)

    def _chunk(
        self, parts: list[JSONObject], *, finish: str | None = None, usage: Usage | None = None
    ) -> bytes:
        self._thought_open = self._thought_open and parts[0].get("thought") is True
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
        if finish is not None:
            candidate["finishReason"] = finish
        candidate["index"] = 0
        body: dict[str, Any] = {"candidates": [candidate]}
        if usage is not None:
            body["usageMetadata"] = usage_metadata(usage)
        body["modelVersion"] = self._model
        body["responseId"] = self._id
        return self._frame(_ENCODER.encode(body))

    def _frame(self, payload: bytes) -> bytes:
        self._chunks += 1
        if self._sse:
            return b"data: " + payload + b"\r\n\r\n"
        return (b"[" if self._chunks == 1 else b",\r\n") + payload

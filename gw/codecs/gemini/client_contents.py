"""A Gemini client's ``contents`` and ``systemInstruction`` -> IR messages.

Roles: ``user`` (the default when a turn names none, as Gemini allows) and the legacy
``function`` carry the user's parts; ``model`` the assistant's. Consecutive ``model``
turns are one assistant turn: google-genai's chats keep each streamed chunk as a turn of
its own, and Gemini reads them as one. Parts:

- ``text`` -> ``TextPart`` (empty text is skipped: no provider takes an empty block);
  media as ``client_parts`` reads it.
- ``functionCall`` (model turns) -> ``ToolCall``. Gemini often sends no call id: gw makes
  ``call_<turn>_<part>`` from the call's position, the same on every request of a
  conversation. ``functionResponse`` (user turns) -> ``ToolMessage`` with the id of the
  call it answers: the earlier unanswered call with its ``id``, else the first unanswered
  one with its ``name``. ``response`` ``{"output": V}`` becomes V's text,
  ``{"error": V}`` an error result, any other object its JSON text; ``parts`` with
  inline images go with the result.
- ``thought: true`` parts of a model turn -> ``ThinkingPart``; consecutive ones join until
  one carries a ``thoughtSignature``, which closes the block (as ``upstream_response``
  reads Gemini's answers). A signature on any other part becomes a ``ThinkingPart`` with
  that signature and no text, just before the part, so a Gemini upstream gets it back on
  the same part. google-genai re-encodes signatures in base64's URL-safe alphabet; they
  are turned back to the standard one, which Anthropic needs and Gemini accepts.
- ``executableCode``, ``codeExecutionResult`` and media in a model turn (Google-side tool
  runs, generated images) -> ``NativeBlock(format="gemini")``.
- Parts are checked by ``client_parts``: other kinds are refused.
"""

from __future__ import annotations

import msgspec

from gw.codecs.fields import (
    JSONObject,
    as_bool,
    as_list,
    as_object,
    as_str,
    invalid,
    optional_str,
    required,
)
from gw.codecs.gemini.client_parts import (
    MODEL_NATIVE,
    check_part,
    data_kind,
    part_signature,
    result_text,
    user_part,
)
from gw.codecs.gemini.proto_json import message
from gw.errors import InvalidRequestError
from gw.ir import (
    ContentPart,
    Message,
    NativeBlock,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolMessage,
    UserMessage,
    assistant_from_blocks,
)

AssistantBlock = TextPart | ThinkingPart | NativeBlock | ToolCall
_ENCODER = msgspec.json.Encoder()


def decode_system(value: object) -> SystemMessage | None:
    """``systemInstruction``: a ``Content`` of text parts."""
    if value is None:
        return None
    content = message(value, "systemInstruction")
    parts = as_list(
        required(content, "parts", "systemInstruction.parts"), "systemInstruction.parts"
    )
    texts: list[TextPart] = []
    for i, item in enumerate(parts):
        where = f"systemInstruction.parts[{i}]"
        part = message(item, where)
        text = as_str(required(part, "text", f"{where}.text"), f"{where}.text")
        if text:
            texts.append(TextPart(text=text))
    return SystemMessage(content=tuple(texts)) if texts else None


def decode_contents(value: object) -> tuple[Message, ...]:
    """``contents``: the conversation, oldest turn first; it must not be empty."""
    if value is None:
        raise InvalidRequestError("`contents` is required", param="contents")
    turns = as_list(value, "contents")
    if not turns:
        raise invalid("contents", "a non-empty array")
    conversation = _Conversation()
    for i, turn in enumerate(turns):
        conversation.turn(message(turn, f"contents[{i}]"), i)
    conversation.end_model_run()
    return tuple(conversation.messages)


class _Conversation:
    def __init__(self) -> None:
        self.messages: list[Message] = []
        self._unanswered: list[tuple[str, str]] = []  # (id, name) of calls, in order
        self._model_run: list[tuple[JSONObject, int, int]] = []  # (part, turn, position)

    def turn(self, content: JSONObject, index: int) -> None:
        where = f"contents[{index}]"
        role = optional_str(content, "role", f"{where}.role") or "user"
        parts = as_list(required(content, "parts", f"{where}.parts"), f"{where}.parts")
        # google-genai's chats record an empty answer as a model turn without parts.
        if not parts and role != "model":
            raise invalid(f"{where}.parts", "a non-empty array")
        checked = [check_part(item, f"{where}.parts[{j}]") for j, item in enumerate(parts)]
        if role == "model":
            self._model_run.extend((part, index, j) for j, part in enumerate(checked))
            return
        self.end_model_run()
        if role in ("user", "function"):
            self._user(checked, where)
        else:
            raise invalid(f"{where}.role", "`user` or `model`")

    def end_model_run(self) -> None:
        """The consecutive model turns read so far, as one assistant turn."""
        if self._model_run:
            self._model(self._model_run)
            self._model_run = []

    # --- user turns -----------------------------------------------------------------------

    def _user(self, parts: list[JSONObject], where: str) -> None:
        pending: list[ContentPart] = []
        for j, part in enumerate(parts):
            param = f"{where}.parts[{j}]"
            if "functionResponse" in part:
                self._flush_user(pending)
                self.messages.append(self._result(part["functionResponse"], param))
            elif "functionCall" in part:
                raise InvalidRequestError(
                    f"`{param}.functionCall` belongs in a `model` turn",
                    param=f"{param}.functionCall",
                )
            elif data_kind(part) in ("executableCode", "codeExecutionResult"):
                raise InvalidRequestError(
                    f"`{param}.{data_kind(part)}` belongs in a `model` turn",
                    param=f"{param}.{data_kind(part)}",
                )
            else:
                content = user_part(part, param)
                if content is not None:
                    pending.append(content)
        self._flush_user(pending)

    def _flush_user(self, pending: list[ContentPart]) -> None:
        if pending:
            self.messages.append(UserMessage(content=tuple(pending)))
            pending.clear()

    def _result(self, value: object, param: str) -> ToolMessage:
        where = f"{param}.functionResponse"
        result = message(value, where)
        name = as_str(required(result, "name", f"{where}.name"), f"{where}.name")
        call_id = self._answer(optional_str(result, "id", f"{where}.id"), name, where)
        response = as_object(required(result, "response", f"{where}.response"), f"{where}.response")
        is_error = set(response) == {"error"}
        text = result_text(response)
        content: list[ContentPart] = [TextPart(text=text)] if text else []
        extra = result.get("parts")
        if extra is not None:
            for k, item in enumerate(as_list(extra, f"{where}.parts")):
                media = user_part(as_object(item, f"{where}.parts[{k}]"), f"{where}.parts[{k}]")
                if media is not None:
                    content.append(media)
        return ToolMessage(tool_call_id=call_id, content=tuple(content), is_error=is_error)

    def _answer(self, call_id: str | None, name: str, where: str) -> str:
        """The id of the call a result answers: by id, else the first unanswered by name."""
        chosen = next((n for n, (i, _) in enumerate(self._unanswered) if i == call_id), None)
        if chosen is None:
            chosen = next((n for n, (_, f) in enumerate(self._unanswered) if f == name), None)
        if chosen is None:
            raise InvalidRequestError(
                f"`{where}` answers no earlier `functionCall` (matched by `id`, else by "
                "`name`): send the model turn with the call before its response",
                param=where,
            )
        return self._unanswered.pop(chosen)[0]

    # --- model turns ----------------------------------------------------------------------

    def _model(self, parts: list[tuple[JSONObject, int, int]]) -> None:
        blocks: list[AssistantBlock] = []
        thought: list[str] = []  # thought text not closed by a signature yet
        for part, index, j in parts:
            param = f"contents[{index}].parts[{j}]"
            signature = part_signature(part, param)
            if "thought" in part and as_bool(part["thought"], f"{param}.thought"):
                thought.append(as_str(part.get("text", ""), f"{param}.text"))
                if signature is not None:
                    blocks.append(ThinkingPart(text="".join(thought), signature=signature))
                    thought.clear()
                continue
            if thought:
                blocks.append(ThinkingPart(text="".join(thought)))
                thought.clear()
            if signature is not None:
                blocks.append(ThinkingPart(signature=signature))
            block = self._model_block(part, param, index, j)
            if block is not None:
                blocks.append(block)
        if thought:
            blocks.append(ThinkingPart(text="".join(thought)))
        if blocks:
            self.messages.append(assistant_from_blocks(blocks))

    def _model_block(
        self, part: JSONObject, param: str, index: int, position: int
    ) -> AssistantBlock | None:
        kind = data_kind(part)
        if kind == "text":
            text = as_str(part["text"], f"{param}.text")
            return TextPart(text=text) if text else None
        if kind == "functionCall":
            return self._call(part[kind], f"{param}.functionCall", f"call_{index}_{position}")
        if kind == "functionResponse":
            raise InvalidRequestError(
                f"`{param}.functionResponse` belongs in a `user` turn",
                param=f"{param}.functionResponse",
            )
        if kind in MODEL_NATIVE:
            data = {key: value for key, value in part.items() if key != "thoughtSignature"}
            return NativeBlock(format="gemini", data=data)
        return None  # a part of modifiers only (a signature alone)

    def _call(self, value: object, where: str, made_id: str) -> ToolCall:
        call = message(value, where)
        name = as_str(required(call, "name", f"{where}.name"), f"{where}.name")
        args = call.get("args")
        arguments = {} if args is None else as_object(args, f"{where}.args")
        call_id = optional_str(call, "id", f"{where}.id") or made_id
        self._unanswered.append((call_id, name))
        return ToolCall(id=call_id, name=name, arguments=_ENCODER.encode(arguments).decode())

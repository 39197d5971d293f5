"""A Gemini client's ``contents`` and ``systemInstruction`` -> IR messages.

Roles: ``user`` (the default when a turn names none, as Gemini allows) and the legacy
``function`` carry the user's parts; ``model`` the assistant's. Consecutive ``model``
turns are one assistant turn: google-genai's chats keep each streamed chunk as a turn of
its own, and Gemini reads them as one. Parts:

- ``text`` -> ``TextPart`` (empty text is skipped: no provider takes an empty block);
  ``inlineData`` -> ``ImagePart`` for ``image/*``, else ``FilePart``; ``fileData``
  (``fileUri``) -> the same, by URL.
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
- Any other part kind is refused (``native_feature_unsupported``), and so is
  ``videoMetadata`` (a clip of a video, which no other provider could honour).
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
    is_type_name,
    optional_str,
    required,
)
from gw.codecs.gemini.upstream_request import SKIP_SIGNATURE
from gw.errors import InvalidRequestError, NativeFeatureUnsupportedError
from gw.ir import (
    ContentPart,
    FilePart,
    ImagePart,
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

_DATA = frozenset({"text", "inlineData", "fileData", "functionCall", "functionResponse"})
_MODEL_NATIVE = frozenset({"executableCode", "codeExecutionResult", "inlineData", "fileData"})
_MODIFIERS = frozenset({"thought", "thoughtSignature", "partMetadata", "mediaResolution"})
_KNOWN = _DATA | _MODEL_NATIVE | _MODIFIERS
_ENCODER = msgspec.json.Encoder()
_URL_SAFE = str.maketrans("-_", "+/")


def decode_system(value: object) -> SystemMessage | None:
    """``systemInstruction``: a ``Content`` of text parts."""
    if value is None:
        return None
    content = as_object(value, "systemInstruction")
    parts = as_list(
        required(content, "parts", "systemInstruction.parts"), "systemInstruction.parts"
    )
    texts: list[TextPart] = []
    for i, item in enumerate(parts):
        where = f"systemInstruction.parts[{i}]"
        part = as_object(item, where)
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
        conversation.turn(as_object(turn, f"contents[{i}]"), i)
    conversation.end_model_run()
    return tuple(conversation.messages)


def signature_in(value: str) -> str:
    """A signature a client sent back, in base64's standard alphabet (module docstring)."""
    return value if value == SKIP_SIGNATURE else value.translate(_URL_SAFE)


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
        checked = [_part(item, f"{where}.parts[{j}]") for j, item in enumerate(parts)]
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
            elif _kind(part) in ("executableCode", "codeExecutionResult"):
                raise InvalidRequestError(
                    f"`{param}.{_kind(part)}` belongs in a `model` turn",
                    param=f"{param}.{_kind(part)}",
                )
            else:
                content = _content_part(part, param)
                if content is not None:
                    pending.append(content)
        self._flush_user(pending)

    def _flush_user(self, pending: list[ContentPart]) -> None:
        if pending:
            self.messages.append(UserMessage(content=tuple(pending)))
            pending.clear()

    def _result(self, value: object, param: str) -> ToolMessage:
        where = f"{param}.functionResponse"
        result = as_object(value, where)
        name = as_str(required(result, "name", f"{where}.name"), f"{where}.name")
        call_id = self._answer(optional_str(result, "id", f"{where}.id"), name, where)
        response = as_object(required(result, "response", f"{where}.response"), f"{where}.response")
        is_error = set(response) == {"error"}
        text = _result_text(response)
        content: list[ContentPart] = [TextPart(text=text)] if text else []
        extra = result.get("parts")
        if extra is not None:
            for k, item in enumerate(as_list(extra, f"{where}.parts")):
                media = _content_part(as_object(item, f"{where}.parts[{k}]"), f"{where}.parts[{k}]")
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
            signature = _signature(part, param)
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
        kind = _kind(part)
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
        if kind in _MODEL_NATIVE:
            data = {key: value for key, value in part.items() if key != "thoughtSignature"}
            return NativeBlock(format="gemini", data=data)
        return None  # a part of modifiers only (a signature alone)

    def _call(self, value: object, where: str, made_id: str) -> ToolCall:
        call = as_object(value, where)
        name = as_str(required(call, "name", f"{where}.name"), f"{where}.name")
        args = call.get("args")
        arguments = {} if args is None else as_object(args, f"{where}.args")
        call_id = optional_str(call, "id", f"{where}.id") or made_id
        self._unanswered.append((call_id, name))
        return ToolCall(id=call_id, name=name, arguments=_ENCODER.encode(arguments).decode())


def _part(value: object, param: str) -> JSONObject:
    """A part, checked to hold one known kind of data (or only a signature)."""
    part = as_object(value, param)
    for key in part:
        if key not in _KNOWN:
            if key == "videoMetadata":
                raise NativeFeatureUnsupportedError(
                    f"`{param}.videoMetadata` is not supported by gw; send the clip itself",
                    param=f"{param}.videoMetadata",
                )
            # Only a name-like key is quoted: anything else may be the client's text.
            shown = f"`{key}` parts are" if is_type_name(key) else "this part kind is"
            raise NativeFeatureUnsupportedError(
                f"`{param}`: {shown} not supported by gw", param=param
            )
    kinds = [key for key in part if key in _DATA or key in _MODEL_NATIVE]
    if len(kinds) > 1:
        raise InvalidRequestError(
            f"`{param}` holds {' and '.join(kinds)}; a part holds one kind of data", param=param
        )
    if not kinds and "thoughtSignature" not in part:
        raise InvalidRequestError(f"`{param}` holds no data", param=param)
    return part


def _kind(part: JSONObject) -> str | None:
    return next((key for key in part if key in _DATA or key in _MODEL_NATIVE), None)


def _signature(part: JSONObject, param: str) -> str | None:
    value = part.get("thoughtSignature")
    if value is None:
        return None
    return signature_in(as_str(value, f"{param}.thoughtSignature")) or None


def _content_part(part: JSONObject, param: str) -> ContentPart | None:
    """A user's text or media part; None for empty text or a part of modifiers only."""
    if "text" in part:
        text = as_str(part["text"], f"{param}.text")
        return TextPart(text=text) if text else None
    if "inlineData" in part:
        return _inline(part["inlineData"], f"{param}.inlineData")
    if "fileData" in part:
        return _file(part["fileData"], f"{param}.fileData")
    return None


def _inline(value: object, where: str) -> ContentPart:
    blob = as_object(value, where)
    media_type = as_str(required(blob, "mimeType", f"{where}.mimeType"), f"{where}.mimeType")
    data = as_str(required(blob, "data", f"{where}.data"), f"{where}.data")
    if media_type.startswith("image/"):
        return ImagePart(data=data, media_type=media_type)
    return FilePart(data=data, media_type=media_type)


def _file(value: object, where: str) -> ContentPart:
    file = as_object(value, where)
    url = as_str(required(file, "fileUri", f"{where}.fileUri"), f"{where}.fileUri")
    kind = optional_str(file, "mimeType", f"{where}.mimeType")
    if kind is not None and kind.startswith("image/"):
        return ImagePart(url=url, media_type=kind)
    return FilePart(url=url, media_type=kind)


def _result_text(response: JSONObject) -> str:
    """A ``functionResponse.response`` as the result's text (see the module docstring)."""
    if len(response) == 1:
        value = response.get("output", response.get("error"))
        if isinstance(value, str):
            return value
        if value is not None:
            return _ENCODER.encode(value).decode()
    return _ENCODER.encode(response).decode() if response else ""

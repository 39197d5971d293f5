"""IR request -> the body for ``POST /v1beta/models/{model}:generateContent`` (Google AI Studio).

The same body serves ``:streamGenerateContent?alt=sse``; only the path differs
(``request_path``). ``encode_upstream_request`` returns the body and the *notes*: one short
line for each part of the request Gemini cannot express and gw dropped or bent (schema
keywords, a ``parallel_tool_calls: false``, an image's ``detail``, ...), so a caller can
trace a lossy translation. A note names a place and a keyword, never a value.

Choices the docs leave open, and what gw does:

- Roles: user -> ``user``, assistant -> ``model``; tool results go back as
  ``functionResponse`` parts in a ``user`` turn (Content.role is ``user`` or ``model``), the
  results of consecutive tool messages in one turn, as the docs show for parallel calls.
- A ``functionResponse`` needs the function's name, which an IR tool result does not carry:
  it comes from the earlier call with the same id. Its ``response`` must be a JSON object:
  a result whose text is a JSON object is sent as that object; any other text as
  ``{"output": text}``; an error result (``is_error``) as ``{"error": ...}`` (the docs name
  both keys). Images in a result travel in ``functionResponse.parts`` as ``inlineData``.
- Call ids are not sent: Gemini pairs results with calls by name and order, and an id gw or
  another provider invented would mean nothing to it.
- Thinking: Gemini reads signatures, not thought text. A ``ThinkingPart`` with a signature
  and text goes back as the thought part it came from; one with a signature and no text
  (decoded from a signed ``functionCall`` or text part) goes back on the function calls of
  the same turn, in order, or else on its last text part. Unsigned thought text and
  Anthropic's redacted blocks are dropped. A model turn with function calls and no
  signature (history from another provider or an OpenAI client) gets the documented
  placeholder ``skip_thought_signature_validator``: Gemini 3 refuses such a turn otherwise.
- Images: inline base64 and ``data:`` URLs -> ``inlineData``; ``gs://`` and Files API URIs
  -> ``fileData``; any other URL -> ``NativeFeatureUnsupportedError`` (Gemini does not
  fetch arbitrary URLs given in a prompt part).
- Reasoning: a token budget -> ``thinkingBudget``; adaptive -> ``thinkingBudget: -1``
  (dynamic thinking); an effort -> a budget by ``BUDGET_BY_EFFORT`` (``thinkingLevel``
  would fail on Gemini 2.5); always with ``includeThoughts`` so the client sees the
  thinking it asked for.
"""

from __future__ import annotations

import urllib.parse
from typing import Any, NamedTuple

import msgspec

from gw.codecs.gemini.schema import to_gemini_schema
from gw.errors import InvalidRequestError, NativeFeatureUnsupportedError
from gw.ir import (
    AssistantMessage,
    ChatRequest,
    ContentPart,
    FilePart,
    ImagePart,
    NativeBlock,
    Reasoning,
    ResponseFormat,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolChoice,
    ToolDefinition,
    ToolMessage,
    UserMessage,
)

JSONObject = dict[str, Any]

API_VERSION = "v1beta"
# OpenAI's effort levels as thinking budgets (Gemini 2.5 Flash takes 0-24576 tokens).
# "none" turns thinking off where the model allows it; "xhigh" gets the largest budget.
BUDGET_BY_EFFORT: dict[str, int] = {
    "none": 0, "minimal": 512, "low": 1024, "medium": 8192, "high": 24576, "xhigh": 24576,
}  # fmt: skip
# thinkingBudget -1: dynamic thinking, the model decides how much (adaptive reasoning).
DYNAMIC_BUDGET = -1
# Documented stand-in for a signature Gemini never issued (thought-signatures guide, FAQ).
SKIP_SIGNATURE = "skip_thought_signature_validator"
TOOL_CHOICE_MODES: dict[str, str] = {
    "auto": "AUTO",
    "none": "NONE",
    "required": "ANY",
    "tool": "ANY",
}

_ENCODER = msgspec.json.Encoder()
_ANY_JSON = msgspec.json.Decoder()
# Leading base64 characters of common image formats, for data that came without a type.
_MAGIC = (
    ("iVBOR", "image/png"),
    ("/9j/", "image/jpeg"),
    ("R0lGOD", "image/gif"),
    ("UklGR", "image/webp"),
)
_DEFAULT_MEDIA_TYPE = "image/png"
_FILES_API_PREFIX = "https://generativelanguage.googleapis.com/"
# Keys of extensions["gemini"] that never replace what gw computed.
_PROTECTED = frozenset({"contents", "systemInstruction", "tools", "toolConfig"})
_PROTECTED_CONFIG = frozenset({"maxOutputTokens", "candidateCount"})


class EncodedRequest(NamedTuple):
    body: bytes
    notes: tuple[str, ...]  # what was dropped or bent, one line each; empty when lossless


def request_path(model: str, *, stream: bool) -> str:
    """The path under the base URL; ``model`` may carry its ``models/`` (or tuned) prefix."""
    name = model if model.startswith(("models/", "tunedModels/")) else f"models/{model}"
    collection, _, rest = name.partition("/")
    path = f"/{API_VERSION}/{collection}/{urllib.parse.quote(rest, safe='')}"
    return f"{path}:streamGenerateContent?alt=sse" if stream else f"{path}:generateContent"


def encode_upstream_request(request: ChatRequest) -> EncodedRequest:
    """The JSON body (for both endpoints) and the notes on what it could not carry."""
    encoder = _RequestEncoder()
    body = encoder.body(request)
    return EncodedRequest(_ENCODER.encode(body), tuple(encoder.notes))


class _RequestEncoder:
    def __init__(self) -> None:
        self.notes: list[str] = []
        self._names: dict[str, str] = {}  # tool call id -> function name, for the results

    def note(self, where: str, what: str) -> None:
        self.notes.append(f"{where}: {what}")

    def body(self, request: ChatRequest) -> JSONObject:
        system, contents = self._conversation(request)
        body: JSONObject = {"contents": contents}
        if system:
            body["systemInstruction"] = {"parts": system}
        if request.tools:
            body["tools"] = [{"functionDeclarations": self._declarations(request.tools)}]
        # Gemini's own tools (googleSearch, codeExecution, urlContext, ...), as the client
        # sent them; another format's are left out (foreign_field_notes says so).
        native = [tool.data for tool in request.native_tools if tool.format == "gemini"]
        if native:
            body.setdefault("tools", []).extend(native)
        if request.tool_choice is not None:
            body["toolConfig"] = {"functionCallingConfig": _calling_config(request.tool_choice)}
        if request.parallel_tool_calls is False:
            self.note("parallel_tool_calls", "false cannot be expressed; Gemini may call several")
        if request.user is not None:
            self.note("user", "dropped (no Gemini field)")
        body["generationConfig"] = self._generation_config(request)
        self._merge_extensions(body, request.extensions.get("gemini", {}))
        return body

    # --- conversation -----------------------------------------------------------------------

    def _conversation(self, request: ChatRequest) -> tuple[list[JSONObject], list[JSONObject]]:
        system: list[JSONObject] = []
        contents: list[JSONObject] = []
        results: list[JSONObject] | None = None  # the open turn of tool results, if any
        for index, message in enumerate(request.messages):
            where = f"messages[{index}]"
            if not isinstance(message, ToolMessage):
                results = None
            match message:
                case SystemMessage(content=content):
                    if contents:
                        self.note(where, "system message moved into systemInstruction")
                    system.extend({"text": part.text} for part in content if part.text)
                case UserMessage(content=content, name=name):
                    self._drop_name(where, name)
                    parts = [
                        self._user_part(part, f"{where}.content[{i}]")
                        for i, part in enumerate(content)
                        if not _empty_text(part)
                    ]
                    self._add_turn(contents, "user", parts, where)
                case AssistantMessage(name=name):
                    self._drop_name(where, name)
                    self._add_turn(contents, "model", self._model_parts(message, where), where)
                case ToolMessage():
                    part = self._function_response(message, where)
                    if results is None:
                        results = []
                        contents.append({"role": "user", "parts": results})
                    results.append(part)
        return system, contents

    def _add_turn(
        self, contents: list[JSONObject], role: str, parts: list[JSONObject], where: str
    ) -> None:
        if parts:
            contents.append({"role": role, "parts": parts})
        else:  # Gemini refuses a part with empty text, and a turn without parts
            self.note(where, "empty turn dropped (Gemini refuses empty text)")

    def _drop_name(self, where: str, name: str | None) -> None:
        if name is not None:
            self.note(f"{where}.name", "dropped (no Gemini field)")

    def _user_part(self, part: ContentPart, where: str) -> JSONObject:
        if isinstance(part, TextPart):
            return {"text": part.text}
        if isinstance(part, FilePart) and part.file_id is not None:
            raise NativeFeatureUnsupportedError(
                f"`{where}` names a file by id, which only its own provider knows; send the "
                "file inline",
                param=where,
            )
        return self._media(part, where)

    def _media(self, part: ImagePart | FilePart, where: str) -> JSONObject:
        if isinstance(part, ImagePart) and part.detail is not None:
            self.note(f"{where}.detail", "dropped (no Gemini field)")
        if isinstance(part, FilePart) and part.filename is not None:
            self.note(f"{where}.filename", "dropped (no Gemini field)")
        if part.data is not None:
            return _inline(part.media_type, part.data)
        url = part.url or ""
        if url.startswith("data:"):
            header, comma, data = url[5:].partition(",")
            media_type, _, encoding = header.partition(";")
            if comma and encoding == "base64":
                return _inline(media_type or part.media_type, data)
            raise InvalidRequestError(f"`{where}` is a data: URL that is not base64", param=where)
        if url.startswith("gs://") or (url.startswith(_FILES_API_PREFIX) and "/files/" in url):
            file: JSONObject = {"fileUri": url}
            if part.media_type:
                file["mimeType"] = part.media_type
            return {"fileData": file}
        raise NativeFeatureUnsupportedError(
            f"`{where}` is an image URL, which Gemini does not fetch; send the image inline "
            "(base64 or a data: URL) or route this request to a provider that fetches URLs",
            param=where,
        )

    def _model_parts(self, message: AssistantMessage, where: str) -> list[JSONObject]:
        thoughts: list[JSONObject] = []
        loose: list[str] = []  # signatures that belong on a call or the last text part
        for part in message.content:
            if not isinstance(part, ThinkingPart):
                continue
            if part.signature and part.text:
                thoughts.append(
                    {"text": part.text, "thought": True, "thoughtSignature": part.signature}
                )
            elif part.signature:
                loose.append(part.signature)
            elif part.text or part.redacted:
                self.note(f"{where}.content", "thinking without a Gemini signature dropped")
        # Text, and a Gemini client's own parts (executableCode, codeExecutionResult), in
        # their order; another format's blocks are noted by foreign_field_notes.
        said: list[JSONObject] = [
            {"text": p.text} if isinstance(p, TextPart) else p.data
            for p in message.content
            if (isinstance(p, TextPart) and p.text)
            or (isinstance(p, NativeBlock) and p.format == "gemini")
        ]
        texts = [part for part in said if "text" in part]
        calls = [
            self._function_call(call, f"{where}.tool_calls[{i}]")
            for i, call in enumerate(message.tool_calls)
        ]
        had = len(texts)
        unused = _place_signatures(loose, texts, calls)
        said.extend(texts[had:])  # a text part made to carry a signature
        if unused:
            self.note(
                f"{where}.content",
                f"{unused} thought signature(s) with no part to carry them dropped",
            )
        return [*thoughts, *said, *calls]

    def _function_call(self, call: ToolCall, where: str) -> JSONObject:
        self._names[call.id] = call.name
        args: object = {}
        if call.arguments.strip():
            try:
                args = _ANY_JSON.decode(call.arguments)
            except msgspec.DecodeError:
                args = call.arguments
        if not isinstance(args, dict):
            self.note(f"{where}.arguments", 'not a JSON object; sent as {"arguments": ...}')
            args = {"arguments": args}
        return {"functionCall": {"name": call.name, "args": args}}

    def _function_response(self, message: ToolMessage, where: str) -> JSONObject:
        name = self._names.get(message.tool_call_id)
        if name is None:
            param = f"{where}.tool_call_id"
            raise InvalidRequestError(
                f"`{param}` matches no earlier tool call; Gemini needs the called function's name",
                param=param,
            )
        text = "".join(part.text for part in message.content if isinstance(part, TextPart))
        value: object = _json_object(text)
        if message.is_error:
            response: JSONObject = {"error": value if value is not None else text}
        else:
            response = value if isinstance(value, dict) else {"output": text}
        result: JSONObject = {"name": name, "response": response}
        media = [
            self._media(part, f"{where}.content[{i}]")
            for i, part in enumerate(message.content)
            if isinstance(part, ImagePart)
        ]
        if media:
            result["parts"] = media
        return {"functionResponse": result}

    # --- tools and generation config ----------------------------------------------------------

    def _declarations(self, tools: tuple[ToolDefinition, ...]) -> list[JSONObject]:
        declarations: list[JSONObject] = []
        for index, tool in enumerate(tools):
            declaration: JSONObject = {"name": tool.name}
            if tool.description is not None:
                declaration["description"] = tool.description
            if tool.parameters is not None:
                path = f"tools[{index}].parameters"
                gemini = to_gemini_schema(tool.parameters, path=path)
                # An empty root object is a function without arguments: declared without
                # parameters (Gemini refuses an OBJECT with no properties), unless it takes
                # any keys (additionalProperties), as many MCP tools do.
                free = tuple(
                    where
                    for where in gemini.free_form
                    if where != path or _takes_any_keys(tool.parameters)
                )
                if free:
                    declaration["parametersJsonSchema"] = tool.parameters
                    self._as_json_schema(path, "parametersJsonSchema", free)
                else:
                    self.notes.extend(gemini.notes)
                    if path not in gemini.free_form:
                        declaration["parameters"] = gemini.schema
            if tool.strict:
                self.note(f"tools[{index}].strict", "not enforced by Gemini")
            declarations.append(declaration)
        return declarations

    def _generation_config(self, request: ChatRequest) -> JSONObject:
        config: JSONObject = {"candidateCount": 1}
        sampling = request.sampling
        for key, value in (
            ("temperature", sampling.temperature),
            ("topP", sampling.top_p),
            ("topK", sampling.top_k),
            ("presencePenalty", sampling.presence_penalty),
            ("frequencyPenalty", sampling.frequency_penalty),
            ("seed", sampling.seed),
        ):
            if value is not None:
                config[key] = value
        if request.max_tokens is not None:
            config["maxOutputTokens"] = request.max_tokens
        if request.stop:
            config["stopSequences"] = list(request.stop)
        if request.response_format is not None:
            config.update(self._response_format(request.response_format))
        if request.reasoning is not None:
            config["thinkingConfig"] = self._thinking(request.reasoning)
        return config

    def _response_format(self, fmt: ResponseFormat) -> JSONObject:
        if fmt.type == "text":
            return {}
        out: JSONObject = {"responseMimeType": "application/json"}
        if fmt.description is not None:
            self.note("response_format.json_schema.description", "dropped (no Gemini field)")
        if fmt.type == "json_schema" and fmt.json_schema is not None:
            path = "response_format.json_schema"
            gemini = to_gemini_schema(fmt.json_schema, path=path)
            if gemini.free_form:
                out["responseJsonSchema"] = fmt.json_schema
                self._as_json_schema(path, "responseJsonSchema", gemini.free_form)
            else:
                self.notes.extend(gemini.notes)
                out["responseSchema"] = gemini.schema
        return out

    def _as_json_schema(self, path: str, field: str, free_form: tuple[str, ...]) -> None:
        self.note(
            path,
            f"sent as {field}: Gemini's Schema has no form for an object without properties "
            f"({', '.join(free_form)}); needs a Gemini 2.5 or newer model",
        )

    def _thinking(self, reasoning: Reasoning) -> JSONObject:
        if reasoning.budget_tokens is not None:
            if reasoning.effort is not None:
                self.note("reasoning.effort", "not sent beside a budget (Gemini takes one of them)")
            return {
                "thinkingBudget": reasoning.budget_tokens,
                "includeThoughts": reasoning.budget_tokens != 0,
            }
        if reasoning.adaptive:
            # Anthropic's adaptive thinking is Gemini's dynamic thinking: the model decides.
            return {"thinkingBudget": DYNAMIC_BUDGET, "includeThoughts": True}
        if reasoning.effort is not None:
            # A budget, not thinkingLevel: Gemini 2.5 models take only budgets, Gemini 3
            # takes both, and each Gemini 3 model accepts a different set of levels.
            return {"thinkingBudget": BUDGET_BY_EFFORT[reasoning.effort], "includeThoughts": True}
        return {"includeThoughts": True}

    def _merge_extensions(self, body: JSONObject, extensions: JSONObject) -> None:
        for key, value in extensions.items():
            if key == "generationConfig" and isinstance(value, dict):
                config = body["generationConfig"]
                config.update({k: v for k, v in value.items() if k not in _PROTECTED_CONFIG})
            elif key == "tools" and isinstance(value, list):
                body.setdefault("tools", []).extend(value)  # built-in tools (googleSearch, ...)
            elif key not in _PROTECTED:
                body[key] = value  # safetySettings, cachedContent, ...


def _calling_config(choice: ToolChoice) -> JSONObject:
    config: JSONObject = {"mode": TOOL_CHOICE_MODES[choice.mode]}
    if choice.mode == "tool" and choice.name:
        config["allowedFunctionNames"] = [choice.name]
    return config


def _inline(media_type: str | None, data: str) -> JSONObject:
    kind = media_type or next(
        (k for magic, k in _MAGIC if data.startswith(magic)), _DEFAULT_MEDIA_TYPE
    )
    return {"inlineData": {"mimeType": kind, "data": data}}


def _json_object(text: str) -> dict[str, Any] | None:
    """``text`` parsed when it is a JSON object, else None (cheap for plain text)."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        value = _ANY_JSON.decode(text)
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, dict) else None


def _empty_text(part: ContentPart) -> bool:
    return isinstance(part, TextPart) and not part.text


def _place_signatures(loose: list[str], texts: list[JSONObject], calls: list[JSONObject]) -> int:
    """Put the signatures that came without text where Gemini wants them: one on each call
    in order (the first call gets the skip value without one), else on the last text part.
    Returns how many found no part.

    A streamed call's signature joins the thinking block before it (where an Anthropic
    client keeps it), so it comes back on that thought, and the call gets the skip value:
    moving it onto the call would also move another provider's signature there, which
    Gemini refuses on a call."""
    if calls:
        for call, signature in zip(calls, loose, strict=False):
            call["thoughtSignature"] = signature
        calls[0].setdefault("thoughtSignature", SKIP_SIGNATURE)
        return max(len(loose) - len(calls), 0)
    if not loose:
        return 0
    if not texts:
        texts.append({"text": ""})
    texts[-1]["thoughtSignature"] = loose[-1]
    return len(loose) - 1


def _takes_any_keys(schema: JSONObject) -> bool:
    extra = schema.get("additionalProperties")
    return (extra is not None and extra is not False) or "patternProperties" in schema

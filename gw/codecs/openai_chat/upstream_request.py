"""IR request -> the JSON body for ``POST {base_url}/chat/completions`` of an OpenAI-shaped host."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from gw.codecs.cache_marks import cache_mark_note
from gw.codecs.foreign_fields import foreign_field_notes
from gw.errors import NativeFeatureUnsupportedError
from gw.ir import (
    AssistantMessage,
    ChatRequest,
    ContentPart,
    FilePart,
    ImagePart,
    Message,
    Reasoning,
    ResponseFormat,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolChoice,
    ToolDefinition,
    ToolMessage,
    UserMessage,
)

_ENCODER = msgspec.json.Encoder()
# Keys of extensions["openai"] that never override what gw computed: routing (model), the
# conversation, streaming mode, and the token limit (a ceiling may have clamped it).
_PROTECTED = frozenset({"model", "messages", "stream", "max_tokens", "max_completion_tokens"})
# Leading base64 characters of common image formats, for data that came without a type.
_MAGIC = (("iVBOR", "image/png"), ("/9j/", "image/jpeg"), ("R0lGOD", "image/gif"))
_DEFAULT_MEDIA_TYPE = "image/png"

JSONObject = dict[str, Any]


def encode_upstream_request(
    request: ChatRequest,
    *,
    model: str,
    stream: bool,
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens",
) -> bytes:
    """The request body. The token limit is sent only when the request has one, under
    ``max_tokens_field`` (OpenAI's reasoning models accept only ``max_completion_tokens``).
    Streaming always asks for usage. ``sampling.top_k`` is dropped: OpenAI has none.
    """
    body: JSONObject = {
        "model": model,
        "messages": [_message(m) for m in request.messages],
        "stream": stream,
    }
    if request.tools:
        body["tools"] = [_tool(tool) for tool in request.tools]
    if request.tool_choice is not None:
        body["tool_choice"] = _tool_choice(request.tool_choice)
    if request.parallel_tool_calls is not None:
        body["parallel_tool_calls"] = request.parallel_tool_calls
    if request.response_format is not None:
        body["response_format"] = _response_format(request.response_format)
    sampling = request.sampling
    for key, value in (
        ("temperature", sampling.temperature),
        ("top_p", sampling.top_p),
        ("frequency_penalty", sampling.frequency_penalty),
        ("presence_penalty", sampling.presence_penalty),
        ("seed", sampling.seed),
    ):
        if value is not None:
            body[key] = value
    if request.max_tokens is not None:
        body[max_tokens_field] = request.max_tokens
    if request.stop:
        body["stop"] = list(request.stop)
    if request.user is not None:
        body["user"] = request.user
    effort = None if request.reasoning is None else reasoning_effort(request.reasoning)
    if effort is not None:
        body["reasoning_effort"] = effort
    _merge_extensions(body, request.extensions.get("openai", {}), stream=stream)
    return _ENCODER.encode(body)


def lossy_notes(request: ChatRequest) -> list[str]:
    """What ``encode_upstream_request`` leaves out because this format has no place for it."""
    notes: list[str] = []
    if request.sampling.top_k is not None:
        notes.append("sampling.top_k: not sent (the OpenAI format has no top_k)")
    if any(
        isinstance(message, AssistantMessage)
        and any(isinstance(part, ThinkingPart) for part in message.content)
        for message in request.messages
    ):
        notes.append("earlier turns' thinking blocks: not sent (the OpenAI format has none)")
    if any(isinstance(message, ToolMessage) and message.is_error for message in request.messages):
        notes.append("tool results' is_error: not sent (the OpenAI format has no such flag)")
    if request.reasoning is not None and request.reasoning.summary is not None:
        notes.append("reasoning.summary: not sent (Chat Completions returns no reasoning)")
    return (
        notes
        + reasoning_notes(request.reasoning)
        + cache_mark_note(request, "OpenAI")
        + foreign_field_notes(request, "openai")
    )


# A thinking budget (Anthropic clients) as OpenAI's effort level: at most this many
# tokens -> that level, above the last -> "high".
EFFORT_BY_BUDGET: tuple[tuple[int, str], ...] = ((2048, "low"), (8192, "medium"))


# What adaptive thinking (Anthropic clients: the model decides) asks of OpenAI when the
# client named no effort: OpenAI's own default level.
ADAPTIVE_EFFORT = "medium"


def reasoning_effort(reasoning: Reasoning) -> str | None:
    """OpenAI's effort level (both its formats) for what the client asked: its effort, or
    one for a thinking budget or adaptive thinking (Anthropic and Gemini clients). None
    when it asked only for a summary, or turned thinking off (a budget of 0): only
    reasoning models take an effort, ``none`` included, and such a request may go to any
    model (``reasoning_notes`` says what was not sent)."""
    if reasoning.effort is not None:
        return reasoning.effort
    if reasoning.adaptive:
        return ADAPTIVE_EFFORT
    budget = reasoning.budget_tokens
    if not budget:
        return None
    return next((level for limit, level in EFFORT_BY_BUDGET if budget <= limit), "high")


def reasoning_notes(reasoning: Reasoning | None) -> list[str]:
    """Thinking turned off (a budget of 0) is not sent to either OpenAI format: say so."""
    if reasoning is None or reasoning.budget_tokens != 0 or reasoning.effort is not None:
        return []
    return [
        "thinking off (budget 0): no reasoning_effort sent (only reasoning models take one; "
        "they think at their default)"
    ]


def _merge_extensions(body: JSONObject, extensions: JSONObject, *, stream: bool) -> None:
    for key, value in extensions.items():
        if key not in _PROTECTED and key != "stream_options":
            body[key] = value
    if stream:
        # Other stream options (include_obfuscation, ...) pass; include_usage is always on so
        # usage is exact. OpenAI rejects stream_options on a non-streaming call.
        options = extensions.get("stream_options")
        body["stream_options"] = {
            **(options if isinstance(options, dict) else {}),
            "include_usage": True,
        }


def _message(message: Message) -> JSONObject:
    match message:
        case SystemMessage(content=content, name=name):
            return _named({"role": "system", "content": _text(content)}, name)
        case UserMessage(content=content, name=name):
            return _named({"role": "user", "content": _user_content(content)}, name)
        case AssistantMessage(content=content, tool_calls=calls, name=name):
            # Earlier turns' reasoning has no place in this format; the answer stands alone.
            said = tuple(part for part in content if isinstance(part, TextPart))
            # null content is only valid beside tool calls; an empty turn stays "".
            text = _text(said) if said or not calls else None
            out: JSONObject = {"role": "assistant", "content": text}
            if calls:
                out["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    }
                    for call in calls
                ]
            return _named(out, name)
        case ToolMessage(tool_call_id=call_id, content=content):
            texts = tuple(part for part in content if isinstance(part, TextPart))
            if len(texts) < len(content):
                raise NativeFeatureUnsupportedError(
                    "a tool result holds an image, which OpenAI-format upstreams cannot take; "
                    "route this request to a provider that can (anthropic)"
                )
            return {"role": "tool", "tool_call_id": call_id, "content": _text(texts)}


def _named(out: JSONObject, name: str | None) -> JSONObject:
    if name is not None:
        out["name"] = name
    return out


def _text(parts: tuple[TextPart, ...]) -> str | list[JSONObject]:
    """One part as a plain string (the common shape), several as an array of text parts."""
    if len(parts) <= 1:
        return parts[0].text if parts else ""
    return [{"type": "text", "text": part.text} for part in parts]


def _user_content(parts: tuple[ContentPart, ...]) -> str | list[JSONObject]:
    if all(isinstance(part, TextPart) for part in parts) and len(parts) <= 1:
        return parts[0].text if parts and isinstance(parts[0], TextPart) else ""
    return [_part(part) for part in parts]


def _part(part: ContentPart) -> JSONObject:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, FilePart):
        return {"type": "file", "file": _file(part)}
    image: JSONObject = {"url": _image_url(part)}
    if part.detail is not None:
        image["detail"] = part.detail
    return {"type": "image_url", "image_url": image}


def _file(part: FilePart) -> JSONObject:
    """Chat Completions' ``file`` part: a ``file_id``, or the data as a data: URL."""
    if part.file_id is not None:
        return {"file_id": part.file_id}
    file: JSONObject = {}
    if part.filename is not None:
        file["filename"] = part.filename
    if part.url is not None and not part.url.startswith("data:"):
        raise NativeFeatureUnsupportedError(
            "a file given by URL cannot be sent to an OpenAI-format upstream (it takes file "
            "data or a file_id); send the file inline, or route to a provider that fetches "
            "URLs (Anthropic)",
            param="file_url",
        )
    media_type = part.media_type or "application/pdf"
    file["file_data"] = part.url or f"data:{media_type};base64,{part.data or ''}"
    return file


def _image_url(part: ImagePart) -> str:
    if part.url is not None:
        return part.url
    data = part.data or ""
    media_type = part.media_type or next(
        (kind for magic, kind in _MAGIC if data.startswith(magic)), _DEFAULT_MEDIA_TYPE
    )
    return f"data:{media_type};base64,{data}"


def _tool(tool: ToolDefinition) -> JSONObject:
    function: JSONObject = {"name": tool.name}
    if tool.description is not None:
        function["description"] = tool.description
    if tool.parameters is not None:
        function["parameters"] = tool.parameters
    if tool.strict is not None:
        function["strict"] = tool.strict
    return {"type": "function", "function": function}


def _tool_choice(choice: ToolChoice) -> str | JSONObject:
    if choice.mode == "tool":
        return {"type": "function", "function": {"name": choice.name or ""}}
    return choice.mode


def _response_format(fmt: ResponseFormat) -> JSONObject:
    if fmt.type != "json_schema":
        return {"type": fmt.type}
    spec: JSONObject = {"name": fmt.name or "response"}
    for key, value in (
        ("description", fmt.description),
        ("schema", fmt.json_schema),
        ("strict", fmt.strict),
    ):
        if value is not None:
            spec[key] = value
    return {"type": "json_schema", "json_schema": spec}

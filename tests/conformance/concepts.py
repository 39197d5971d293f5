"""What a client field means once in the IR, and where each upstream format carries it.

A ``Concept`` holds one check per upstream format that has a place for it (a format
missing from ``checks`` has none: there the field can only be noted, refused or dropped),
and the words a lossy-translation note uses for it (``terms``). Client fields of every
format that mean the same thing share a concept, so ``temperature``, ``generationConfig.
temperature`` and a Responses ``temperature`` are judged by the same checks.

Values are markers (``MARK``-ish strings, odd numbers), so a check finds the client's own
value, not a default an encoder adds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from conformance.checks import (
    Check,
    at,
    either,
    has_key,
    header,
    holds,
    mentions,
    some,
    url_has,
    where,
)

SYSTEM_TEXT = "sys-7f3"
USER_TEXT = "user-7f3"
OTHER_TEXT = "more-7f3"
ASSISTANT_TEXT = "answer-7f3"
THOUGHT_TEXT = "thought-7f3"
IMAGE_URL = "https://example.com/cat-7f3.png"
IMAGE_DATA = "iVBORw0KGgo7f3AAAA"
PDF_DATA = "JVBERi0xLjcK7f3"
PDF_URL = "https://example.com/paper-7f3.pdf"
FILE_ID = "file-7f3"
FILENAME = "paper-7f3.pdf"
TOOL = "get_weather"
CALL_ID = "call_7f3"
RESULT_TEXT = "result-7f3"
SIGNATURE = "c2lnLTdmMw=="
REDACTED = "cmVkYWN0ZWQtN2Yz"
STOP = "STOP-7f3"
USER_ID = "user-id-7f3"
MESSAGE_NAME = "alice7f3"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
}
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}


@dataclass(frozen=True)
class Concept:
    checks: Mapping[str, Check]  # upstream format -> does the body carry it
    terms: tuple[str, ...]  # words a note naming it contains (any one, any case)


def _role_says(role_key: str, roles: tuple[str, ...], marker: str) -> Any:
    return lambda item: (
        isinstance(item, dict) and item.get(role_key) in roles and holds(item, marker)
    )


def _typed(kind: str, marker: str) -> Any:
    return lambda item: isinstance(item, dict) and item.get("type") == kind and holds(item, marker)


def said(marker: str, *, role: str) -> Concept:
    """``marker`` is in a turn of ``role`` (user or assistant), in each format's terms."""
    gemini_role = "model" if role == "assistant" else "user"
    return Concept(
        checks={
            "openai_chat": some("messages[*]", _role_says("role", (role,), marker)),
            "anthropic": some("messages[*]", _role_says("role", (role,), marker)),
            "gemini": some("contents[*]", _role_says("role", (gemini_role,), marker)),
            "openai_responses": either(
                some("input[*]", _role_says("role", (role,), marker)),
                at("input", marker),
            ),
        },
        terms=("messages",),
    )


SYSTEM = Concept(
    checks={
        "openai_chat": some(
            "messages[*]", _role_says("role", ("system", "developer"), SYSTEM_TEXT)
        ),
        "anthropic": mentions("system", SYSTEM_TEXT),
        "gemini": mentions("systemInstruction", SYSTEM_TEXT),
        "openai_responses": either(
            mentions("instructions", SYSTEM_TEXT),
            some("input[*]", _role_says("role", ("system", "developer"), SYSTEM_TEXT)),
        ),
    },
    terms=("system",),
)
MESSAGE_NAMED = Concept(
    checks={"openai_chat": at("messages[*].name", MESSAGE_NAME)},
    terms=(".name",),
)
IMAGE_BY_URL = Concept(
    checks={
        "openai_chat": at("messages[*].content[*].image_url.url", IMAGE_URL),
        "anthropic": at("messages[*].content[*].source.url", IMAGE_URL),
        "gemini": at("contents[*].parts[*].fileData.fileUri", IMAGE_URL),
        "openai_responses": at("input[*].content[*].image_url", IMAGE_URL),
    },
    terms=("image",),
)
IMAGE_INLINE = Concept(
    checks={
        "openai_chat": mentions("messages[*].content[*].image_url.url", IMAGE_DATA),
        "anthropic": at("messages[*].content[*].source.data", IMAGE_DATA),
        "gemini": at("contents[*].parts[*].inlineData.data", IMAGE_DATA),
        "openai_responses": mentions("input[*].content[*].image_url", IMAGE_DATA),
    },
    terms=("image",),
)
IMAGE_DETAIL = Concept(
    checks={
        "openai_chat": at("messages[*].content[*].image_url.detail", "low"),
        "openai_responses": at("input[*].content[*].detail", "low"),
    },
    terms=("detail",),
)
FILE_INLINE = Concept(
    checks={
        "openai_chat": mentions("messages[*].content[*].file.file_data", PDF_DATA),
        "anthropic": some("messages[*].content[*]", _typed("document", PDF_DATA)),
        "gemini": at("contents[*].parts[*].inlineData.data", PDF_DATA),
        "openai_responses": mentions("input[*].content[*].file_data", PDF_DATA),
    },
    terms=("file", "document"),
)


def file_by_url(url: str) -> Concept:
    """A document given by URL (Gemini: a Files API or gs:// URI)."""
    return Concept(
        checks={
            "anthropic": at("messages[*].content[*].source.url", url),
            "gemini": at("contents[*].parts[*].fileData.fileUri", url),
            "openai_responses": at("input[*].content[*].file_url", url),
        },
        terms=("file", "document"),
    )


FILE_BY_URL = file_by_url(PDF_URL)
FILE_BY_ID = Concept(
    checks={
        "openai_chat": at("messages[*].content[*].file.file_id", FILE_ID),
        "anthropic": at("messages[*].content[*].source.file_id", FILE_ID),
        "openai_responses": at("input[*].content[*].file_id", FILE_ID),
    },
    terms=("file_id",),
)
FILENAME_GIVEN = Concept(
    checks={
        "openai_chat": at("messages[*].content[*].file.filename", FILENAME),
        "anthropic": at("messages[*].content[*].title", FILENAME),
        "openai_responses": at("input[*].content[*].filename", FILENAME),
    },
    terms=("filename",),
)
TOOL_CALL = Concept(
    checks={
        "openai_chat": at("messages[*].tool_calls[*].function.name", TOOL),
        "anthropic": where("messages[*].content[*]", type="tool_use", name=TOOL),
        "gemini": at("contents[*].parts[*].functionCall.name", TOOL),
        "openai_responses": where("input[*]", type="function_call", name=TOOL),
    },
    terms=("tool_call", "tool call"),
)


TOOL_RESULT = Concept(
    checks={
        "openai_chat": some("messages[*]", _role_says("role", ("tool",), RESULT_TEXT)),
        "anthropic": some("messages[*].content[*]", _typed("tool_result", RESULT_TEXT)),
        "gemini": mentions("contents[*].parts[*].functionResponse", RESULT_TEXT),
        "openai_responses": some("input[*]", _typed("function_call_output", RESULT_TEXT)),
    },
    terms=("tool result", "tool_result"),
)
TOOL_RESULT_ERROR = Concept(
    checks={
        "anthropic": where("messages[*].content[*]", type="tool_result", is_error=True),
        "gemini": at("contents[*].parts[*].functionResponse.response.error"),
    },
    terms=("is_error",),
)
TOOL_RESULT_IMAGE = Concept(
    checks={
        "anthropic": some("messages[*].content[*]", _typed("tool_result", IMAGE_DATA)),
        "gemini": mentions("contents[*].parts[*].functionResponse.parts", IMAGE_DATA),
        "openai_responses": some("input[*]", _typed("function_call_output", IMAGE_DATA)),
    },
    terms=("tool result", "image"),
)
THINKING_SIGNED = Concept(
    checks={
        "anthropic": where("messages[*].content[*]", type="thinking", signature=SIGNATURE),
        "gemini": at("contents[*].parts[*].thoughtSignature", SIGNATURE),
        "openai_responses": where("input[*]", type="reasoning"),
    },
    terms=("thinking", "thought"),
)
THINKING_REDACTED = Concept(
    checks={
        "anthropic": where("messages[*].content[*]", type="redacted_thinking", data=REDACTED),
        "openai_responses": mentions("input[*]", REDACTED),
    },
    terms=("thinking",),
)
THOUGHT_UNSIGNED = Concept(
    checks={
        "anthropic": some("messages[*].content[*]", _typed("thinking", THOUGHT_TEXT)),
        "gemini": some("contents[*].parts[*]", lambda part: part.get("thought") is True),
        "openai_responses": where("input[*]", type="reasoning"),
    },
    terms=("thinking", "thought"),
)


def native_block(fmt: str, kind: str) -> Concept:
    """A block only ``fmt`` models (a server tool call, a reasoning item), in history."""
    checks: dict[str, Check] = {
        "anthropic": where("messages[*].content[*]", type=kind),
        "gemini": at(f"contents[*].parts[*].{kind}"),
        "openai_responses": where("input[*]", type=kind),
    }
    # Another format's note names the block's type, or "a block (<format>)" without one.
    return Concept(checks={fmt: checks[fmt]}, terms=(kind, f"a block ({fmt})"))


FUNCTION_TOOL = Concept(
    checks={
        "openai_chat": at("tools[*].function.name", TOOL),
        "anthropic": at("tools[*].name", TOOL),
        "gemini": at("tools[*].functionDeclarations[*].name", TOOL),
        "openai_responses": where("tools[*]", type="function", name=TOOL),
    },
    terms=("tools",),
)
TOOL_STRICT = Concept(
    checks={
        "openai_chat": at("tools[*].function.strict", True),
        "anthropic": at("tools[*].strict", True),
        "openai_responses": at("tools[*].strict", True),
    },
    terms=("strict",),
)
CACHE_MARK = Concept(
    checks={
        "anthropic": either(
            has_key("messages", "cache_control"), has_key("system", "cache_control")
        )
    },
    terms=("cache_control",),
)
TOOL_CACHE_MARK = Concept(
    checks={"anthropic": at("tools[*].cache_control")},
    terms=("cache_control",),
)


def tool_choice(openai: object, anthropic: str, gemini: str, *, named: bool = False) -> Concept:
    """A tool choice: OpenAI's value, Anthropic's type, Gemini's calling mode."""
    responses: object = {"type": "function", "name": TOOL} if named else openai
    gemini_check = at("toolConfig.functionCallingConfig.mode", gemini)
    anthropic_check = at("tool_choice.type", anthropic)
    if named:
        gemini_check = where(
            "toolConfig.functionCallingConfig", mode=gemini, allowedFunctionNames=[TOOL]
        )
        anthropic_check = where("tool_choice", type=anthropic, name=TOOL)
    return Concept(
        checks={
            "openai_chat": at("tool_choice", openai),
            "anthropic": anthropic_check,
            "gemini": gemini_check,
            "openai_responses": at("tool_choice", responses),
        },
        terms=("tool_choice",),
    )


CHOICE_AUTO = tool_choice("auto", "auto", "AUTO")
CHOICE_NONE = tool_choice("none", "none", "NONE")
CHOICE_REQUIRED = tool_choice("required", "any", "ANY")
CHOICE_NAMED = tool_choice(
    {"type": "function", "function": {"name": TOOL}}, "tool", "ANY", named=True
)
NO_PARALLEL_CALLS = Concept(
    checks={
        "openai_chat": at("parallel_tool_calls", False),
        "anthropic": at("tool_choice.disable_parallel_tool_use", True),
        "openai_responses": at("parallel_tool_calls", False),
    },
    terms=("parallel",),
)
JSON_OBJECT = Concept(
    checks={
        "openai_chat": at("response_format.type", "json_object"),
        "gemini": at("generationConfig.responseMimeType", "application/json"),
        "openai_responses": at("text.format.type", "json_object"),
    },
    terms=("json_object", "response_format"),
)
JSON_SCHEMA = Concept(
    checks={
        "openai_chat": at("response_format.json_schema.schema"),
        "anthropic": at("output_config.format.schema"),
        "gemini": either(
            at("generationConfig.responseSchema"), at("generationConfig.responseJsonSchema")
        ),
        "openai_responses": at("text.format.schema"),
    },
    terms=("json_schema", "response_format"),
)


def sampling(name: str, value: object, *, gemini: str, formats: tuple[str, ...]) -> Concept:
    """A top-level sampling field ``name`` in ``formats``; Gemini's in generationConfig."""
    checks: dict[str, Check] = {fmt: at(name, value) for fmt in formats}
    checks["gemini"] = at(f"generationConfig.{gemini}", value)
    return Concept(checks=checks, terms=(name, gemini))


TEMPERATURE = sampling(
    "temperature",
    0.37,
    gemini="temperature",
    formats=("openai_chat", "anthropic", "openai_responses"),
)
TOP_P = sampling(
    "top_p", 0.73, gemini="topP", formats=("openai_chat", "anthropic", "openai_responses")
)
# The OpenAI format has no top_k, but compatible servers (vLLM, ...) take one.
TOP_K = sampling("top_k", 7, gemini="topK", formats=("openai_chat", "anthropic"))
FREQUENCY_PENALTY = sampling(
    "frequency_penalty", 0.25, gemini="frequencyPenalty", formats=("openai_chat",)
)
PRESENCE_PENALTY = sampling(
    "presence_penalty", 0.35, gemini="presencePenalty", formats=("openai_chat",)
)
SEED = sampling("seed", 4242, gemini="seed", formats=("openai_chat",))
STOP_SEQUENCES = Concept(
    checks={
        "openai_chat": at("stop", [STOP]),
        "anthropic": at("stop_sequences", [STOP]),
        "gemini": at("generationConfig.stopSequences", [STOP]),
    },
    terms=("stop",),
)
MAX_TOKENS_VALUE = 777
MAX_TOKENS = Concept(
    checks={
        # kind openai sends max_completion_tokens; openai_compatible and azure max_tokens
        "openai_chat": either(
            at("max_completion_tokens", MAX_TOKENS_VALUE), at("max_tokens", MAX_TOKENS_VALUE)
        ),
        "anthropic": at("max_tokens", MAX_TOKENS_VALUE),
        "gemini": at("generationConfig.maxOutputTokens", MAX_TOKENS_VALUE),
        "openai_responses": at("max_output_tokens", MAX_TOKENS_VALUE),
    },
    terms=("max_tokens", "max_output_tokens"),
)


def _gemini_thinks(config: Any) -> bool:
    return isinstance(config, dict) and (
        config.get("thinkingBudget", 0) != 0 or "thinkingLevel" in config
    )


# Reasoning asked for, in the upstream's own terms: an effort, a thinking budget, adaptive
# or dynamic thinking (each encoder maps one to another; the row says what was sent).
REASONING = Concept(
    checks={
        "openai_chat": at("reasoning_effort"),
        "anthropic": either(where("thinking", type="enabled"), where("thinking", type="adaptive")),
        "gemini": some("generationConfig.thinkingConfig", _gemini_thinks),
        "openai_responses": at("reasoning.effort"),
    },
    terms=("reasoning", "thinking", "effort"),
)
REASONING_OFF = Concept(
    checks={
        "openai_chat": at("reasoning_effort", "none"),
        "anthropic": where("thinking", type="disabled"),
        "gemini": at("generationConfig.thinkingConfig.thinkingBudget", 0),
        "openai_responses": at("reasoning.effort", "none"),
    },
    terms=("reasoning", "thinking"),
)
REASONING_SUMMARY = Concept(
    checks={
        "gemini": at("generationConfig.thinkingConfig.includeThoughts", True),
        "openai_responses": at("reasoning.summary"),
    },
    terms=("summary",),
)
USER = Concept(
    checks={
        "openai_chat": at("user", USER_ID),
        "anthropic": at("metadata.user_id", USER_ID),
        "openai_responses": either(at("user", USER_ID), at("safety_identifier", USER_ID)),
    },
    terms=("user",),
)
# Anthropic, Gemini and Responses streams always report usage: a stream is all they need.
STREAM_USAGE = Concept(
    checks={
        "openai_chat": at("stream_options.include_usage", True),
        "anthropic": at("stream", True),
        "gemini": url_has(":streamGenerateContent"),
        "openai_responses": at("stream", True),
    },
    terms=("include_usage", "stream"),
)
STREAM = Concept(
    checks={
        "openai_chat": at("stream", True),
        "anthropic": at("stream", True),
        "gemini": url_has(":streamGenerateContent"),
        "openai_responses": at("stream", True),
    },
    terms=("stream",),
)


def passthrough(fmt: str, path: str, value: object = None) -> Concept:
    """A field only ``fmt`` defines, which the IR keeps verbatim for upstreams of ``fmt``
    (``extensions[fmt]``); ``path``: where it sits in that format's body, with ``value``
    when the encoder sends that field anyway."""
    check = at(path) if value is None else at(path, value)
    return Concept(checks={fmt: check}, terms=(path.split(".", maxsplit=1)[0],))


def native_tool(fmt: str, kind: str) -> Concept:
    """A tool that runs on ``fmt``'s provider's side (web search, code execution, ...)."""
    checks: dict[str, Check] = {
        "anthropic": where("tools[*]", type=kind),
        "gemini": at(f"tools[*].{kind}"),
        "openai_responses": where("tools[*]", type=kind),
    }
    # Another format's note names the tool's type, or "a block (<format>)" without one.
    return Concept(checks={fmt: checks[fmt]}, terms=(kind, f"a block ({fmt})"))


def beta(name: str) -> Concept:
    return Concept(checks={"anthropic": header("anthropic-beta", name)}, terms=("anthropic-beta",))


# An effort level of "high" itself, beside adaptive thinking (Anthropic's output_config).
EFFORT_HIGH = Concept(
    checks={
        "openai_chat": at("reasoning_effort", "high"),
        "anthropic": at("output_config.effort", "high"),
        "gemini": at("generationConfig.thinkingConfig.thinkingLevel", "HIGH"),
        "openai_responses": at("reasoning.effort", "high"),
    },
    terms=("effort", "output_config"),
)
# Gemini's includeThoughts: thought summaries in the answer.
INCLUDE_THOUGHTS = Concept(
    checks={
        "gemini": at("generationConfig.thinkingConfig.includeThoughts", True),
        "openai_responses": at("reasoning.summary"),
    },
    terms=("includeThoughts", "thinkingConfig", "generationConfig"),
)
SCHEMA_DESCRIPTION = Concept(
    checks={
        "openai_chat": at("response_format.json_schema.description", "answer-7f3"),
        "openai_responses": at("text.format.description", "answer-7f3"),
    },
    terms=("description",),
)
# Gemini's VALIDATED calling mode: calls or text, calls checked against their schemas.
CHOICE_VALIDATED = Concept(
    checks={"gemini": at("toolConfig.functionCallingConfig.mode", "VALIDATED")},
    terms=("VALIDATED", "toolConfig"),
)
# A Responses tool_choice that picks a built-in tool ({"type": "web_search"}).
CHOICE_BUILTIN = Concept(
    checks={"openai_responses": where("tool_choice", type="web_search")},
    terms=("tool_choice",),
)


def unmodelled(*terms: str) -> Concept:
    """A field no upstream format is sent: gw refuses it (``n`` > 1, log probabilities)."""
    return Concept(checks={}, terms=terms)

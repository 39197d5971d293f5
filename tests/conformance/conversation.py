"""The conversation's concepts: messages, content parts, tool calls and results, thinking,
and other formats' blocks, each with where every upstream format carries it."""

from __future__ import annotations

from typing import Any

from conformance.checks import (
    Check,
    Concept,
    at,
    either,
    holds,
    mentions,
    some,
    where,
)
from conformance.markers import (
    FILE_ID,
    FILENAME,
    IMAGE_DATA,
    IMAGE_URL,
    MESSAGE_NAME,
    PDF_DATA,
    PDF_URL,
    REDACTED,
    RESULT_TEXT,
    SIGNATURE,
    SYSTEM_TEXT,
    THOUGHT_TEXT,
    TOOL,
)


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

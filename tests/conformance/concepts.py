"""What a client field means once in the IR, and where each upstream format carries it.

The request's settings: tools and tool choice, response formats, sampling, limits,
reasoning, streaming, and each format's own fields. Client fields of every format that mean
the same thing share a concept (``checks.Concept``), so ``temperature``,
``generationConfig.temperature`` and a Responses ``temperature`` are judged by the same
checks. The conversation's concepts are in ``conversation``.
"""

from __future__ import annotations

from typing import Any

from conformance.checks import (
    Check,
    Concept,
    at,
    either,
    has_key,
    header,
    some,
    url_has,
    where,
)
from conformance.markers import (
    STOP,
    TOOL,
    USER_ID,
)


def function_tool(name: str) -> Concept:
    """A function tool offered under ``name``."""
    return Concept(
        checks={
            "openai_chat": at("tools[*].function.name", name),
            "anthropic": at("tools[*].name", name),
            "gemini": at("tools[*].functionDeclarations[*].name", name),
            "openai_responses": where("tools[*]", type="function", name=name),
        },
        terms=("tools",),
    )


FUNCTION_TOOL = function_tool(TOOL)
# A Responses namespace tool (Codex's sub-agent functions): its functions under joined
# names everywhere; a Responses upstream may get the namespace itself instead.
_JOINED = "multi_agent_v1__spawn_agent"
NAMESPACED = Concept(
    checks={
        **function_tool(_JOINED).checks,
        "openai_responses": either(
            where("tools[*]", type="function", name=_JOINED),
            where("tools[*]", type="namespace", name="multi_agent_v1"),
        ),
    },
    terms=("namespace", "tools"),
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
DEFER_LOADING = Concept(
    checks={"anthropic": at("tools[*].defer_loading", True)},
    terms=("defer_loading",),
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

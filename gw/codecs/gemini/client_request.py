"""Decode the body google-genai (and Gemini CLI) sends to ``POST /v1beta/models/{model}:
generateContent`` / ``:streamGenerateContent`` (and ``:countTokens``) into the IR.

The model and whether to stream come from the path, not the body. Field names are read in
camelCase or snake_case, integers as whole floats too, as Google reads them
(``proto_json``: google-genai sends ``thinking_budget`` and ``"topK": 3.0``). ``contents`` and
``systemInstruction`` are read by ``client_contents``, ``tools`` and ``toolConfig`` by
``client_tools``. ``generationConfig``:

- ``temperature`` (0..2), ``topP`` (0..1), ``topK``, ``seed``, ``presencePenalty`` and
  ``frequencyPenalty`` -> ``Sampling``; ``maxOutputTokens`` -> ``max_tokens``;
  ``stopSequences`` -> ``stop``; ``candidateCount`` above 1 is refused (the IR holds one
  answer).
- ``responseMimeType: application/json`` -> a JSON response format, with
  ``responseSchema`` (a Gemini ``Schema``, converted) or ``responseJsonSchema`` (kept) as
  its schema; ``text/plain`` is the default; other types (``text/x.enum``) are refused.
- ``thinkingConfig``: ``thinkingBudget`` -> ``Reasoning.budget_tokens`` (-1, Gemini's
  dynamic budget, -> ``adaptive``), ``thinkingLevel`` -> ``effort``. ``includeThoughts``
  has no IR field: when the client sets it, its whole ``thinkingConfig`` also travels in
  ``extensions["gemini"]``, so a Gemini upstream gets it exactly as sent.

Every other key, top-level (``safetySettings``, ``cachedContent``, ``serviceTier``, ...)
or in ``generationConfig`` (``responseModalities``, ``speechConfig``, ...), goes to
``extensions["gemini"]`` unchanged: the Gemini upstream codec merges it, other codecs
leave it out and say so in the trace. Errors name the field in ``param`` and never quote
the client's text (gw/codecs/fields.py).
"""

from __future__ import annotations

from typing import Any

import msgspec

from gw.codecs.fields import (
    JSONObject,
    as_list,
    as_number,
    as_object,
    as_str,
    decode_object,
    invalid,
)
from gw.codecs.gemini.client_contents import decode_contents, decode_system
from gw.codecs.gemini.client_schema import json_schema
from gw.codecs.gemini.client_tools import decode_tool_config, decode_tools
from gw.codecs.gemini.proto_json import integer, message
from gw.errors import InvalidRequestError, NativeFeatureUnsupportedError
from gw.ir import ChatRequest, Effort, Reasoning, ResponseFormat, Sampling

_ENCODER = msgspec.json.Encoder()

# Keys read into IR fields; everything else lands in extensions["gemini"]. ``model`` is
# the path's, so a body's own is ignored.
_CONSUMED = frozenset(
    {"contents", "systemInstruction", "tools", "toolConfig", "generationConfig", "model"}
)
_CONFIG_CONSUMED = frozenset(
    {
        "temperature", "topP", "topK", "maxOutputTokens", "stopSequences", "candidateCount",
        "responseMimeType", "responseSchema", "responseJsonSchema", "thinkingConfig", "seed",
        "presencePenalty", "frequencyPenalty",
    }
)  # fmt: skip
_LEVELS: dict[str, Effort | None] = {
    "THINKING_LEVEL_UNSPECIFIED": None,
    "MINIMAL": "minimal",
    "LOW": "low",
    "MEDIUM": "medium",
    "HIGH": "high",
    "XHIGH": "xhigh",
}
DYNAMIC_BUDGET = -1  # Gemini's thinkingBudget for "the model decides"


def decode_generate_request(body: bytes, *, model: str, stream: bool) -> ChatRequest:
    """Parse a ``GenerateContentRequest`` for ``model`` (the path's, ``models/`` removed).

    Raises ``InvalidRequestError`` (or ``NativeFeatureUnsupportedError``) with ``param``
    naming the field.
    """
    request = _decode(_object(body), model=model)
    return msgspec.structs.replace(request, stream=stream) if stream else request


def decode_count_tokens_request(body: bytes, *, model: str) -> ChatRequest:
    """Parse a ``countTokens`` body: ``{"contents"}`` or ``{"generateContentRequest"}``."""
    obj = _object(body)
    inner = obj.get("generateContentRequest")
    if inner is not None:
        return _decode(message(inner, "generateContentRequest"), model=model)
    return _decode(obj, model=model)


def encode_count_tokens_response(total_tokens: int) -> bytes:
    """``{"totalTokens": N}``, the body of a ``countTokens`` answer."""
    return _ENCODER.encode({"totalTokens": total_tokens})


def decode_json_object(body: bytes) -> JSONObject:
    """The request body as a JSON object, or ``InvalidRequestError``."""
    return _object(body)


def _object(body: bytes) -> JSONObject:
    return message(decode_object(body), "body")


def _decode(obj: JSONObject, *, model: str) -> ChatRequest:
    system = decode_system(obj.get("systemInstruction"))
    messages = decode_contents(obj.get("contents"))
    tools, native_tools = decode_tools(obj.get("tools"))
    config = message(obj.get("generationConfig") or {}, "generationConfig")
    extensions = {
        key: value for key, value in obj.items() if key not in _CONSUMED and value is not None
    }
    config_extensions = {
        key: value
        for key, value in config.items()
        if key not in _CONFIG_CONSUMED and value is not None
    }
    reasoning, thinking_config = _reasoning(config.get("thinkingConfig"))
    if thinking_config is not None:
        config_extensions["thinkingConfig"] = thinking_config
    if config_extensions:
        extensions["generationConfig"] = config_extensions
    _check_candidates(config.get("candidateCount"))
    return ChatRequest(
        model=model,
        messages=messages if system is None else (system, *messages),
        tools=tools,
        tool_choice=decode_tool_config(obj.get("toolConfig"), tools),
        response_format=_response_format(config),
        sampling=_sampling(config),
        stop=_stop(config.get("stopSequences")),
        max_tokens=_max_tokens(config.get("maxOutputTokens")),
        reasoning=reasoning,
        include_usage=True,
        extensions={"gemini": extensions} if extensions else {},
        native_tools=native_tools,
    )


def _sampling(config: JSONObject) -> Sampling:
    def number(key: str, low: float, high: float) -> float | None:
        value = config.get(key)
        return None if value is None else as_number(value, f"generationConfig.{key}", low, high)

    def whole(key: str) -> int | None:
        value = config.get(key)
        return None if value is None else integer(value, f"generationConfig.{key}")

    top_k = whole("topK")
    if top_k is not None and top_k < 1:
        raise invalid("generationConfig.topK", "an integer >= 1")
    return Sampling(
        temperature=number("temperature", 0, 2),
        top_p=number("topP", 0, 1),
        top_k=top_k,
        presence_penalty=number("presencePenalty", -2, 2),
        frequency_penalty=number("frequencyPenalty", -2, 2),
        seed=whole("seed"),
    )


def _max_tokens(value: object) -> int | None:
    if value is None:
        return None
    tokens = integer(value, "generationConfig.maxOutputTokens")
    if tokens < 1:
        raise invalid("generationConfig.maxOutputTokens", "an integer >= 1")
    return tokens


def _stop(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    param = "generationConfig.stopSequences"
    return tuple(as_str(item, f"{param}[{i}]") for i, item in enumerate(as_list(value, param)))


def _check_candidates(value: object) -> None:
    if value is None:
        return
    count = integer(value, "generationConfig.candidateCount")
    if count < 1:
        raise invalid("generationConfig.candidateCount", "an integer >= 1")
    if count > 1:
        raise NativeFeatureUnsupportedError(
            "`generationConfig.candidateCount` above 1 is not supported by gw; ask for one "
            "candidate per request",
            param="generationConfig.candidateCount",
        )


def _response_format(config: JSONObject) -> ResponseFormat | None:
    mime = config.get("responseMimeType")
    schema = config.get("responseSchema")
    raw_schema = config.get("responseJsonSchema")
    param = "generationConfig.responseMimeType"
    kind = None if mime is None else as_str(mime, param)
    if kind not in (None, "text/plain", "application/json"):
        raise NativeFeatureUnsupportedError(
            f"`{param}`: only text/plain and application/json are supported by gw", param=param
        )
    if kind != "application/json":
        if schema is not None or raw_schema is not None:
            raise InvalidRequestError(
                f"a response schema needs `{param}` application/json", param=param
            )
        return None
    if schema is not None and raw_schema is not None:
        raise InvalidRequestError(
            "`generationConfig` sets both `responseSchema` and `responseJsonSchema`; send one",
            param="generationConfig.responseJsonSchema",
        )
    if schema is not None:
        converted = json_schema(schema, "generationConfig.responseSchema")
        return ResponseFormat(type="json_schema", name="response", json_schema=converted)
    if raw_schema is not None:
        kept = as_object(raw_schema, "generationConfig.responseJsonSchema")
        return ResponseFormat(type="json_schema", name="response", json_schema=kept)
    return ResponseFormat(type="json_object")


def _reasoning(value: object) -> tuple[Reasoning | None, JSONObject | None]:
    """``thinkingConfig`` as the IR's reasoning, and the config to keep for a Gemini
    upstream when it holds what the IR cannot (``includeThoughts``)."""
    if value is None:
        return None, None
    config = message(value, "generationConfig.thinkingConfig")
    param = "generationConfig.thinkingConfig"
    budget = config.get("thinkingBudget")
    level = config.get("thinkingLevel")
    if budget is not None and level is not None:
        raise InvalidRequestError(
            f"`{param}` sets both `thinkingBudget` and `thinkingLevel`; send one of them",
            param=f"{param}.thinkingLevel",
        )
    kept = config if "includeThoughts" in config else None
    if budget is not None:
        tokens = integer(budget, f"{param}.thinkingBudget")
        if tokens < DYNAMIC_BUDGET:
            raise invalid(f"{param}.thinkingBudget", "an integer >= -1")
        if tokens == DYNAMIC_BUDGET:
            return Reasoning(adaptive=True), kept
        return Reasoning(budget_tokens=tokens), kept
    if level is not None:
        effort = _effort(level, f"{param}.thinkingLevel")
        return (None if effort is None else Reasoning(effort=effort)), kept
    return None, kept


def _effort(value: Any, param: str) -> Effort | None:
    name = as_str(value, param).upper()
    if name not in _LEVELS:
        raise invalid(param, "one of MINIMAL, LOW, MEDIUM, HIGH, XHIGH")
    return _LEVELS[name]

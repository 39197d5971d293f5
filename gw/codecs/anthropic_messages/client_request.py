"""Decode the body the Anthropic SDK sends to ``POST /v1/messages`` (and to
``/v1/messages/count_tokens``) into the IR.

Strict like Anthropic on what the IR carries: types, ranges (``temperature`` and ``top_p``
0..1, ``max_tokens`` >= 1, ``thinking.budget_tokens`` >= 1024), required fields; ``"9"`` is
not an integer and ``true`` is not a number. Features the IR cannot carry are refused with
``NativeFeatureUnsupportedError`` naming them (see client_blocks and client_tools); blocks
and tools only Anthropic runs are kept verbatim as ``NativeBlock`` s instead.
``thinking`` and ``output_config``: see client_reasoning.

Every top-level key the IR has no field for (``service_tier``, ``container``,
``mcp_servers``, ``context_management``, a top-level ``cache_control``, ...) goes to
``extensions["anthropic"]`` unchanged, whether Anthropic defines it or not, as the OpenAI
codec does for ``extensions["openai"]``: an Anthropic upstream may take it, and other codecs
ignore it (so do the parts of ``thinking`` and ``output_config`` the IR has no field for).
``include_usage`` is always true: Anthropic streams always carry usage. The
``anthropic-beta`` header's feature names become ``betas``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import msgspec

from gw.codecs.anthropic_messages.client_messages import decode_messages, decode_system
from gw.codecs.anthropic_messages.client_reasoning import decode_reasoning_fields
from gw.codecs.anthropic_messages.client_tools import decode_tool_choice, decode_tools
from gw.codecs.fields import (
    JSONObject,
    as_int,
    as_list,
    as_number,
    as_object,
    as_str,
    decode_object,
    invalid,
    optional_bool,
    optional_str,
    required,
)
from gw.errors import InvalidRequestError
from gw.ir import ChatRequest, Sampling

_COUNT_ENCODER = msgspec.json.Encoder()

# Keys read into IR fields; everything else lands in extensions["anthropic"].
_CONSUMED = frozenset(
    {
        "model", "messages", "system", "max_tokens", "stop_sequences", "temperature", "top_p",
        "top_k", "metadata", "stream", "thinking", "tools", "tool_choice", "output_config",
    }
)  # fmt: skip
# A beta feature's name, as Anthropic writes them ("prompt-caching-2024-07-31").
_BETA_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
MAX_BETAS = 32


def decode_messages_request(body: bytes, beta_headers: Sequence[str] = ()) -> ChatRequest:
    """Parse a client Messages request; ``max_tokens`` is required, as Anthropic requires.
    ``beta_headers``: the request's ``anthropic-beta`` header lines.

    Raises ``InvalidRequestError`` (or ``NativeFeatureUnsupportedError``) with ``param``
    naming the field.
    """
    request = _decode(body, max_tokens_required=True)
    betas = decode_betas(beta_headers)
    return msgspec.structs.replace(request, betas=betas) if betas else request


def decode_betas(lines: Sequence[str]) -> tuple[str, ...]:
    """The feature names of ``anthropic-beta`` header lines (comma-separated), in order,
    once each."""
    names: dict[str, None] = {}
    for line in lines:
        for item in line.split(","):
            name = item.strip()
            if not name:
                continue
            if not _BETA_NAME.fullmatch(name):
                raise InvalidRequestError(
                    "the `anthropic-beta` header must be a comma-separated list of beta "
                    "feature names (letters, digits, '.', '_' and '-')",
                    param="anthropic-beta",
                )
            names[name] = None
    if len(names) > MAX_BETAS:
        raise InvalidRequestError(
            f"the `anthropic-beta` header names more than {MAX_BETAS} beta features",
            param="anthropic-beta",
        )
    return tuple(names)


def decode_count_tokens_request(body: bytes) -> ChatRequest:
    """Parse a ``count_tokens`` request: the same mapping, ``max_tokens`` optional."""
    return _decode(body, max_tokens_required=False)


def encode_count_tokens_response(input_tokens: int) -> bytes:
    """``{"input_tokens": N}``, the body of a ``count_tokens`` answer."""
    return _COUNT_ENCODER.encode({"input_tokens": input_tokens})


def _decode(body: bytes, *, max_tokens_required: bool) -> ChatRequest:
    obj = decode_object(body)
    system = decode_system(obj.get("system"))
    messages = decode_messages(required(obj, "messages", "messages"))
    tools, native_tools = decode_tools(obj.get("tools"))
    tool_choice, parallel = decode_tool_choice(obj.get("tool_choice"), tools, native_tools)
    reasoning = decode_reasoning_fields(obj)
    extensions = {
        key: value for key, value in obj.items() if key not in _CONSUMED and value is not None
    }
    extensions.update(reasoning.kept)
    return ChatRequest(
        model=_model(obj),
        messages=messages if system is None else (system, *messages),
        tools=tools,
        tool_choice=tool_choice,
        parallel_tool_calls=parallel,
        response_format=reasoning.response_format,
        sampling=_sampling(obj),
        stop=_stop(obj.get("stop_sequences")),
        max_tokens=_max_tokens(obj, required_=max_tokens_required),
        reasoning=reasoning.reasoning,
        stream=bool(optional_bool(obj, "stream", "stream")),
        include_usage=True,
        user=_user(obj.get("metadata")),
        extensions={"anthropic": extensions} if extensions else {},
        native_tools=native_tools,
    )


def _model(obj: JSONObject) -> str:
    model = as_str(required(obj, "model", "model"), "model")
    if not model:
        raise invalid("model", "a non-empty string")
    return model


def _max_tokens(obj: JSONObject, *, required_: bool) -> int | None:
    value = required(obj, "max_tokens", "max_tokens") if required_ else obj.get("max_tokens")
    if value is None:
        return None
    result = as_int(value, "max_tokens")
    if result < 1:
        raise invalid("max_tokens", "an integer >= 1")
    return result


def _sampling(obj: JSONObject) -> Sampling:
    temperature = obj.get("temperature")
    top_p = obj.get("top_p")
    top_k = obj.get("top_k")
    if top_k is not None and as_int(top_k, "top_k") < 0:
        raise invalid("top_k", "an integer >= 0")
    return Sampling(
        temperature=None if temperature is None else as_number(temperature, "temperature", 0, 1),
        top_p=None if top_p is None else as_number(top_p, "top_p", 0, 1),
        top_k=top_k,
    )


def _stop(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    items = as_list(value, "stop_sequences")
    return tuple(as_str(item, f"stop_sequences[{i}]") for i, item in enumerate(items))


def _user(value: object) -> str | None:
    if value is None:
        return None
    metadata = as_object(value, "metadata")
    for key in metadata:
        if key != "user_id":
            # Anthropic answers 400 to any other key; quoting it is safe (a key, not text).
            raise InvalidRequestError(
                f"`metadata.{key}` is not a known field", param=f"metadata.{key}"
            )
    return optional_str(metadata, "user_id", "metadata.user_id")

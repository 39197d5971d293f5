"""Prompt-cache breakpoints: a block's ``cache_control`` <-> the IR's ``CacheMark``.

Anthropic defines ``cache_control: {"type": "ephemeral", "ttl": "5m" | "1h"}`` on text,
image, tool_use and tool_result blocks, system text blocks and tool definitions. OpenAI's
format has none, but clients written for OpenAI-compatible gateways put the same object on
content parts to cache a prompt sent to Claude; both client codecs read it the same way.
Only Anthropic upstreams are sent the marks; the others note what they leave out.
"""

from __future__ import annotations

from typing import Any

from gw.codecs.fields import JSONObject, as_object, as_str, invalid
from gw.ir import (
    AssistantMessage,
    CacheMark,
    ChatRequest,
    SystemMessage,
    TextPart,
    ToolMessage,
    UserMessage,
)

_TTLS = ("5m", "1h")
_MARKS = {None: CacheMark(), "5m": CacheMark(ttl="5m"), "1h": CacheMark(ttl="1h")}


def decode_cache_mark(block: JSONObject, param: str) -> CacheMark | None:
    """The ``cache_control`` of a client's ``block``; absent or null is None."""
    value = block.get("cache_control")
    if value is None:
        return None
    param = f"{param}.cache_control"
    obj = as_object(value, param)
    if obj.get("type") != "ephemeral":
        raise invalid(f"{param}.type", "`ephemeral`")
    ttl = obj.get("ttl")
    if ttl is not None and as_str(ttl, f"{param}.ttl") not in _TTLS:
        raise invalid(f"{param}.ttl", "`5m` or `1h`")
    extra = sorted(set(obj) - {"type", "ttl"})
    if extra:
        raise invalid(f"{param}.{extra[0]}", "absent (cache_control takes only type and ttl)")
    return _MARKS[ttl]


def encode_cache_mark(mark: CacheMark) -> dict[str, Any]:
    """Anthropic's ``cache_control`` object for ``mark``."""
    if mark.ttl is None:
        return {"type": "ephemeral"}
    return {"type": "ephemeral", "ttl": mark.ttl}


def has_cache_marks(request: ChatRequest) -> bool:
    """Whether any block of ``request`` carries a cache mark."""
    if any(tool.cache is not None for tool in request.tools):
        return True
    for message in request.messages:
        match message:
            case SystemMessage(content=parts) | UserMessage(content=parts):
                if any(part.cache is not None for part in parts):
                    return True
            case ToolMessage(content=parts, cache=cache):
                if cache is not None or any(part.cache is not None for part in parts):
                    return True
            case AssistantMessage(content=parts, tool_calls=calls):
                if any(call.cache is not None for call in calls) or any(
                    isinstance(part, TextPart) and part.cache is not None for part in parts
                ):
                    return True
    return False


def cache_mark_note(request: ChatRequest, upstream_format: str) -> list[str]:
    """The lossy-translation note for an upstream format that has no cache marks."""
    if not has_cache_marks(request):
        return []
    return [
        f"cache_control marks: not sent (the {upstream_format} format has none; the "
        "provider caches long prompt prefixes by itself, if at all)"
    ]

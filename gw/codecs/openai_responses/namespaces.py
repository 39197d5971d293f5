"""Responses ``namespace`` tools (Codex groups its sub-agent functions so): each function
inside becomes an IR tool named ``<namespace>__<name>``, so every upstream format can
offer it, while the namespace itself stays a native tool for a Responses upstream.

A call the model makes to ``multi_agent_v1__spawn_agent`` goes back to a Responses client
as ``{"name": "spawn_agent", "namespace": "multi_agent_v1"}``, and a client's call item
with a ``namespace`` comes in under the joined name. Only the namespaces the request
declares are split, so a function whose own name holds ``__`` is left alone.
"""

from __future__ import annotations

from typing import Any

from gw.ir import ChatRequest

SEPARATOR = "__"


def flat_name(namespace: str, name: str) -> str:
    return f"{namespace}{SEPARATOR}{name}"


def declared(request: ChatRequest) -> frozenset[str]:
    """The namespaces ``request``'s tools declare."""
    return frozenset(
        str(tool.data.get("name"))
        for tool in request.native_tools
        if tool.format == "openai_responses" and tool.data.get("type") == "namespace"
    )


def split_name(name: str, namespaces: frozenset[str]) -> tuple[str | None, str]:
    """``(namespace, name)`` of a joined name in one of ``namespaces``; else ``(None, name)``."""
    if namespaces:
        head, separator, tail = name.partition(SEPARATOR)
        if separator and tail and head in namespaces:
            return head, tail
    return None, name


def namespaced_functions(tool: dict[str, Any]) -> list[dict[str, Any]]:
    """The function tools inside a ``namespace`` tool, each under its joined name."""
    namespace = tool.get("name")
    inner = tool.get("tools")
    if not isinstance(namespace, str) or not isinstance(inner, list):
        return []
    return [
        {**function, "name": flat_name(namespace, function["name"])}
        for function in inner
        if isinstance(function, dict)
        and function.get("type") == "function"
        and isinstance(function.get("name"), str)
    ]

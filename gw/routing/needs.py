"""What a request needs from a model: the capabilities a target must list to serve it."""

from __future__ import annotations

import re

from gw.config.schema import Capability
from gw.ir.content import NativeBlock, NativeFormat
from gw.ir.request import ChatRequest

# An embeddings request needs exactly this, whatever its inputs.
EMBEDDING_NEEDS: frozenset[Capability] = frozenset({"embeddings"})
NO_NEEDS: frozenset[Capability] = frozenset()


def required_capabilities(request: ChatRequest) -> frozenset[Capability]:
    """The catalog capabilities ``request`` relies on.

    - ``tools``: tool definitions are sent, or ``tool_choice`` asks for a call (any mode
      other than ``none``);
    - ``vision``: a user message holds an image;
    - ``json_schema`` / ``json_object``: the matching ``response_format`` type;
    - ``reasoning``: the client asked for reasoning (a thinking budget above 0, an effort,
      or adaptive thinking).
    """
    choice = request.tool_choice
    response_format = request.response_format
    reasoning = request.reasoning
    wants_tools = bool(request.tools) or (choice is not None and choice.mode != "none")
    if not (wants_tools or response_format or reasoning or request.has_images):
        return NO_NEEDS  # a plain chat: most requests stop here
    needs: set[Capability] = set()
    if wants_tools:
        needs.add("tools")
    if request.has_images:
        needs.add("vision")
    if response_format is not None and response_format.type == "json_schema":
        needs.add("json_schema")
    if response_format is not None and response_format.type == "json_object":
        needs.add("json_object")
    if reasoning is not None and (
        reasoning.effort is not None or reasoning.budget_tokens or reasoning.adaptive
    ):
        needs.add("reasoning")
    return frozenset(needs)


def required_native_format(request: ChatRequest) -> NativeFormat | None:
    """The wire format a target must speak to serve ``request``'s provider-side tools
    (``native_tools``), or None when any target may serve it.

    Such tools are required only when the request cannot do without them: it offers no
    function tool beside them (Claude Code's WebSearch turn: ``web_search`` alone). Offered
    beside function tools (Codex sends ``web_search`` with its shell tools on every turn)
    they are optional: a target of another format is sent the function tools, and its
    attempt notes the tools left out (gw/codecs/foreign_fields.py). A target of the tools'
    own format is still preferred by nothing here: the route's order decides.
    """
    native = request.native_tools
    if not native or request.tools:
        return None
    return native[0].format


def native_tool_names(tools: tuple[NativeBlock, ...]) -> tuple[str, ...]:
    """The tools' types, each once, in order; a type that is not a plain name (client
    text, which must not reach traces) as ``a tool of format <format>``."""
    names: dict[str, None] = {}
    for tool in tools:
        kind = tool.data.get("type")
        plain = isinstance(kind, str) and _TYPE_NAME.fullmatch(kind)
        names[kind if plain and isinstance(kind, str) else f"a tool of format {tool.format}"] = None
    return tuple(names)


# A type name safe to quote (as gw.codecs.fields.is_type_name: routing does not import codecs).
_TYPE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")

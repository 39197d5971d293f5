"""What an upstream format leaves out of another client format's own fields.

A client's top-level keys the IR has no field for travel in ``extensions[<its format>]``
and are sent only to upstreams of that format, as an Anthropic client's ``anthropic-beta``
features (``betas``) go only to Anthropic. Another format leaves them out; this says so,
as a lossy-translation note on the attempt (``gw explain``), never silently.
"""

from __future__ import annotations

from gw.codecs.fields import is_type_name
from gw.ir import AssistantMessage, ChatRequest, NativeBlock


def foreign_field_notes(request: ChatRequest, upstream_format: str) -> list[str]:
    """One note per other format whose fields ``request`` carries, naming them."""
    notes = [
        f"{_names(fields)}: not sent ({fmt} fields; this upstream is {upstream_format})"
        for fmt, fields in sorted(request.extensions.items())
        if fmt != upstream_format and fields
    ]
    if request.betas and upstream_format != "anthropic":
        notes.append(
            f"anthropic-beta {', '.join(request.betas)}: not sent (Anthropic beta features; "
            f"this upstream is {upstream_format})"
        )
    notes.extend(native_block_notes(request, upstream_format))
    deferred = [tool.name for tool in request.tools if tool.defer_loading]
    if deferred and upstream_format != "anthropic":
        notes.append(
            f"{len(deferred)} tools with defer_loading: offered up front (tool search is "
            f"Anthropic's; this upstream is {upstream_format})"
        )
    foreign_tools = sorted(
        {_kind(tool) for tool in request.native_tools if tool.format != upstream_format}
    )
    if foreign_tools:
        notes.append(
            f"tools {', '.join(foreign_tools)}: not sent (they run on another provider's "
            f"side; this upstream is {upstream_format})"
        )
    return notes


def native_block_notes(request: ChatRequest, upstream_format: str) -> list[str]:
    """Blocks of another format an assistant turn carries (``NativeBlock``): left out."""
    notes: list[str] = []
    for position, message in enumerate(request.messages):
        if not isinstance(message, AssistantMessage):
            continue
        kinds = sorted(
            {
                _kind(part)
                for part in message.content
                if isinstance(part, NativeBlock) and part.format != upstream_format
            }
        )
        if kinds:
            notes.append(
                f"messages[{position}]: {', '.join(kinds)} not sent (another format's blocks; "
                f"this upstream is {upstream_format})"
            )
    return notes


def _names(fields: dict[str, object]) -> str:
    """The fields' names, sorted; a key that is no field name (the client's own text, which
    may be a prompt's) is counted, not quoted: notes reach traces."""
    named = sorted(key for key in fields if is_type_name(key))
    others = len(fields) - len(named)
    if others:
        named.append(f"{others} other key" + ("s" if others > 1 else ""))
    return ", ".join(named)


def _kind(block: NativeBlock) -> str:
    kind = block.data.get("type") or block.data.get("name")
    # Only a type name is quoted: notes reach traces, and any other text may be a prompt's.
    return kind if isinstance(kind, str) and is_type_name(kind) else f"a block ({block.format})"

"""What an upstream format leaves out of another client format's own fields.

A client's top-level keys the IR has no field for travel in ``extensions[<its format>]``
and are sent only to upstreams of that format, as an Anthropic client's ``anthropic-beta``
features (``betas``) go only to Anthropic. Another format leaves them out; this says so,
as a lossy-translation note on the attempt (``gw explain``), never silently.
"""

from __future__ import annotations

from gw.ir import ChatRequest


def foreign_field_notes(request: ChatRequest, upstream_format: str) -> list[str]:
    """One note per other format whose fields ``request`` carries, naming them."""
    notes = [
        f"{', '.join(sorted(fields))}: not sent ({fmt} fields; this upstream is {upstream_format})"
        for fmt, fields in sorted(request.extensions.items())
        if fmt != upstream_format and fields
    ]
    if request.betas and upstream_format != "anthropic":
        notes.append(
            f"anthropic-beta {', '.join(request.betas)}: not sent (Anthropic beta features; "
            f"this upstream is {upstream_format})"
        )
    return notes

"""The silent losses gw has today, each with its reason: the only ``dropped`` cells the
conformance test lets pass. A new silent loss fails it; so does an entry here whose cell
is no longer dropped (remove it: the loss is fixed). "BUG:" marks a loss gw should not
have (docs/reference/translation.md: what a format cannot carry fails loud or is traced, never dropped silently).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Loss:
    client: str  # client format
    field: str  # the row's field, as in the table
    upstreams: tuple[str, ...]  # upstream formats where it is dropped
    why: str


LOSSES: tuple[Loss, ...] = (
    Loss(
        "gemini",
        "`toolConfig` mode `VALIDATED`",
        ("openai_chat", "anthropic", "gemini", "openai_responses"),
        "BUG (minor): read as AUTO (gw/codecs/gemini/client_tools.py: the IR has no "
        "schema-validated mode), so even a Gemini upstream gets AUTO, with no note",
    ),
)

KNOWN_LOSSES: dict[tuple[str, str, str], str] = {
    (loss.client, loss.field, upstream): loss.why for loss in LOSSES for upstream in loss.upstreams
}

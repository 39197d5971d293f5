"""The silent losses gw has today, each with its reason: the only ``dropped`` cells the
conformance test lets pass. A new silent loss fails it; so does an entry here whose cell
is no longer dropped (remove it: the loss is fixed). "BUG:" marks a loss gw should not
have (README: what a format cannot carry fails loud or is traced, never dropped silently).
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
        "openai_chat",
        "`response_format.json_schema.description`",
        ("anthropic", "gemini"),
        "BUG (minor): the schema's description has no place in Anthropic's output_config.format "
        "or Gemini's responseSchema, and is left out without a note",
    ),
    Loss(
        "openai_responses",
        "`reasoning.summary`",
        ("openai_chat",),
        'BUG: a summary alone is sent as reasoning_effort "low", which the client never asked '
        "for (gw/codecs/openai_chat/upstream_request.py reasoning_effort: no effort, no budget "
        "-> budget 0 -> low), and the summary itself is left out without a note",
    ),
    Loss(
        "openai_responses",
        "`reasoning.summary`",
        ("anthropic",),
        "BUG: a summary alone sends no thinking and no note (Anthropic summarises thinking "
        "only when thinking is on)",
    ),
    Loss(
        "gemini",
        "`executableCode`, `codeExecutionResult`",
        ("gemini",),
        "BUG: a Gemini client's own code-execution parts in a model turn (NativeBlock "
        "format gemini) are not sent back to a Gemini upstream, with no note "
        "(gw/codecs/gemini/upstream_request.py _model_parts skips NativeBlocks)",
    ),
    Loss(
        "gemini",
        "`toolConfig` mode `VALIDATED`",
        ("openai_chat", "anthropic", "gemini", "openai_responses"),
        "BUG (minor): read as AUTO (gw/codecs/gemini/client_tools.py: the IR has no "
        "schema-validated mode), so even a Gemini upstream gets AUTO, with no note",
    ),
    Loss(
        "gemini",
        "`thinkingConfig.thinkingBudget: 0` (off)",
        ("openai_chat",),
        'BUG: thinking turned off is sent as reasoning_effort "low" (budget 0 falls in the '
        "lowest EFFORT_BY_BUDGET step), which asks for reasoning instead of none",
    ),
)

KNOWN_LOSSES: dict[tuple[str, str, str], str] = {
    (loss.client, loss.field, upstream): loss.why for loss in LOSSES for upstream in loss.upstreams
}

"""Anthropic ``thinking`` and ``output_config`` -> IR reasoning and response format.

``thinking``, every type Anthropic defines:

- ``enabled`` with ``budget_tokens`` (>= 1024) -> ``Reasoning(budget_tokens=...)``;
- ``adaptive`` (Claude decides when and how much to think; what Claude Code sends) ->
  ``Reasoning(adaptive=True)``;
- ``between_tools`` (a model's own mode: thinking between tool calls) -> adaptive as well
  for other providers, the type itself kept for Anthropic;
- ``disabled`` -> no reasoning, kept for Anthropic: some models think unless told not to.

``display`` (``summarized`` / ``omitted``) is Anthropic's alone and kept for it. What is
kept goes to ``extensions["anthropic"]["thinking"]``, which the Anthropic upstream codec
merges into the ``thinking`` it computes; other upstreams note it as not sent.

``output_config``: ``format`` (structured outputs, ``{"type": "json_schema", "schema"}``)
-> ``ResponseFormat(type="json_schema")``, which every upstream maps its own way (Anthropic
back to ``output_config.format``); ``effort`` (low, medium, high, xhigh, max) is kept
verbatim for Anthropic and, when thinking is on, is also the reasoning's effort, so an
OpenAI upstream gets it as ``reasoning_effort`` (``max`` as ``xhigh``, the IR's highest).
Other ``output_config`` keys are kept verbatim.
"""

from __future__ import annotations

from typing import Any

from gw.codecs.fields import (
    JSONObject,
    as_int,
    as_object,
    as_str,
    invalid,
    optional_str,
    required,
)
from gw.ir import Effort, Reasoning, ResponseFormat

# Anthropic's documented minimum for a manual thinking budget.
MIN_THINKING_BUDGET = 1024
THINKING_TYPES = ("enabled", "adaptive", "between_tools", "disabled")
DISPLAYS = ("summarized", "omitted")
# output_config.effort -> IR effort.
EFFORTS: dict[str, Effort] = {
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "xhigh",
    "max": "xhigh",
}


class ReasoningFields:
    """What ``thinking`` and ``output_config`` became: the IR's fields, and what is kept
    for an Anthropic upstream (``kept``: top-level keys of ``extensions["anthropic"]``)."""

    __slots__ = ("kept", "reasoning", "response_format")

    def __init__(self) -> None:
        self.reasoning: Reasoning | None = None
        self.response_format: ResponseFormat | None = None
        self.kept: JSONObject = {}


def decode_reasoning_fields(obj: JSONObject) -> ReasoningFields:
    """Read the body's ``thinking`` and ``output_config`` (either may be absent)."""
    fields = ReasoningFields()
    effort: Effort | None = None
    config = obj.get("output_config")
    if config is not None:
        effort = _output_config(as_object(config, "output_config"), fields)
    thinking = obj.get("thinking")
    if thinking is not None:
        _thinking(as_object(thinking, "thinking"), effort, fields)
    return fields


def _thinking(obj: JSONObject, effort: Effort | None, fields: ReasoningFields) -> None:
    kind = as_str(required(obj, "type", "thinking.type"), "thinking.type")
    if kind not in THINKING_TYPES:
        raise invalid("thinking.type", "one of `enabled`, `adaptive`, `between_tools`, `disabled`")
    kept: JSONObject = {}
    if kind in ("disabled", "between_tools"):
        kept["type"] = kind
    display = optional_str(obj, "display", "thinking.display")
    if display is not None:
        if display not in DISPLAYS:
            raise invalid("thinking.display", "`summarized` or `omitted`")
        if kind != "disabled":
            kept["display"] = display
    if kept:
        fields.kept["thinking"] = kept
    if kind == "disabled":
        return
    if kind != "enabled":
        fields.reasoning = Reasoning(adaptive=True, effort=effort)
        return
    budget = as_int(
        required(obj, "budget_tokens", "thinking.budget_tokens"), "thinking.budget_tokens"
    )
    if budget < MIN_THINKING_BUDGET:
        raise invalid("thinking.budget_tokens", f"an integer >= {MIN_THINKING_BUDGET}")
    fields.reasoning = Reasoning(budget_tokens=budget, effort=effort)


def _output_config(obj: JSONObject, fields: ReasoningFields) -> Effort | None:
    rest: dict[str, Any] = {}
    effort: Effort | None = None
    for key, value in obj.items():
        if value is None:
            continue
        if key == "format":
            fields.response_format = _format(as_object(value, "output_config.format"))
            continue
        if key == "effort":
            level = EFFORTS.get(as_str(value, "output_config.effort"))
            if level is None:
                raise invalid(
                    "output_config.effort", "one of `low`, `medium`, `high`, `xhigh`, `max`"
                )
            effort = level
        rest[key] = value
    if rest:
        fields.kept["output_config"] = rest
    return effort


def _format(obj: JSONObject) -> ResponseFormat:
    kind = as_str(required(obj, "type", "output_config.format.type"), "output_config.format.type")
    if kind != "json_schema":
        raise invalid("output_config.format.type", "`json_schema`")
    schema = as_object(
        required(obj, "schema", "output_config.format.schema"), "output_config.format.schema"
    )
    return ResponseFormat(type="json_schema", json_schema=schema)

"""A chat request in canonical form, whatever wire format it arrived in."""

from __future__ import annotations

from typing import Any, Literal

from gw.ir.base import IRStruct
from gw.ir.content import CacheMark, ImagePart, NativeBlock
from gw.ir.messages import Message, UserMessage


class ToolDefinition(IRStruct, frozen=True, kw_only=True):
    """A function the model may call; ``parameters`` is a JSON schema object."""

    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None
    cache: CacheMark | None = None
    # Anthropic's tool search: the model finds the tool when it needs it rather than
    # seeing it up front (Claude Code's MCP tools). Other formats offer it up front.
    defer_loading: bool = False


class ToolChoice(IRStruct, frozen=True, kw_only=True):
    """``mode`` auto/none/required, or ``tool`` with the ``name`` the model must call."""

    mode: Literal["auto", "none", "required", "tool"]
    name: str | None = None


class ResponseFormat(IRStruct, frozen=True, kw_only=True):
    type: Literal["text", "json_object", "json_schema"]
    name: str | None = None
    json_schema: dict[str, Any] | None = None
    strict: bool | None = None
    description: str | None = None


class Sampling(IRStruct, frozen=True, kw_only=True):
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    seed: int | None = None


Effort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]


class Reasoning(IRStruct, frozen=True, kw_only=True):
    """Reasoning the client asked for: a token budget (Anthropic ``thinking``), an effort
    level (OpenAI ``reasoning_effort``, Responses ``reasoning.effort``), or ``adaptive``
    (Anthropic: the model decides how much to think); each codec maps the one it has.
    ``summary``: the reasoning summary a Responses client asked for."""

    budget_tokens: int | None = None
    effort: Effort | None = None
    adaptive: bool = False
    summary: Literal["auto", "concise", "detailed"] | None = None


class ChatRequest(IRStruct, frozen=True, kw_only=True):
    """Everything an upstream needs; ``model`` is what the client asked for (route or target).

    ``extensions`` carries provider-specific fields that must round-trip, by wire-format
    name (for example ``{"openai": {"logprobs": true}}``); it is never a free passthrough.
    """

    model: str
    messages: tuple[Message, ...]
    tools: tuple[ToolDefinition, ...] = ()
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    response_format: ResponseFormat | None = None
    sampling: Sampling = Sampling()
    stop: tuple[str, ...] = ()
    max_tokens: int | None = None
    reasoning: Reasoning | None = None
    stream: bool = False
    include_usage: bool = False
    user: str | None = None
    extensions: dict[str, dict[str, Any]] = {}
    # Anthropic beta features the client turned on (its ``anthropic-beta`` header): sent to
    # Anthropic upstreams, noted as not sent to others.
    betas: tuple[str, ...] = ()
    # Tools that run on the provider's side and only its own format can ask for
    # (Anthropic ``web_search_20250305``, Responses ``web_search``): each tool's JSON as the
    # client sent it. Routing keeps only targets of that format.
    native_tools: tuple[NativeBlock, ...] = ()

    @property
    def has_images(self) -> bool:
        for message in self.messages:  # a loop: per request, cheaper than nested any()
            if isinstance(message, UserMessage):
                for part in message.content:
                    if isinstance(part, ImagePart):
                        return True
        return False

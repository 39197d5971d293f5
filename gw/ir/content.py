"""Content parts of a message: text, and images by URL or inline base64 data."""

from __future__ import annotations

from typing import Any, Literal

from gw.ir.base import IRStruct


class CacheMark(IRStruct, frozen=True, kw_only=True):
    """A prompt-cache breakpoint: the prompt up to and including the block that carries it
    may be cached (Anthropic's ``cache_control``). ``ttl`` None is the provider's default."""

    ttl: Literal["5m", "1h"] | None = None


NativeFormat = Literal["anthropic", "openai_responses", "gemini"]


class NativeBlock(IRStruct, tag="native", frozen=True, kw_only=True):
    """A block the IR does not model, kept verbatim for the wire format it came from: an
    Anthropic server tool call or its result (``server_tool_use``,
    ``web_search_tool_result``), a Responses item (``reasoning`` with encrypted content, a
    ``web_search_call``). Only an upstream of ``format`` is sent it; another leaves it out
    and says so in the attempt's notes. ``data`` is the block's JSON object as received.
    """

    format: NativeFormat
    data: dict[str, Any]


class TextPart(IRStruct, tag="text", frozen=True, kw_only=True):
    """Text. ``native``: the same text as its own format keeps it, with what the IR does
    not model (an Anthropic answer's text with web-search ``citations``): an upstream of
    that format gets it back verbatim, every other one the text."""

    text: str
    cache: CacheMark | None = None
    native: NativeBlock | None = None


class ImagePart(IRStruct, tag="image", frozen=True, kw_only=True):
    """An image given by ``url`` (http(s)) or by inline base64 ``data`` with its media type."""

    url: str | None = None
    data: str | None = None
    media_type: str | None = None
    detail: str | None = None
    cache: CacheMark | None = None


class ThinkingPart(IRStruct, tag="thinking", frozen=True, kw_only=True):
    """Reasoning an assistant showed before answering (Anthropic ``thinking`` blocks).

    ``signature`` must go back to the provider unchanged with the block on a later turn;
    ``redacted`` holds an encrypted block (``redacted_thinking``) instead of ``text``.
    """

    text: str = ""
    signature: str | None = None
    redacted: str | None = None


class FilePart(IRStruct, tag="file", frozen=True, kw_only=True):
    """A document the user attached (a PDF, a text file): inline base64 ``data`` with its
    ``media_type``, a ``url``, or a provider's ``file_id``; ``filename`` when given."""

    data: str | None = None
    media_type: str | None = None
    url: str | None = None
    file_id: str | None = None
    filename: str | None = None
    cache: CacheMark | None = None


ContentPart = TextPart | ImagePart | FilePart

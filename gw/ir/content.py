"""Content parts of a message: text, and images by URL or inline base64 data."""

from __future__ import annotations

from typing import Literal

from gw.ir.base import IRStruct


class CacheMark(IRStruct, frozen=True, kw_only=True):
    """A prompt-cache breakpoint: the prompt up to and including the block that carries it
    may be cached (Anthropic's ``cache_control``). ``ttl`` None is the provider's default."""

    ttl: Literal["5m", "1h"] | None = None


class TextPart(IRStruct, tag="text", frozen=True, kw_only=True):
    text: str
    cache: CacheMark | None = None


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


ContentPart = TextPart | ImagePart

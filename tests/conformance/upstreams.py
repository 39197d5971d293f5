"""The upstream formats (the table's columns), and what each one's adapter really sends.

A request goes through gw's own adapter for the provider kind (``AdapterDirectory``), as
the engine calls it, over a transport that keeps the request instead of sending it: so
the body, the headers and the lossy-translation notes (``UpstreamCall.notes``, what
``gw explain`` shows) are exactly what gw would send and record. No socket is opened.

A column whose encoder is not in gw yet is *pending*: it is shown, marked, and judged
as soon as the module appears and the adapter directory serves its kind, with no change
here.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

import msgspec

from gw.adapters.directory import AdapterDirectory
from gw.adapters.unsupported import UnsupportedUpstream
from gw.config.schema import ProviderConfig, ProviderKind, ProviderTls
from gw.ir import ChatRequest, NativeFormat
from gw.ports import AttemptTimeouts, UpstreamCall

_TIMEOUTS = AttemptTimeouts(connect=1.0, read=1.0)


@dataclass(frozen=True)
class Upstream:
    """A column: an upstream wire format, called as the provider ``kind`` named."""

    format: str  # the name checks and notes use: openai_chat, anthropic, gemini, ...
    title: str
    kind: ProviderKind
    native: NativeFormat | None  # the format of the native blocks and tools it takes
    encoder_module: str


UPSTREAMS: tuple[Upstream, ...] = (
    # openai_compatible and azure_openai send the same body; only the name of the token
    # limit differs (max_tokens), which the checks accept under either name.
    Upstream(
        "openai_chat", "OpenAI chat", "openai", None, "gw.codecs.openai_chat.upstream_request"
    ),
    Upstream(
        "anthropic",
        "Anthropic messages",
        "anthropic",
        "anthropic",
        "gw.codecs.anthropic_messages.upstream_request",
    ),
    Upstream("gemini", "Gemini", "gemini", "gemini", "gw.codecs.gemini.upstream_request"),
    Upstream(
        "openai_responses",
        "OpenAI Responses",
        "openai_responses",
        "openai_responses",
        "gw.codecs.openai_responses.upstream_request",
    ),
)


@dataclass(frozen=True)
class Sent:
    """What an adapter sent: the URL, the headers (lower-case names) and the JSON body."""

    url: str
    headers: Mapping[str, str]
    body: dict[str, Any]


@dataclass
class Encoded:
    """An adapter's answer to one request: what it sent and noted, or what it raised."""

    sent: Sent | None = None
    notes: list[str] = field(default_factory=list)
    error: Exception | None = None


class _Captured(Exception):  # noqa: N818 - a signal carrying the request, not an error
    def __init__(self, url: str, headers: Mapping[str, str], body: bytes) -> None:
        super().__init__(url)
        self.sent = Sent(
            url=url,
            headers={name.lower(): value for name, value in headers.items()},
            body=msgspec.json.decode(body),
        )


class _Refusal:
    """``post_streaming``'s context: entering it hands the request back."""

    def __init__(self, captured: _Captured) -> None:
        self._captured = captured

    async def __aenter__(self) -> NoReturn:
        raise self._captured

    async def __aexit__(self, *_: object) -> None:
        return None


class _KeepingTransport:
    """An ``HttpTransport`` that sends nothing: the request comes back as ``_Captured``."""

    async def post(
        self,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes,
        timeouts: AttemptTimeouts,
        provider: str,
        tls: ProviderTls | None = None,
    ) -> NoReturn:
        raise _Captured(url, headers, body)

    def post_streaming(
        self,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes,
        timeouts: AttemptTimeouts,
        provider: str,
        tls: ProviderTls | None = None,
    ) -> _Refusal:
        return _Refusal(_Captured(url, headers, body))

    async def close(self) -> None:
        return None


class Encoders:
    """Runs requests through gw's adapters, on one event loop."""

    def __init__(self) -> None:
        self._directory = AdapterDirectory(_KeepingTransport(), environ={})
        self._runner = asyncio.Runner()

    def close(self) -> None:
        self._runner.close()

    def pending(self, upstream: Upstream) -> str | None:
        """Why ``upstream`` cannot be judged yet, or None when it can."""
        if not _exists(upstream.encoder_module):
            return f"{upstream.encoder_module} is not in gw yet"
        if isinstance(self._directory.upstream_for(_provider(upstream)), UnsupportedUpstream):
            return f"gw's adapters do not serve kind {upstream.kind} yet"
        return None

    def encode(self, request: ChatRequest, upstream: Upstream) -> Encoded:
        return self._runner.run(self._encode(request, upstream))

    async def _encode(self, request: ChatRequest, upstream: Upstream) -> Encoded:
        provider = _provider(upstream)
        call = UpstreamCall(
            request_id="conformance",
            provider=provider,
            request=request,
            account=None,
            timeouts=_TIMEOUTS,
        )
        adapter = self._directory.upstream_for(provider)
        encoded = Encoded()
        try:
            if request.stream:
                async for _ in adapter.stream(call):
                    break
            else:
                await adapter.complete(call)
        except _Captured as captured:
            encoded.sent = captured.sent
        except Exception as error:  # noqa: BLE001 - the table shows what the adapter raised
            encoded.error = error
        encoded.notes = [*call.notes, *call.limit_notes]
        return encoded


def _exists(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its package is missing too
        return False


def _provider(upstream: Upstream) -> ProviderConfig:
    return ProviderConfig(name=upstream.format, kind=upstream.kind)

"""The OpenTelemetry attributes of a finished request and of its upstream attempts (pure).

Names follow the OpenTelemetry GenAI semantic conventions (``gen_ai.*``), the general
ones (``error.type``, ``http.response.status_code``, ``server.address``) and gw's own
(``gw.*``). Never content (invariant 9): no prompt, completion or error message, since an
upstream's message may quote the prompt; an error is told by its stable gw code. Nothing
here imports OpenTelemetry: values are plain ``str``, ``bool``, ``int`` and ``float``.

A client chooses some values: the ``model`` it sends (a route name, or any
``provider/<anything>`` for a direct call, which becomes ``gw.route`` too, the attempt's
model and the span names) and its ``X-Request-Id``. Those go through ``client_text``: at
most 256 characters, no control characters, so a client cannot bloat every span it
causes or put line breaks and escape sequences into a tracing backend's UI.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final
from urllib.parse import urlsplit

from gw.config import Snapshot
from gw.config.snapshot import OPENAI_BASE_URL
from gw.ir.usage import Usage
from gw.record import AttemptRecord, TraceRecord

AttributeValue = str | bool | int | float
Attributes = dict[str, AttributeValue]
ServerAddress = Callable[[str, str | None], tuple[str, int] | None]
"""(provider, account) -> the upstream's host and port, when known."""

MAX_CLIENT_CHARS: Final = 256  # a client's ``model`` is any string; a span name stays short

# gen_ai.operation.name by the trace's endpoint; another endpoint is its own name.
OPERATIONS: Final = {
    "chat.completions": "chat",
    "messages": "chat",
    "responses": "chat",
    "gemini.generateContent": "chat",
    "gemini.streamGenerateContent": "chat",
    "embeddings": "embeddings",
    "gemini.embedContent": "embeddings",
    "gemini.batchEmbedContents": "embeddings",
}
# gen_ai.provider.name's well-known values by provider kind; the other kinds (an
# OpenAI-compatible host, the mock) are named by their configured provider name.
PROVIDER_NAMES: Final = {
    "openai": "openai",
    "openai_responses": "openai",
    "anthropic": "anthropic",
    "gemini": "gcp.gemini",
    "azure_openai": "azure.ai.openai",
}
# The base URLs the adapters use when a provider sets none (gw/adapters/*.py; a test
# checks they agree).
DEFAULT_BASE_URLS: Final = {
    "openai": OPENAI_BASE_URL,
    "openai_responses": OPENAI_BASE_URL,
    "anthropic": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com",
}


def operation_name(endpoint: str) -> str:
    return OPERATIONS.get(endpoint, endpoint)


def span_name(operation: str, model: str) -> str:
    """``{gen_ai.operation.name} {gen_ai.request.model}``, as the conventions name spans."""
    return client_text(f"{operation} {model}") if model else operation


def client_text(value: str) -> str:
    """A client-derived value as it may appear in a span: every character that
    ``str.isprintable`` rejects deleted (C0, DEL and C1 controls, format characters such
    as bidi overrides, line and paragraph separators, unassigned code points, spaces
    other than U+0020), then cut to ``MAX_CLIENT_CHARS``."""
    if not value.isprintable():  # C-speed; the usual name is printable and kept as is
        value = "".join(char for char in value if char.isprintable())
    return value[:MAX_CLIENT_CHARS]


def provider_name(kind: str | None, provider: str) -> str:
    return PROVIDER_NAMES.get(kind or "", provider)


def request_attributes(trace: TraceRecord) -> Attributes:
    """The request span's: what the client asked, who answered, usage, cost, outcome."""
    decision = trace.decision
    last = trace.attempts[-1] if trace.attempts else None
    attributes: Attributes = {
        "gen_ai.operation.name": operation_name(trace.endpoint),
        "gen_ai.request.model": client_text(trace.requested_model),
        "gen_ai.request.stream": trace.stream,
        "http.response.status_code": trace.status,
        "gw.request_id": trace.request_id,
        "gw.endpoint": trace.endpoint,
        "gw.revision": trace.revision,
        "gw.attempts": len(trace.attempts),
    }
    _put(attributes, "gen_ai.provider.name", _provider_of(last))
    _put(attributes, "gen_ai.response.model", _client_text(trace.model if trace.answered else None))
    _put(attributes, "gen_ai.request.max_tokens", decision.max_output_tokens if decision else None)
    _put(attributes, "gen_ai.response.time_to_first_chunk", _first_chunk_s(trace, trace.ttft_ms))
    _put(attributes, "error.type", trace.error_code)
    _put(attributes, "gw.route", _client_text(trace.route))
    _put(attributes, "gw.policy", trace.policy)
    _put(attributes, "gw.provider", trace.provider)
    _put(attributes, "gw.tenant", trace.tenant)
    _put(attributes, "gw.key_id", trace.key_id)
    _put(attributes, "gw.client_request_id", _client_text(trace.client_request_id))
    _put(attributes, "gw.cost_usd", trace.cost_usd)
    _put(attributes, "gw.usage_source", trace.usage_source)
    _put(attributes, "gw.degraded", True if decision is not None and decision.degraded else None)
    _put(attributes, "gw.committed", True if trace.committed else None)
    attributes.update(usage_attributes(trace.usage))
    return attributes


def attempt_attributes(
    trace: TraceRecord, attempt: AttemptRecord, address: tuple[str, int] | None = None
) -> Attributes:
    """An attempt span's: one call to one upstream target and how it ended."""
    answered = attempt.outcome == "answered"
    attributes: Attributes = {
        "gen_ai.operation.name": operation_name(trace.endpoint),
        "gen_ai.provider.name": provider_name(attempt.provider_kind, attempt.provider),
        "gen_ai.request.model": client_text(attempt.model),  # a direct call's is the client's
        "gw.request_id": trace.request_id,
        "gw.provider": attempt.provider,
        "gw.attempt.number": attempt.number,
        "gw.attempt.outcome": attempt.outcome,
    }
    decision = trace.decision
    _put(attributes, "gen_ai.response.model", _client_text(attempt.model if answered else None))
    _put(attributes, "gen_ai.request.max_tokens", decision.max_output_tokens if decision else None)
    _put(attributes, "gen_ai.response.time_to_first_chunk", _first_chunk_s(trace, attempt.ttft_ms))
    _put(attributes, "error.type", attempt.error_code)
    _put(attributes, "http.response.status_code", attempt.upstream_status)
    if address is not None:
        attributes["server.address"], attributes["server.port"] = address
    _put(attributes, "gw.account", attempt.account)
    _put(attributes, "gw.attempt.hedge", True if attempt.hedge else None)
    _put(attributes, "gw.attempt.backoff_ms", attempt.backoff_ms or None)
    _put(attributes, "gw.error.blame", attempt.blame)
    _put(attributes, "gw.retry_after_s", attempt.retry_after_s)
    if answered:
        attributes.update(usage_attributes(trace.usage))
    return attributes


def usage_attributes(usage: Usage | None) -> Attributes:
    """Token counts; ``input_tokens`` includes cached ones, as the conventions count."""
    if usage is None:
        return {}
    attributes: Attributes = {
        "gen_ai.usage.input_tokens": usage.input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
    }
    _put(attributes, "gen_ai.usage.cache_read.input_tokens", usage.cached_input_tokens or None)
    _put(attributes, "gen_ai.usage.cache_creation.input_tokens", usage.cache_write_tokens or None)
    _put(attributes, "gen_ai.usage.reasoning.output_tokens", usage.reasoning_tokens or None)
    return attributes


def snapshot_addresses(current: Callable[[], Snapshot]) -> ServerAddress:
    """Upstream addresses from the current snapshot: the account's base URL (or the
    provider's, or its kind's default); None for a provider without one (the mock)."""

    def address(provider: str, account: str | None) -> tuple[str, int] | None:
        snapshot = current()
        config = snapshot.providers.get(provider)
        if config is None:
            return None
        base_url = config.base_url
        for candidate in snapshot.accounts.get(provider, ()):
            if candidate.name == account:
                base_url = candidate.provider.base_url
        return url_address(base_url or DEFAULT_BASE_URLS.get(config.kind))

    return address


def url_address(url: str | None) -> tuple[str, int] | None:
    if not url:
        return None
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:  # a malformed port: no address rather than a failed span
        return None
    return (parts.hostname, port) if parts.hostname else None


def _client_text(value: str | None) -> str | None:
    return None if value is None else client_text(value)


def _provider_of(attempt: AttemptRecord | None) -> str | None:
    return provider_name(attempt.provider_kind, attempt.provider) if attempt else None


def _first_chunk_s(trace: TraceRecord, ttft_ms: float | None) -> float | None:
    """Seconds to the first chunk, for a stream (the conventions' unit is the second)."""
    return ttft_ms / 1000 if trace.stream and ttft_ms is not None else None


def _put(attributes: Attributes, name: str, value: AttributeValue | None) -> None:
    if value is not None:
        attributes[name] = value

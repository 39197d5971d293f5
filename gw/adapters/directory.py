"""AdapterDirectory: the adapter for each provider, built once and kept across requests."""

from __future__ import annotations

from collections.abc import Mapping

from gw.adapters.anthropic import AnthropicUpstream
from gw.adapters.gemini import GeminiUpstream
from gw.adapters.http_transport import HttpTransport
from gw.adapters.mock import MockUpstream
from gw.adapters.openai import AzureOpenAIUpstream, OpenAIUpstream
from gw.adapters.secrets import SecretResolver
from gw.adapters.unsupported import UnsupportedUpstream
from gw.config.schema import MockOptions, ProviderConfig
from gw.ports import Upstream

OPENAI_KINDS = frozenset({"openai", "openai_compatible"})


class AdapterDirectory:
    """Implements ``UpstreamDirectory``; stateful adapters (the mock's seed) live per provider."""

    def __init__(
        self,
        transport: HttpTransport,
        environ: Mapping[str, str],
        vault: Mapping[str, str] | None = None,
    ) -> None:
        self._secrets = SecretResolver(environ, vault)
        self._openai = OpenAIUpstream(transport, self._secrets)
        self._azure = AzureOpenAIUpstream(transport, self._secrets)
        self._anthropic = AnthropicUpstream(transport, self._secrets)
        self._gemini = GeminiUpstream(transport, self._secrets)
        self._mocks: dict[tuple[str, MockOptions | None], MockUpstream] = {}

    def use_vault(self, vault: Mapping[str, str]) -> None:
        self._secrets.use_vault(vault)

    def upstream_for(self, provider: ProviderConfig) -> Upstream:
        if provider.kind in OPENAI_KINDS:
            return self._openai
        if provider.kind == "azure_openai":
            return self._azure
        if provider.kind == "anthropic":
            return self._anthropic
        if provider.kind == "gemini":
            return self._gemini
        if provider.kind == "mock":
            key = (provider.name, provider.mock)
            mock = self._mocks.get(key)
            if mock is None:
                mock = self._mocks[key] = MockUpstream(provider.mock)
            return mock
        return UnsupportedUpstream(provider.kind)

"""AdapterDirectory: the adapter for each provider, built once and kept across requests."""

from __future__ import annotations

from collections.abc import Mapping

from gw.adapters.anthropic import AnthropicUpstream
from gw.adapters.gemini import GeminiUpstream
from gw.adapters.mock import MockUpstream
from gw.adapters.openai import AzureOpenAIUpstream, OpenAIUpstream
from gw.adapters.openai_responses import OpenAIResponsesUpstream
from gw.adapters.secrets import SecretResolver
from gw.adapters.unsupported import UnsupportedUpstream
from gw.config.credentials import CredentialReport
from gw.config.schema import Config, MockOptions, ProviderConfig, ProviderKind
from gw.ports import Upstream
from gw.upstream_http.http_transport import HttpTransport


class AdapterDirectory:
    """Implements ``UpstreamDirectory``; stateful adapters (the mock's seed) live per provider."""

    def __init__(
        self,
        transport: HttpTransport,
        environ: Mapping[str, str],
        vault: Mapping[str, str] | None = None,
    ) -> None:
        self._secrets = SecretResolver(environ, vault)
        openai = OpenAIUpstream(transport, self._secrets)
        # The adapters of every kind but the mock: stateless, shared by all providers.
        self._by_kind: dict[ProviderKind, Upstream] = {
            "openai": openai,
            "openai_compatible": openai,
            "openai_responses": OpenAIResponsesUpstream(transport, self._secrets),
            "azure_openai": AzureOpenAIUpstream(transport, self._secrets),
            "anthropic": AnthropicUpstream(transport, self._secrets),
            "gemini": GeminiUpstream(transport, self._secrets),
        }
        self._mocks: dict[tuple[str, MockOptions | None], MockUpstream] = {}

    def use_vault(self, vault: Mapping[str, str]) -> None:
        self._secrets.use_vault(vault)

    def check_credentials(self, config: Config) -> CredentialReport:
        """Which providers of ``config`` lack usable credentials (``SecretResolver.check``)."""
        return self._secrets.check(config)

    def upstream_for(self, provider: ProviderConfig) -> Upstream:
        upstream = self._by_kind.get(provider.kind)
        if upstream is not None:
            return upstream
        if provider.kind == "mock":
            key = (provider.name, provider.mock)
            mock = self._mocks.get(key)
            if mock is None:
                mock = self._mocks[key] = MockUpstream(provider.mock)
            return mock
        return UnsupportedUpstream(provider.kind)

"""The TLS client context of every upstream connection: one function builds it, for gw's
own client and for httpx (directly, and through a proxy) alike.

- Trust: the system's store (``ssl.create_default_context``). OpenSSL reads
  ``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` from the environment in its place, so they apply
  to every path (httpx's own default would have been certifi's bundle).
- A provider's ``tls.ca_file``: that provider's upstream is trusted through the
  certificates in that PEM file only, instead of the system's store.
- A provider's ``tls.client_cert`` (and ``tls.client_key``, unless the key is in the
  certificate's file): presented to an upstream that asks for a client certificate.

The files are read when a config loads (``tls_file_problems``: a file that is missing,
unreadable or not what its field says is refused there, naming file, field and reason) and
when gw first connects with a provider's settings; a context is then kept for the life of
the process (loading a trust store costs tens of ms), so a certificate file replaced in
place is read again after a restart.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator

from gw.config.schema import Config, ProviderTls
from gw.errors import UpstreamError

ALPN = ["http/1.1"]  # gw speaks HTTP/1.1 to upstreams, whichever client


class TlsSettingError(Exception):
    """A provider's ``tls`` setting gw cannot use: ``field`` (``ca_file``, ...) says which."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class _EncryptedKeyError(Exception):
    """Raised by the password callback: gw never prompts for a key's passphrase."""


def build_tls_context(tls: ProviderTls | None = None) -> ssl.SSLContext:
    """A verifying client context: the system's trust store, or ``tls.ca_file``; with
    ``tls.client_cert`` loaded when set. Raises ``TlsSettingError`` naming the field."""
    if tls is None or tls.ca_file is None:
        context = ssl.create_default_context()
    else:
        _check_readable("ca_file", tls.ca_file)
        try:
            context = ssl.create_default_context(cafile=tls.ca_file)
        except ssl.SSLError as error:
            raise TlsSettingError(
                "ca_file", f"{tls.ca_file} holds no PEM certificate gw can use ({_why(error)})"
            ) from None
    if tls is not None and tls.client_cert is not None:
        _load_client_cert(context, tls.client_cert, tls.client_key)
    context.set_alpn_protocols(ALPN)
    return context


def _load_client_cert(context: ssl.SSLContext, cert: str, key: str | None) -> None:
    _check_readable("client_cert", cert)
    if key is not None:
        _check_readable("client_key", key)
    try:
        context.load_cert_chain(cert, key, password=_refuse_password)
    except _EncryptedKeyError:
        field = "client_key" if key is not None else "client_cert"
        raise TlsSettingError(
            field, f"the private key in {key or cert} is encrypted; give gw an unencrypted key"
        ) from None
    except ssl.SSLError as error:
        pair = f"{cert} and {key}" if key is not None else cert
        raise TlsSettingError(
            "client_cert",
            f"{pair}: not a PEM certificate and its private key ({_why(error)}); a key in "
            "its own file goes in client_key",
        ) from None


def _refuse_password() -> bytes:
    raise _EncryptedKeyError


def _check_readable(field: str, path: str) -> None:
    try:
        with open(path, "rb") as file:
            file.read(1)
    except OSError as error:
        raise TlsSettingError(field, f"cannot read {path}: {error.strerror or error}") from None


def _why(error: ssl.SSLError) -> str:
    return str(error.reason or error.strerror or error).lower().replace("_", " ")


def tls_file_problems(config: Config) -> Iterator[tuple[str, str]]:
    """(field path, reason) for every provider ``tls`` setting whose files gw cannot use;
    ``load_config`` reports them as it does any other problem (with the line)."""
    for index, provider in enumerate(config.providers):
        if provider.tls is not None:
            try:
                build_tls_context(provider.tls)
            except TlsSettingError as error:
                yield f"providers[{index}].tls.{error.field}", error.reason


class TlsContexts:
    """Contexts by provider settings, each built on first use and kept (``None``: the
    system's store, shared by every provider without ``tls``)."""

    def __init__(self) -> None:
        self._built: dict[ProviderTls | None, ssl.SSLContext] = {}

    def get(self, tls: ProviderTls | None, provider: str) -> ssl.SSLContext:
        context = self._built.get(tls)
        if context is None:
            try:
                context = build_tls_context(tls)
            except TlsSettingError as error:  # checked at load: a file changed since
                raise UpstreamError(
                    f"provider {provider}: its tls.{error.field} cannot be used: "
                    f"{error.reason}; fix the file, or the setting",
                    blame="gateway",
                ) from None
            if len(self._built) >= 256:  # settings come from config: a handful
                self._built.clear()
            self._built[tls] = context
        return context

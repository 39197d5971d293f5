"""One TLS context for every upstream path (gw/upstream_http/tls.py), against a real TLS
server on loopback whose certificate a CA made here signed: trusted through a provider's
``tls.ca_file`` and refused without it (naming TLS verification), a client certificate
presented when configured, SSL_CERT_FILE honoured, over gw's own client and httpx alike."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gw.config.schema import ProviderTls
from gw.errors import UpstreamError
from gw.upstream_http.h1_transport import BuiltinTransport
from gw.upstream_http.http_transport import HttpTransport
from gw.upstream_http.httpx_transport import HttpxTransport
from gw.upstream_http.tls import build_tls_context

from fakes.raw_upstream import OK_JSON, TIMEOUTS, Handler, RawUpstream, answering
from fakes.tls_certs import CertAuthority, make_ca

TRANSPORTS: dict[str, Callable[[], HttpTransport]] = {
    "builtin": BuiltinTransport,
    "httpx": HttpxTransport,
}


@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> CertAuthority:
    return make_ca(tmp_path_factory.mktemp("ca"))


@pytest.fixture(params=sorted(TRANSPORTS))
def make_transport(request: pytest.FixtureRequest) -> Callable[[], HttpTransport]:
    return TRANSPORTS[request.param]


async def post(transport: HttpTransport, url: str, tls: ProviderTls | None) -> Any:
    return await transport.post(
        url, headers={}, body=b"{}", timeouts=TIMEOUTS, provider="fake", tls=tls
    )


def serve(
    server_tls: ssl.SSLContext,
    handler_for: Callable[[list[RawUpstream]], Handler],
    body: Callable[[RawUpstream, HttpTransport], Any],
    make_transport: Callable[[], HttpTransport],
) -> Any:
    async def main() -> Any:
        box: list[RawUpstream] = []
        upstream = RawUpstream(handler_for(box), server_tls)
        box.append(upstream)
        transport = make_transport()
        async with upstream:
            try:
                return await body(upstream, transport)
            finally:
                await transport.close()

    return asyncio.run(main())


def test_an_upstream_is_trusted_through_its_ca_file_and_refused_without_it(
    authority: CertAuthority, make_transport: Callable[[], HttpTransport]
) -> None:
    trusted = ProviderTls(ca_file=str(authority.ca_file))

    async def body(upstream: RawUpstream, transport: HttpTransport) -> None:
        url = upstream.url(host="localhost")
        assert (await post(transport, url, trusted)).body == b'{"ok":true}'
        with pytest.raises(UpstreamError, match="TLS certificate not trusted") as refused:
            await post(transport, url, None)  # the system's store knows no such CA
        assert refused.value.code == "upstream_error"
        assert refused.value.message.startswith("provider fake: could not connect")
        assert (await post(transport, url, trusted)).body == b'{"ok":true}'

    replies = (OK_JSON, OK_JSON, OK_JSON)
    serve(authority.server_context(), lambda box: answering(box, *replies), body, make_transport)


def test_the_host_name_is_still_verified_with_a_ca_file(
    authority: CertAuthority, make_transport: Callable[[], HttpTransport]
) -> None:
    async def body(upstream: RawUpstream, transport: HttpTransport) -> None:
        other = upstream.url().replace("127.0.0.1", "127.0.0.2")  # no name in the certificate
        with pytest.raises(UpstreamError, match="TLS certificate not trusted"):
            await post(transport, other, ProviderTls(ca_file=str(authority.ca_file)))

    async def main() -> None:  # the server's certificate names localhost and 127.0.0.1
        box: list[RawUpstream] = []
        upstream = RawUpstream(answering(box, OK_JSON), authority.server_context())
        box.append(upstream)
        upstream.server = await asyncio.start_server(
            upstream._serve, "127.0.0.2", 0, ssl=upstream.tls
        )
        upstream.port = upstream.server.sockets[0].getsockname()[1]
        transport = make_transport()
        try:
            await body(upstream, transport)
        finally:
            await transport.close()
            upstream.server.close()

    asyncio.run(main())


def peer_recording(seen: list[str]) -> Callable[[list[RawUpstream]], Handler]:
    """Answers OK after noting the client certificate's common name ("" for none)."""

    def handler_for(box: list[RawUpstream]) -> Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while await box[0].read_request(reader):
                peer = writer.get_extra_info("peercert") or {}
                names = [value for rdn in peer.get("subject", ()) for key, value in rdn]
                seen.append(names[0] if names else "")
                writer.write(OK_JSON)
                await writer.drain()

        return handler

    return handler_for


def test_a_client_certificate_is_presented_when_configured(
    authority: CertAuthority, make_transport: Callable[[], HttpTransport]
) -> None:
    seen: list[str] = []
    ca_only = ProviderTls(ca_file=str(authority.ca_file))
    with_cert = ProviderTls(
        ca_file=str(authority.ca_file),
        client_cert=str(authority.client_cert),
        client_key=str(authority.client_key),
    )

    async def body(upstream: RawUpstream, transport: HttpTransport) -> None:
        url = upstream.url(host="localhost")
        assert (await post(transport, url, with_cert)).status == 200
        with pytest.raises(UpstreamError):  # the server requires one
            await post(transport, url, ca_only)
        # One provider's certificate never rides another's pooled connection.
        assert (await post(transport, url, with_cert)).status == 200

    server_tls = authority.server_context(require_client=True)
    serve(server_tls, peer_recording(seen), body, make_transport)
    assert seen == ["gw-client", "gw-client"]


def test_ssl_cert_file_replaces_the_systems_bundle(
    authority: CertAuthority, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OpenSSL reads SSL_CERT_FILE when the default context loads its store: every path
    builds its context through build_tls_context, so every path honours it."""
    monkeypatch.setenv("SSL_CERT_FILE", str(authority.ca_file))
    monkeypatch.setenv("SSL_CERT_DIR", str(authority.ca_file.parent))  # no system dir either
    context = build_tls_context()

    async def idle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()

    async def main() -> Any:
        upstream = RawUpstream(idle, authority.server_context())
        async with upstream:
            _, writer = await asyncio.open_connection(
                "127.0.0.1", upstream.port, ssl=context, server_hostname="localhost"
            )
            writer.close()
            return True

    assert asyncio.run(main())
    trusted = [ca["subject"] for ca in context.get_ca_certs()]
    assert trusted == [((("commonName", "gw test CA"),),)]


@pytest.mark.parametrize("kind", sorted(TRANSPORTS))
def test_a_ca_file_gone_since_load_is_an_upstream_error_naming_the_setting(
    tmp_path: Path, kind: str
) -> None:
    tls = ProviderTls(ca_file=str(tmp_path / "gone.pem"))

    async def main() -> None:
        transport = TRANSPORTS[kind]()
        try:
            await post(transport, "https://127.0.0.1:9/v1/x", tls)
        finally:
            await transport.close()

    with pytest.raises(UpstreamError, match=r"its tls\.ca_file cannot be used: cannot read") as e:
        asyncio.run(main())
    assert e.value.blame == "gateway"

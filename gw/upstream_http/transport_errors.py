"""httpx request failures -> gw errors, by table (never by message text)."""

from __future__ import annotations

import httpx

from gw.errors import Blame, GatewayError, OverloadedError, UpstreamError, UpstreamTimeoutError
from gw.upstream_http.connect_errors import connect_failure, os_error_under

# Most specific classes first: the first isinstance match wins.
TRANSPORT_ERRORS: tuple[tuple[type[httpx.RequestError], type[GatewayError], str], ...] = (
    (httpx.ConnectTimeout, UpstreamTimeoutError, "connecting to the upstream timed out"),
    (httpx.ReadTimeout, UpstreamTimeoutError, "the upstream stopped sending (read timeout)"),
    (httpx.WriteTimeout, UpstreamTimeoutError, "sending the request upstream timed out"),
    # gw's own saturation, never the upstream's fault (blamed on the gateway below)
    (httpx.PoolTimeout, OverloadedError, "gw's upstream connection pool is full"),
    (httpx.ConnectError, UpstreamError, "could not connect to the upstream"),
    (httpx.ReadError, UpstreamError, "reading from the upstream failed"),
    (httpx.WriteError, UpstreamError, "sending to the upstream failed"),
    (httpx.CloseError, UpstreamError, "closing the upstream connection failed"),
    (httpx.RemoteProtocolError, UpstreamError, "the upstream broke the HTTP protocol or hung up"),
    (httpx.LocalProtocolError, UpstreamError, "gw could not speak HTTP to the upstream"),
    (httpx.ProxyError, UpstreamError, "the proxy to the upstream failed"),
    (httpx.UnsupportedProtocol, UpstreamError, "the upstream URL's protocol is not supported"),
    (httpx.TimeoutException, UpstreamTimeoutError, "the upstream timed out"),
    (httpx.NetworkError, UpstreamError, "a network error reached the upstream"),
    (httpx.ProtocolError, UpstreamError, "an HTTP protocol error talking to the upstream"),
    (httpx.TransportError, UpstreamError, "the upstream transport failed"),
    (httpx.DecodingError, UpstreamError, "the upstream body could not be decoded"),
    (httpx.TooManyRedirects, UpstreamError, "the upstream redirected too many times"),
    (httpx.RequestError, UpstreamError, "the request to the upstream failed"),
)


def map_transport_error(error: httpx.RequestError, *, provider: str) -> GatewayError:
    for kind, gw_error, message in TRANSPORT_ERRORS:
        if isinstance(error, kind):
            blame: Blame = "gateway" if gw_error is OverloadedError else "upstream"
            return gw_error(f"provider {provider}: {message}{_why(error)}", blame=blame)
    raise AssertionError("unreachable: httpx.RequestError is the last row")  # pragma: no cover


def _why(error: httpx.RequestError) -> str:
    """Why a connect failed, as the built-in client says it (TLS not trusted, refused)."""
    cause = os_error_under(error) if isinstance(error, httpx.ConnectError) else None
    return "" if cause is None else f" ({connect_failure(cause)})"

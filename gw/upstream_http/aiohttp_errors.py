"""aiohttp failures -> gw errors, by table (never by message text)."""

from __future__ import annotations

import aiohttp

from gw.errors import GatewayError, UpstreamError, UpstreamTimeoutError

# Most specific classes first: the first isinstance match wins.
AIOHTTP_ERRORS: tuple[tuple[type[BaseException], type[GatewayError], str], ...] = (
    (aiohttp.ConnectionTimeoutError, UpstreamTimeoutError, "connecting to the upstream timed out"),
    (
        aiohttp.SocketTimeoutError,
        UpstreamTimeoutError,
        "the upstream stopped sending (read timeout)",
    ),
    (aiohttp.ServerTimeoutError, UpstreamTimeoutError, "the upstream timed out"),
    (aiohttp.ClientConnectorError, UpstreamError, "could not connect to the upstream"),
    (aiohttp.ServerDisconnectedError, UpstreamError, "the upstream hung up"),
    (aiohttp.ClientPayloadError, UpstreamError, "the upstream body was cut short or undecodable"),
    (aiohttp.ClientConnectionResetError, UpstreamError, "the upstream reset the connection"),
    (aiohttp.ClientConnectionError, UpstreamError, "the connection to the upstream failed"),
    (aiohttp.ClientResponseError, UpstreamError, "the upstream broke the HTTP protocol"),
    (aiohttp.InvalidURL, UpstreamError, "the upstream URL is not valid"),
    (aiohttp.NonHttpUrlClientError, UpstreamError, "the upstream URL is not http(s)"),
    (aiohttp.RedirectClientError, UpstreamError, "the upstream redirected to an unusable URL"),
    (aiohttp.UploadAbortedError, UpstreamError, "sending the request upstream was aborted"),
    (aiohttp.ClientError, UpstreamError, "the request to the upstream failed"),
    (TimeoutError, UpstreamTimeoutError, "the upstream timed out"),
)

CAUGHT: tuple[type[BaseException], ...] = (aiohttp.ClientError, TimeoutError)


def map_aiohttp_error(error: BaseException, *, provider: str) -> GatewayError:
    for kind, gw_error, message in AIOHTTP_ERRORS:
        if isinstance(error, kind):
            return gw_error(f"provider {provider}: {message}", blame="upstream")
    raise AssertionError("unreachable: ClientError and TimeoutError are rows")  # pragma: no cover

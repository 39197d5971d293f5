"""An upstream reached through an HTTP proxy is checked by a lookup of gw's own
(gw/upstream_http/upstream_address.py ``CheckedHosts(proxied=True)``): a name resolving to a
metadata or link-local address is refused before the proxy sees anything; a name gw cannot
resolve, or not in time, goes on through the proxy, which resolves it. A real forward
proxy and upstream on loopback; a fake resolver stands in for DNS."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator, Sequence

import pytest

from gw.errors import UpstreamError
from gw.ports import AttemptTimeouts
from gw.upstream_http.httpx_transport import HttpxTransport
from gw.upstream_http.reply_budget import ReplyBudget
from gw.upstream_http.upstream_address import CheckedHosts, Resolve, Resolved

from fakes.forward_proxy import FakeForwardProxy
from fakes.openai_upstream import FakeOpenAI

URL = "http://upstream.test/v1/chat/completions"  # only the proxy can reach it
BODY = json.dumps({"model": "gpt-r", "messages": [{"role": "user", "content": "hi"}]}).encode()


@pytest.fixture(scope="module")
def proxy() -> Iterator[FakeForwardProxy]:
    with FakeOpenAI() as upstream, FakeForwardProxy(upstream.base_url.removesuffix("/v1")) as fake:
        yield fake


class Resolver:
    """Answers ``addresses``, or raises ``error``, or never answers; counts its calls."""

    def __init__(
        self, addresses: Sequence[str] = (), *, error: OSError | None = None, hang: bool = False
    ) -> None:
        self.addresses = addresses
        self.error = error
        self.hang = hang
        self.calls = 0

    async def __call__(self, host: str, port: int) -> Sequence[Resolved]:
        self.calls += 1
        if self.hang:
            await asyncio.Event().wait()
        if self.error is not None:
            raise self.error
        return [(socket.AF_INET, (address, port)) for address in self.addresses]


async def post_twice(proxy_url: str, resolve: Resolve, *, lookup_timeout: float = 1.0) -> int:
    hosts = CheckedHosts(resolve, proxied=True, lookup_timeout=lookup_timeout)
    transport = HttpxTransport(ReplyBudget(), hosts, proxy=proxy_url)
    timeouts = AttemptTimeouts(connect=5.0, read=10.0)
    try:
        for _ in range(2):
            reply = await transport.post(
                URL, headers={"content-type": "application/json"}, body=BODY,
                timeouts=timeouts, provider="remote",
            )  # fmt: skip
        return reply.status
    finally:
        await transport.close()


@pytest.mark.parametrize("address", ["169.254.169.254", "169.254.10.1"])
def test_a_name_resolving_to_metadata_or_link_local_is_refused_before_the_proxy(
    proxy: FakeForwardProxy, address: str
) -> None:
    seen = len(proxy.seen)
    with pytest.raises(UpstreamError) as raised:
        asyncio.run(post_twice(proxy.url, Resolver([address])))
    message = raised.value.message
    assert message.startswith(
        f"provider remote: the upstream host upstream.test (resolved to {address})"
    )
    assert "nothing was sent" in message
    assert len(proxy.seen) == seen


@pytest.mark.parametrize(
    "resolver",
    [
        Resolver(["203.0.113.7"]),  # a public answer
        Resolver(error=socket.gaierror(socket.EAI_NONAME, "not known")),  # only the proxy knows
        Resolver(hang=True),  # gw's resolver does not answer in time
    ],
    ids=["public", "unknown-to-gw", "no-answer"],
)
def test_a_name_gw_cannot_refuse_goes_through_the_proxy_and_is_looked_up_once(
    proxy: FakeForwardProxy, resolver: Resolver
) -> None:
    seen = len(proxy.seen)
    assert asyncio.run(post_twice(proxy.url, resolver, lookup_timeout=0.05)) == 200
    assert [r.target for r in proxy.seen[seen:]] == [URL, URL]
    assert resolver.calls == 1  # the answer (or its absence) is remembered

"""A host with several addresses (gw/upstream_http/happy_eyeballs.py): the next address
is tried when the one before failed, or has not connected within the attempt delay, and
only the addresses the resolver gave (and upstream_address checked) are ever tried.

The black hole is real: a listener on 127.0.0.2 whose accept queue is full, so Linux
drops the SYNs of further connections and a connect to it hangs. Tried one after another,
it would hold the request for the whole connect timeout."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from gw.errors import UpstreamError
from gw.ports import AttemptTimeouts
from gw.upstream_http.h1_pool import ConnectionPool
from gw.upstream_http.happy_eyeballs import interleaved
from gw.upstream_http.upstream_address import Resolved

from fakes.raw_upstream import OK_JSON, RawUpstream, answering, post, scenario

TIMEOUTS = AttemptTimeouts(connect=10.0, read=30.0)
V4, V6 = socket.AF_INET, socket.AF_INET6


def test_families_alternate_from_the_first_answers() -> None:
    six = [(V6, (f"2001:db8::{n}", 443, 0, 0)) for n in range(3)]
    four = [(V4, (f"192.0.2.{n}", 443)) for n in range(2)]
    assert interleaved([*six, *four]) == [six[0], four[0], six[1], four[1], six[2]]
    assert interleaved([four[0], *six]) == [four[0], six[0], six[1], six[2]]
    assert interleaved([]) == []


class Resolver:
    """Answers every name with ``addresses`` (at the asked port) and counts lookups."""

    def __init__(self, *addresses: str) -> None:
        self.addresses = addresses
        self.lookups = 0

    async def __call__(self, host: str, port: int) -> list[Resolved]:
        self.lookups += 1
        return [(V4, (address, port)) for address in self.addresses]


@pytest.fixture
def black_hole() -> Iterator[int]:
    """A port P whose 127.0.0.2:P swallows connections (the upstream answers on 127.0.0.1:P)."""
    listener = socket.socket()
    listener.bind(("127.0.0.2", 0))
    listener.listen(0)
    port: int = listener.getsockname()[1]
    filler = socket.create_connection(("127.0.0.2", port))  # fills the accept queue
    try:
        yield port
    finally:
        filler.close()
        listener.close()


def test_a_black_holed_first_address_gives_way_to_the_next(run: Any, black_hole: int) -> None:
    port = black_hole
    resolver = Resolver("127.0.0.2", "127.0.0.1")
    pool = ConnectionPool(resolve=resolver, attempt_delay=0.01)

    async def body(upstream: RawUpstream, transport: Any) -> None:
        loop = asyncio.get_running_loop()
        hole = socket.socket()
        hole.setblocking(False)
        stuck = asyncio.ensure_future(loop.sock_connect(hole, ("127.0.0.2", port)))
        try:
            answer = await post(transport, f"http://upstream.test:{port}/v1/x", timeouts=TIMEOUTS)
            assert answer.body == b'{"ok":true}'
            assert upstream.connections == 1
            assert resolver.lookups == 1
            assert pool._open == 1  # the black-holed attempt holds no slot
            # The first address really swallows connections: a connect begun before the
            # request is still waiting after the request was answered.
            assert not stuck.done()
        finally:
            stuck.cancel()
            hole.close()

    scenario(run, lambda box: answering(box, OK_JSON), body, pool=pool, port=port)


def test_a_refused_first_address_gives_way_at_once(run: Any) -> None:
    # 127.0.0.2 at the upstream's port: nothing listens there, so it is refused. The delay
    # is longer than the connect timeout: the next address must start on the failure.
    resolver = Resolver("127.0.0.2", "127.0.0.1")
    pool = ConnectionPool(resolve=resolver, attempt_delay=3600.0)

    async def body(upstream: RawUpstream, transport: Any) -> None:
        url = f"http://upstream.test:{upstream.port}/v1/x"
        assert (await post(transport, url, timeouts=TIMEOUTS)).body == b'{"ok":true}'
        assert upstream.connections == 1

    scenario(run, lambda box: answering(box, OK_JSON), body, pool=pool)


def test_when_every_address_refuses_the_error_says_so(run: Any) -> None:
    pool = ConnectionPool(resolve=Resolver("127.0.0.2", "127.0.0.3"), attempt_delay=0.01)

    async def body(upstream: RawUpstream, transport: Any) -> None:
        with pytest.raises(UpstreamError, match=r"could not connect .*\(connection refused\)"):
            await post(transport, f"http://upstream.test:{upstream.port}/v1/x")
        assert pool._open == 0

    scenario(run, answering, body, pool=pool)

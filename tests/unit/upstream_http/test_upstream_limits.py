"""What every upstream transport refuses to do for an upstream: hold an answer over the cap
or past the shared budget (gw/upstream_http/reply_budget.py), or connect to a name that resolves
to a link-local or metadata address (gw/upstream_http/upstream_address.py). A real loopback
server answers; a fake resolver stands in for DNS."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from gw.errors import OverloadedError, UpstreamError
from gw.ports import AttemptTimeouts
from gw.upstream_http.h1_pool import ConnectionPool
from gw.upstream_http.h1_transport import BuiltinTransport
from gw.upstream_http.http_transport import HttpTransport
from gw.upstream_http.httpx_transport import HttpxTransport
from gw.upstream_http.reply_budget import MIB, ReplyBudget
from gw.upstream_http.upstream_address import CheckedHosts, Resolved, address_refusal

TIMEOUTS = AttemptTimeouts(connect=5.0, read=10.0)
NAME = "upstream.test"  # resolved only by the fake resolvers below


class Upstream:
    """A loopback server answering every request with ``body`` (chunked unless
    ``declare``); counts the connections it was given."""

    def __init__(self, body: bytes, *, declare: bool = False) -> None:
        self.body = body
        self.declare = declare
        self.connections = 0

    async def __aenter__(self) -> Upstream:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()

    def url(self, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}/v1/chat/completions"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.partition(b":")[2])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            await reader.readexactly(length)
            if self.declare:
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(self.body))
                writer.write(self.body)
            else:
                writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
                for start in range(0, len(self.body), 65536):
                    piece = self.body[start : start + 65536]
                    writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                writer.write(b"0\r\n\r\n")
            await writer.drain()
            await reader.read()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


def resolving_to(address: str) -> Callable[[str, int], Any]:
    async def resolve(host: str, port: int) -> Sequence[Resolved]:
        assert host == NAME
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        return [(family, (address, port))]

    return resolve


def builtin(budget: ReplyBudget, address: str = "127.0.0.1") -> HttpTransport:
    return BuiltinTransport(ConnectionPool(resolve=resolving_to(address)), budget)


def with_httpx(budget: ReplyBudget, address: str = "127.0.0.1") -> HttpTransport:
    # httpx looks the name up again itself: the fake name is for the check only, and the
    # request goes to the literal address the check resolved (see test below).
    return HttpxTransport(budget, CheckedHosts(resolving_to(address)))


TRANSPORTS = [builtin, with_httpx]


async def post(transport: HttpTransport, url: str) -> Any:
    try:
        return await transport.post(url, headers={}, body=b"{}", timeouts=TIMEOUTS, provider="fake")
    finally:
        await transport.close()


@pytest.mark.parametrize("make", TRANSPORTS)
@pytest.mark.parametrize("declare", [False, True])
def test_an_answer_over_the_cap_is_upstream_error_saying_too_large(
    make: Callable[[ReplyBudget], HttpTransport], declare: bool
) -> None:
    budget = ReplyBudget(max_reply_bytes=MIB, total_bytes=4 * MIB)

    async def main() -> None:
        async with Upstream(b"x" * (2 * MIB), declare=declare) as upstream:
            with pytest.raises(UpstreamError) as raised:
                await post(make(budget), upstream.url())
        message = raised.value.message
        assert message.startswith("provider fake: the upstream answer is too large: over 1 MiB")
        assert "server.max_upstream_body_bytes" in message

    asyncio.run(main())
    assert budget.held == 0


@pytest.mark.parametrize("make", TRANSPORTS)
def test_an_answer_past_the_shared_budget_is_overloaded_with_retry_after(
    make: Callable[[ReplyBudget], HttpTransport],
) -> None:
    budget = ReplyBudget(max_reply_bytes=512 * 1024, total_bytes=512 * 1024)
    budget.held = 400 * 1024  # other answers being read at the same time

    async def main() -> None:
        async with Upstream(b"x" * (300 * 1024)) as upstream:
            with pytest.raises(OverloadedError) as raised:
                await post(make(budget), upstream.url())
        assert raised.value.retry_after is not None
        assert raised.value.blame == "gateway"
        assert "server.upstream_buffer_budget" in raised.value.message

    asyncio.run(main())
    assert budget.held == 400 * 1024  # this answer's bytes were given back


@pytest.mark.parametrize("make", TRANSPORTS)
def test_an_answer_within_both_bounds_arrives_whole(
    make: Callable[[ReplyBudget], HttpTransport],
) -> None:
    budget = ReplyBudget(max_reply_bytes=512 * 1024, total_bytes=512 * 1024)

    async def main() -> Any:
        async with Upstream(b"y" * (300 * 1024)) as upstream:
            return await post(make(budget), upstream.url())

    assert asyncio.run(main()).body == b"y" * (300 * 1024)
    assert budget.held == 0


@pytest.mark.parametrize("make", TRANSPORTS)
@pytest.mark.parametrize(
    "address", ["169.254.169.254", "169.254.10.1", "fe80::1", "::ffff:a9fe:a9fe"]
)
def test_a_name_resolving_to_link_local_or_metadata_is_refused_before_connecting(
    make: Callable[..., HttpTransport], address: str
) -> None:
    async def main() -> tuple[UpstreamError, int]:
        async with Upstream(b"{}") as upstream:
            with pytest.raises(UpstreamError) as raised:
                await post(make(ReplyBudget(), address), upstream.url(NAME))
            return raised.value, upstream.connections

    error, connections = asyncio.run(main())
    assert connections == 0
    assert error.message.startswith(f"provider fake: the upstream host {NAME} (resolved to ")
    assert "nothing was sent" in error.message


def test_a_name_resolving_to_loopback_is_allowed_and_connected_to() -> None:
    async def main() -> tuple[Any, int]:
        async with Upstream(b'{"ok":true}') as upstream:
            reply = await post(builtin(ReplyBudget()), upstream.url(NAME))
            return reply, upstream.connections

    reply, connections = asyncio.run(main())
    assert (reply.status, reply.body, connections) == (200, b'{"ok":true}', 1)


def test_httpx_checks_a_literal_address_without_a_lookup() -> None:
    async def never(host: str, port: int) -> Sequence[Resolved]:
        raise AssertionError("no lookup for a literal")

    async def main() -> Any:
        async with Upstream(b"{}") as upstream:
            transport = HttpxTransport(ReplyBudget(), CheckedHosts(never))
            return await post(transport, upstream.url())

    assert asyncio.run(main()).status == 200


@pytest.mark.parametrize(
    ("addresses", "refused"),
    [
        (["127.0.0.1"], False),
        (["10.0.0.5", "192.168.1.2"], False),
        (["203.0.113.7"], False),
        (["203.0.113.7", "169.254.169.254"], True),  # one bad answer refuses the name
        (["fd00:ec2::254"], True),
        (["fe80::1%eth0"], True),
        (["64:ff9b::a9fe:a9fe"], True),  # NAT64 of 169.254.169.254
        (["0.0.0.0"], True),
    ],
)
def test_address_refusal(addresses: list[str], refused: bool) -> None:
    assert (address_refusal("h.test", addresses) is not None) is refused

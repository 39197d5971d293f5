"""The header-read timer of gw/server/runtime/protocol.py, driven by hand: no sockets, no sleeps.

Timers are recorded instead of scheduled and fired by the test; the ASGI task runs on a real
loop, stepped a bounded number of times. The e2e twin is tests/e2e/test_slow_clients.py.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
import uvicorn
from uvicorn.server import ServerState

from gw.server.runtime.protocol import GatewayProtocol, gateway_protocol

from fakes.server_transport import FakeTransport

PARTIAL_HEAD = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
GET = b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n"
KEEP_ALIVE_S = 15.0


class Timer:
    def __init__(self, delay: float, callback: Callable[[], None]) -> None:
        self.delay = delay
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def fire(self) -> None:
        assert not self.cancelled
        self.callback()


class ManualLoop:
    """``call_later`` is recorded, to be fired by the test; tasks run on the real loop.

    ``timers`` holds the header timers only: uvicorn's own keep-alive timer
    (KEEP_ALIVE_S) is recorded apart, in ``others``.
    """

    def __init__(self) -> None:
        self.timers: list[Timer] = []
        self.others: list[Timer] = []

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        timer = Timer(delay, callback)
        (self.others if delay == KEEP_ALIVE_S else self.timers).append(timer)
        return timer

    def create_task(self, coro: Coroutine[Any, Any, None], **kwargs: Any) -> asyncio.Task[None]:
        return asyncio.get_running_loop().create_task(coro, **kwargs)

    def live(self) -> list[Timer]:
        return [timer for timer in self.timers if not timer.cancelled]


async def ok_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]}
    )
    await send({"type": "http.response.body", "body": b"ok"})


def open_connection(
    seconds: float = 2.5,
) -> tuple[GatewayProtocol, ManualLoop, FakeTransport]:
    loop, transport = ManualLoop(), FakeTransport()
    config = uvicorn.Config(
        ok_app, log_config=None, lifespan="off", timeout_keep_alive=int(KEEP_ALIVE_S)
    )
    protocol = gateway_protocol(seconds)(
        config=config, server_state=ServerState(), app_state={}, _loop=loop
    )
    protocol.connection_made(transport)  # type: ignore[arg-type]
    return protocol, loop, transport


async def responses_written(transport: FakeTransport, count: int) -> None:
    for _ in range(1000):  # bounded: the app answers within a few loop steps
        if transport.written.count(b"HTTP/1.1 200") >= count:
            return
        await asyncio.sleep(0)
    raise AssertionError(f"fewer than {count} responses: {transport.written!r}")


def test_a_connection_gets_one_timer_not_one_per_byte() -> None:
    protocol, loop, _ = open_connection(2.5)
    for byte in PARTIAL_HEAD:
        protocol.data_received(bytes([byte]))
    # One at the open, re-armed once at the request's first byte; none per further byte.
    assert [timer.delay for timer in loop.timers] == [2.5, 2.5]
    assert len(loop.live()) == 1


def test_headers_that_never_finish_get_a_json_408_and_a_close() -> None:
    protocol, loop, transport = open_connection()
    protocol.data_received(PARTIAL_HEAD)
    [timer] = loop.live()
    timer.fire()
    assert transport.closed
    head, _, body = transport.written.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
    assert b"\r\nconnection: close" in head
    assert f"\r\ncontent-length: {len(body)}".encode() in head
    assert json.loads(body)["error"]["code"] == "request_timeout"


def test_a_silent_connection_is_closed_without_an_answer() -> None:
    _, loop, transport = open_connection()
    loop.timers[0].fire()
    assert transport.closed
    assert transport.written == b""


@pytest.mark.parametrize("error", [None, ConnectionResetError()])
def test_losing_the_connection_cancels_the_timer(error: Exception | None) -> None:
    protocol, loop, _ = open_connection()
    protocol.connection_lost(error)
    assert loop.live() == []


def test_complete_headers_cancel_it_and_a_kept_alive_connection_rearms_it() -> None:
    async def go() -> None:
        protocol, loop, transport = open_connection(2.5)
        protocol.data_received(GET)
        assert loop.live() == []
        await responses_written(transport, 1)
        [rearmed] = loop.live()
        assert rearmed.delay == 2.5
        protocol.data_received(PARTIAL_HEAD)  # the next request, slowly
        [head_timer] = loop.live()  # its first byte re-armed the timer with a full budget
        assert head_timer is not rearmed
        assert rearmed.cancelled
        head_timer.fire()
        assert transport.written.split(b"\r\n\r\nok", 1)[1].startswith(b"HTTP/1.1 408")
        assert transport.closed
        protocol.connection_lost(None)

    asyncio.run(go())


def test_a_pipelined_request_is_not_timed_until_its_response_is_done() -> None:
    async def go() -> None:
        protocol, loop, transport = open_connection()
        protocol.data_received(GET + GET)
        await responses_written(transport, 2)
        # Armed at the open, at each request's first byte, and after the second response;
        # not after the first, whose successor's headers had already arrived.
        assert len(loop.timers) == 4
        assert len(loop.live()) == 1
        protocol.connection_lost(None)
        assert loop.live() == []

    asyncio.run(go())


def test_a_closing_connection_is_not_rearmed() -> None:
    async def go() -> None:
        protocol, loop, transport = open_connection()
        protocol.data_received(b"GET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        await responses_written(transport, 1)
        assert transport.closed
        assert loop.live() == []
        protocol.connection_lost(None)

    asyncio.run(go())


def test_the_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="header_timeout"):
        gateway_protocol(0.0)

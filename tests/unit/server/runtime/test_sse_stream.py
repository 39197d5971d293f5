"""The streaming response encodes events as they come, ends with the closing frames or one
error event, and cleans up once however it ends, even before its first chunk. Relayed
(under gw's server), frames go straight to the client's socket while it takes them, and
wait for the task's send, in order, while it does not."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable
from types import SimpleNamespace
from typing import Any

import pytest

from gw.errors import UpstreamError
from gw.ir import ErrorEvent, StreamEvent, TextDelta
from gw.server.runtime.direct_body import DIRECT_BODY, DirectBody
from gw.server.runtime.sse_stream import Deliver, SSEStream


class FakeWatch:
    def __init__(self, *, client_left: bool) -> None:
        self.client_left = client_left
        self.closed = 0

    def absorb(self) -> bool:
        return self.client_left

    def close(self) -> None:
        self.closed += 1


class FakeEncoder:
    def encode(self, event: StreamEvent) -> bytes:
        if isinstance(event, ErrorEvent):
            return f"data: error {event.code}\n\n".encode()
        assert isinstance(event, TextDelta)
        return f"data: {event.text}\n\n".encode() if event.text else b""

    def done(self) -> bytes:
        return b"data: [DONE]\n\n"


def run(
    send: Any, *, client_left: bool, fail: bool = False
) -> tuple[FakeWatch, list[str], BaseException | None]:
    watch = FakeWatch(client_left=client_left)
    log: list[str] = []

    async def frames() -> AsyncGenerator[StreamEvent, None]:
        log.append("started")
        try:
            yield TextDelta(text="1")
            yield TextDelta(text="")  # encodes to nothing: no empty write
            if fail:
                raise UpstreamError("upstream stream ended early", blame="upstream")
            yield TextDelta(text="2")
        finally:
            log.append("generator closed")

    async def on_close() -> None:
        log.append("on_close")

    async def go() -> BaseException | None:
        response = SSEStream(
            frames(),
            FakeEncoder(),
            watch=watch,  # type: ignore[arg-type]
            on_close=on_close,
            headers={},
        )
        asgi = response.to_asgi_response(None, None)

        async def receive() -> Any:
            await asyncio.sleep(3600)

        try:
            await asgi({"type": "http"}, receive, send)  # type: ignore[arg-type]
        except BaseException as exc:  # noqa: BLE001 - the test inspects what escaped
            return exc
        return None

    return watch, log, asyncio.run(go())


def test_a_whole_stream_ends_with_the_closing_frames_and_one_cleanup() -> None:
    sent: list[Any] = []

    async def send(message: Any) -> None:
        sent.append(message)

    watch, log, escaped = run(send, client_left=False)
    assert escaped is None
    assert [m.get("more_body") for m in sent] == [None, True, True, False]
    assert [m.get("body") for m in sent[1:]] == [
        b"data: 1\n\n",
        b"data: 2\n\n",
        b"data: [DONE]\n\n",
    ]
    assert log == ["started", "generator closed", "on_close"]
    assert watch.closed == 1


def test_a_failure_after_the_first_chunk_ends_with_one_error_event() -> None:
    sent: list[Any] = []

    async def send(message: Any) -> None:
        sent.append(message)

    watch, log, escaped = run(send, client_left=False, fail=True)
    assert escaped is None
    assert [m.get("body") for m in sent[1:]] == [b"data: 1\n\n", b"data: error upstream_error\n\n"]
    assert sent[-1]["more_body"] is False
    assert log == ["started", "generator closed", "on_close"]
    assert watch.closed == 1


@pytest.mark.parametrize("client_left", [True, False])
def test_a_cancel_before_the_first_chunk_still_cleans_up(client_left: bool) -> None:
    async def send(message: Any) -> None:
        if message["type"] == "http.response.start":
            raise asyncio.CancelledError  # e.g. a hang-up while the headers wait to drain

    watch, log, escaped = run(send, client_left=client_left)
    assert log == ["on_close"]  # the generator never ran; on_close still did, once
    assert watch.closed == 1
    if client_left:
        assert escaped is None  # the client's own hang-up is absorbed
    else:
        assert isinstance(escaped, asyncio.CancelledError)  # shutdown propagates


class FakeCycle:
    """What ``DirectBody`` reads of uvicorn's request-response cycle."""

    def __init__(self) -> None:
        self.flow = SimpleNamespace(write_paused=False)
        self.disconnected = False
        self.response_complete = False
        self.response_started = True
        self.chunked_encoding = True
        self.written: list[bytes] = []
        self.transport = SimpleNamespace(write=self.written.append, is_closing=lambda: False)


def relayed(
    pushes: Callable[[Deliver, Callable[[], Awaitable[None]], FakeCycle], Awaitable[None]],
) -> tuple[FakeCycle, list[Any], list[str]]:
    """Run an SSEStream whose events are relayed by ``pushes`` under gw's server (a
    ``DirectBody`` over a fake cycle); what went straight out, what was sent, the log."""
    cycle = FakeCycle()
    sent: list[Any] = []
    log: list[str] = []

    async def send(message: Any) -> None:
        sent.append(message)

    async def never() -> AsyncGenerator[StreamEvent, None]:
        log.append("events read")  # the relay is used instead
        yield TextDelta(text="never")

    async def relay(deliver: Deliver, flush: Callable[[], Awaitable[None]]) -> None:
        await pushes(deliver, flush, cycle)

    async def on_close() -> None:
        log.append("on_close")

    async def go() -> None:
        response = SSEStream(
            never(),
            FakeEncoder(),
            watch=FakeWatch(client_left=False),  # type: ignore[arg-type]
            on_close=on_close,
            headers={},
            relay=relay,
        )
        scope = {"type": "http", "extensions": {DIRECT_BODY: {"writer": DirectBody(cycle)}}}  # type: ignore[arg-type]

        async def receive() -> Any:
            await asyncio.sleep(3600)

        await response.to_asgi_response(None, None)(scope, receive, send)  # type: ignore[arg-type]

    asyncio.run(go())
    return cycle, sent, log


def text(*words: str) -> list[StreamEvent]:
    return [TextDelta(text=word) for word in words]


def test_relayed_frames_go_straight_out_and_wait_while_the_client_takes_no_more() -> None:
    async def pushes(
        deliver: Deliver, flush: Callable[[], Awaitable[None]], cycle: FakeCycle
    ) -> None:
        assert deliver(text("1"))
        assert deliver(text("", "2", "3"))  # one write for a batch
        cycle.flow.write_paused = True
        assert not deliver(text("4"))  # waits: the client is not reading
        cycle.flow.write_paused = False
        await flush()  # the task sends what waited (uvicorn's send waits for the client)
        assert deliver(text("5"))
        assert deliver(text(""))  # nothing to write is no write

    cycle, sent, log = relayed(pushes)
    assert cycle.written == [
        b"9\r\ndata: 1\n\n\r\n",
        b"12\r\ndata: 2\n\ndata: 3\n\n\r\n",
        b"9\r\ndata: 5\n\n\r\n",
    ]
    assert [(m.get("body"), m.get("more_body")) for m in sent[1:]] == [
        (b"data: 4\n\n", True),
        (b"data: [DONE]\n\n", False),
    ]
    assert log == ["on_close"]


def test_frames_still_waiting_go_before_the_closing_frames_or_the_error() -> None:
    async def waits_then_ends(deliver: Deliver, flush: Any, cycle: FakeCycle) -> None:
        cycle.flow.write_paused = True
        deliver(text("1"))

    async def waits_then_fails(deliver: Deliver, flush: Any, cycle: FakeCycle) -> None:
        await waits_then_ends(deliver, flush, cycle)
        raise UpstreamError("upstream stream ended early", blame="upstream")

    _, sent, _ = relayed(waits_then_ends)
    assert sent[-1] == {
        "type": "http.response.body",
        "body": b"data: 1\n\ndata: [DONE]\n\n",
        "more_body": False,
    }
    _, sent, _ = relayed(waits_then_fails)
    assert sent[-1]["body"] == b"data: 1\n\ndata: error upstream_error\n\n"

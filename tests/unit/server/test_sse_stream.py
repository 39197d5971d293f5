"""The streaming response encodes events as they come, ends with the closing frames or one
error event, and cleans up once however it ends, even before its first chunk."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import pytest

from gw.errors import UpstreamError
from gw.ir import ErrorEvent, StreamEvent, TextDelta
from gw.server.sse_stream import SSEStream


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

"""ClientWatch cancels the request's work when the client hangs up: told by gw's protocol
through the scope hook, or, under another server, by ``receive()``'s http.disconnect."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from gw.server.runtime.disconnect import CLIENT_GONE, ClientGoneError, ClientGoneHook, ClientWatch


class FakeRequest:
    def __init__(self, scope: dict[str, Any], messages: asyncio.Queue[dict[str, Any]]) -> None:
        self.scope = scope
        self._messages = messages

    async def receive(self) -> dict[str, Any]:
        return await self._messages.get()


async def watch_work(scope: dict[str, Any], hang_up: Any) -> tuple[bool, ClientWatch]:
    messages: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    watch = ClientWatch(FakeRequest(scope, messages))  # type: ignore[arg-type]
    asyncio.get_running_loop().call_soon(hang_up, messages)
    try:
        await watch.run(asyncio.sleep(3600))
    except ClientGoneError:
        return True, watch
    finally:
        watch.close()
    return False, watch


def test_the_protocol_hook_cancels_the_work_without_a_watcher_task() -> None:
    hook = ClientGoneHook()
    scope = {"type": "http", "extensions": {CLIENT_GONE: {"hook": hook}}}

    def hang_up(_messages: object) -> None:
        assert hook.callback is not None
        hook.callback()

    gone, watch = asyncio.run(watch_work(scope, hang_up))
    assert gone
    assert watch.left
    assert hook.callback is None  # close() unhooks: a later hang-up reaches nobody


def test_without_the_hook_receive_tells_of_the_hang_up() -> None:
    def hang_up(messages: asyncio.Queue[dict[str, Any]]) -> None:
        messages.put_nowait({"type": "http.disconnect"})

    gone, watch = asyncio.run(watch_work({"type": "http"}, hang_up))
    assert gone
    assert watch.left


def test_a_cancel_from_elsewhere_is_not_taken_for_a_hang_up() -> None:
    async def main() -> None:
        messages: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        hook = ClientGoneHook()
        scope = {"type": "http", "extensions": {CLIENT_GONE: {"hook": hook}}}
        watch = ClientWatch(FakeRequest(scope, messages))  # type: ignore[arg-type]
        task = asyncio.current_task()
        assert task is not None
        asyncio.get_running_loop().call_soon(task.cancel)  # a shutdown, say
        try:
            with pytest.raises(asyncio.CancelledError):
                await watch.run(asyncio.sleep(3600))
        finally:
            watch.close()
        assert not watch.left
        task.uncancel()

    asyncio.run(main())


def test_a_client_gone_before_the_watch_began_is_noticed_at_once() -> None:
    """Hung up while gw read its body or queued it for a slot: the protocol saw it then."""
    hook = ClientGoneHook()
    hook.gone = True
    scope = {"type": "http", "extensions": {CLIENT_GONE: {"hook": hook}}}

    gone, watch = asyncio.run(watch_work(scope, lambda _messages: None))
    assert gone
    assert watch.left

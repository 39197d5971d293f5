"""Auth mode resolution and bearer parsing; admission sheds after the queue timeout."""

from __future__ import annotations

import asyncio

import pytest

from gw.errors import AuthenticationFailedError, OverloadedError
from gw.server.admission import Admission, queue_header
from gw.server.auth import Authenticator, bearer_token, is_loopback, resolve_mode


def test_open_on_loopback_without_keys_else_keys() -> None:
    assert resolve_mode(None, "127.0.0.1", keys_exist=False) == "open"
    assert resolve_mode(None, "::1", keys_exist=False) == "open"
    assert resolve_mode(None, "0.0.0.0", keys_exist=False) == "keys"
    assert resolve_mode(None, "127.0.0.1", keys_exist=True) == "keys"
    assert resolve_mode("open", "127.0.0.1", keys_exist=True) == "open"
    assert is_loopback("localhost")
    assert not is_loopback("example.com")


def test_bearer_and_x_api_key() -> None:
    assert bearer_token({"authorization": "Bearer abc"}) == "abc"
    assert bearer_token({"x-api-key": "xyz"}) == "xyz"
    assert bearer_token({}) is None


def test_keys_mode_without_a_key_store_accepts_only_the_admin_key() -> None:
    auth = Authenticator("keys", "s3cret")
    assert asyncio.run(auth.authenticate({"authorization": "Bearer s3cret"})).key_id == "admin"
    with pytest.raises(AuthenticationFailedError):
        asyncio.run(auth.authenticate({"authorization": "Bearer wrong"}))
    with pytest.raises(AuthenticationFailedError):
        asyncio.run(auth.authenticate({"authorization": "Bearer gw-looks-like-a-key"}))
    with pytest.raises(AuthenticationFailedError):
        asyncio.run(auth.authenticate({}))
    assert asyncio.run(Authenticator("open", None).authenticate({})).key_id is None


def test_admission_sheds_when_the_queue_wait_runs_out() -> None:
    async def go() -> int:
        admission = Admission(max_concurrency=1, queue_timeout=0.01)
        await admission.acquire()
        with pytest.raises(OverloadedError):
            await admission.acquire()
        admission.release()
        await admission.acquire()
        admission.release()
        return admission.shed

    assert asyncio.run(go()) == 1


def test_admission_reports_how_long_a_request_waited() -> None:
    async def go() -> tuple[float, float]:
        admission = Admission(max_concurrency=1, queue_timeout=5.0)
        free = await admission.acquire()

        async def release_later() -> None:
            await asyncio.sleep(0.05)
            admission.release()

        releaser = asyncio.ensure_future(release_later())
        waited = await admission.acquire()
        await releaser
        admission.release()
        return free, waited

    free, waited = asyncio.run(go())
    assert free == 0.0
    assert waited >= 40  # it waited for the release, which came after a 50 ms sleep
    assert queue_header(waited) == {"x-gw-queue-ms": str(round(waited))}

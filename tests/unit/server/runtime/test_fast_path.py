"""FastPath takes only SDK-style POSTs to its endpoints; the rest reaches Litestar as is."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from litestar import Response

from gw.errors import GatewayError
from gw.server.runtime.fast_path import FastPath


class FakeLitestar:
    def __init__(self) -> None:
        self.scopes: list[dict[str, Any]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.scopes.append(scope)


def call(
    method: str,
    path: str,
    headers: list[tuple[bytes, bytes]],
    *,
    endpoint_raises: bool = False,
    refuse: bool = False,
) -> tuple[FakeLitestar, list[str], list[dict[str, Any]]]:
    litestar = FakeLitestar()
    log: list[str] = []
    sent: list[dict[str, Any]] = []

    async def endpoint(request: Any) -> Response[bytes]:
        log.append("endpoint")
        if endpoint_raises:
            raise RuntimeError("bug")
        return Response(content=b"answer", status_code=200)

    async def guard(request: Any) -> Response[bytes] | None:
        log.append("guard")
        return Response(content=b"refused", status_code=403) if refuse else None

    def error_page(request: Any, exc: Exception) -> Response[bytes]:
        log.append(f"error page {type(exc).__name__}")
        return Response(content=b"oops", status_code=500)

    def render(request: Any, error: GatewayError) -> Response[bytes]:
        log.append(f"refused {error.code}")
        return Response(content=b"refused", status_code=error.status)

    app = FastPath(  # type: ignore[arg-type]
        litestar,
        {"/v1/chat": endpoint},
        guard=guard,
        error_page=error_page,
        render=render,
        gw_headers=dict,
    )

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "headers": headers,
        "query_string": b"",
    }
    asyncio.run(app(scope, receive, send))  # type: ignore[arg-type]
    return litestar, log, sent


def test_an_sdk_post_to_an_endpoint_skips_litestar() -> None:
    litestar, log, sent = call("POST", "/v1/chat", [(b"host", b"127.0.0.1")])
    assert litestar.scopes == []
    assert log == ["guard", "endpoint"]
    assert sent[0]["status"] == 200
    assert sent[-1]["body"] == b"answer"


@pytest.mark.parametrize(
    ("method", "path", "headers"),
    [
        ("POST", "/v1/chat", [(b"origin", b"https://example.com")]),  # a browser: CORS applies
        ("GET", "/v1/chat", []),
        ("POST", "/v1/chat/", []),
        ("POST", "/v1/other", []),
    ],
)
def test_everything_else_goes_to_litestar(
    method: str, path: str, headers: list[tuple[bytes, bytes]]
) -> None:
    litestar, log, sent = call(method, path, headers)
    assert len(litestar.scopes) == 1
    assert (log, sent) == ([], [])


def test_the_guard_can_refuse_and_errors_get_the_error_page() -> None:
    _, log, sent = call("POST", "/v1/chat", [], refuse=True)
    assert log == ["guard"]
    assert sent[0]["status"] == 403
    _, log, sent = call("POST", "/v1/chat", [], endpoint_raises=True)
    assert log == ["guard", "endpoint", "error page RuntimeError"]
    assert sent[0]["status"] == 500


@pytest.mark.parametrize(
    "hosts",
    [
        [b"127.0.0.1:19310/x"],
        [b"127.0.0.1:99999"],
        [b"user@127.0.0.1"],
        [b"a b"],
        [b"[::1"],
        [b"127.0.0.1", b"127.0.0.1"],
    ],
)
def test_a_malformed_host_is_refused_before_litestar(hosts: list[bytes]) -> None:
    for method, path in (("POST", "/v1/chat"), ("GET", "/v1/models")):
        litestar, log, sent = call(method, path, [(b"host", host) for host in hosts])
        assert log == ["refused invalid_request"]
        assert litestar.scopes == []
        assert sent[0]["status"] == 400


@pytest.mark.parametrize(
    "host", [b"127.0.0.1:8787", b"localhost", b"[::1]:8787", b"[fe80::1%25eth0]", b"gw.example"]
)
def test_a_well_formed_host_passes(host: bytes) -> None:
    litestar, log, _ = call("GET", "/v1/models", [(b"host", host)])
    assert log == []
    assert len(litestar.scopes) == 1

"""FastPath takes only SDK-style POSTs to its endpoints; the rest reaches Litestar as is."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from litestar import Response

from gw.server.fast_path import FastPath


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

    app = FastPath(  # type: ignore[arg-type]
        litestar, {"/v1/chat": endpoint}, guard=guard, error_page=error_page, gw_headers=dict
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

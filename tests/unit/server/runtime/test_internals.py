"""Every internal of uvicorn and Litestar that gw relies on (gw/server/runtime/), checked by
name, signature and the attributes gw reads, so that an upgrade of either fails here first,
naming the patch to revisit, instead of somewhere downstream or not at all.

Both are pinned (pyproject.toml); to upgrade one, bump its pin, run ./scripts/lock, then
this file: each failure says which module of gw/server/runtime/ to read again. The
behaviour of each patch is tested beside it (test_header_timeout.py, test_direct_body.py,
test_sse_stream.py, test_fast_path.py, tests/e2e/test_slow_clients.py, test_upgrades.py).
"""

from __future__ import annotations

import asyncio
import inspect
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest
import uvicorn
from litestar import Litestar, Request, Response
from litestar.response.base import ASGIResponse
from litestar.response.streaming import ASGIStreamingResponse
from uvicorn.protocols.http import httptools_impl
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
from uvicorn.server import ServerState

from gw.config.schema import ServerConfig
from gw.server.runtime.litestar_app import GatewayLitestar
from gw.server.runtime.protocol import GatewayProtocol, gateway_protocol
from gw.server.runtime.server import GracefulServer, uvicorn_config

from fakes.server_transport import FakeTransport


def revisit(patch: str) -> str:
    return f"revisit gw/server/runtime/{patch}"


@dataclass(frozen=True)
class Signature:
    """``owner.name`` takes these parameters (``exact``: only these, in this order; else
    at least these, by name)."""

    patch: str
    owner: Any
    name: str
    parameters: tuple[str, ...]
    exact: bool = True

    @property
    def id(self) -> str:
        return f"{self.patch}:{self.owner.__name__}.{self.name}"


# The methods gw overrides (uvicorn calls them with these arguments, gw calls super() with
# them), calls, or constructs.
SIGNATURES = [
    # protocol.py: uvicorn's callbacks, each overridden and chained.
    Signature("protocol.py", HttpToolsProtocol, "__init__",
              ("self", "config", "server_state", "app_state", "_loop")),
    Signature("protocol.py", HttpToolsProtocol, "connection_made", ("self", "transport")),
    Signature("protocol.py", HttpToolsProtocol, "connection_lost", ("self", "exc")),
    Signature("protocol.py", HttpToolsProtocol, "data_received", ("self", "data")),
    Signature("protocol.py", HttpToolsProtocol, "on_message_begin", ("self",)),
    Signature("protocol.py", HttpToolsProtocol, "on_url", ("self", "url")),
    Signature("protocol.py", HttpToolsProtocol, "on_header", ("self", "name", "value")),
    Signature("protocol.py", HttpToolsProtocol, "on_headers_complete", ("self",)),
    Signature("protocol.py", HttpToolsProtocol, "on_response_complete", ("self",)),
    # protocol.py: what uvicorn calls on a parser error and on an upgrade.
    Signature("protocol.py", HttpToolsProtocol, "send_400_response", ("self", "msg")),
    Signature("protocol.py", HttpToolsProtocol, "_get_upgrade", ("self",)),
    Signature("protocol.py", HttpToolsProtocol, "_should_upgrade", ("self",)),
    Signature("protocol.py", HttpToolsProtocol, "_unsupported_upgrade_warning", ("self",)),
    Signature("protocol.py", HttpToolsProtocol, "handle_websocket_upgrade", ("self",)),
    # server.py: what uvicorn's signal handler calls.
    Signature("server.py", uvicorn.Server, "handle_exit", ("self", "sig", "frame")),
    # litestar_app.py: what Litestar.__init__ asks for its plugins.
    Signature("litestar_app.py", Litestar, "_get_default_plugins", ("plugins",)),
    # sse_stream.py: the streaming response it subclasses, built by keyword.
    Signature("sse_stream.py", ASGIStreamingResponse, "__init__",
              ("iterator", "headers", "media_type", "status_code", "content_length"),
              exact=False),
    Signature("sse_stream.py", ASGIStreamingResponse, "send_body", ("self", "send", "receive")),
    Signature("sse_stream.py", ASGIResponse, "__call__", ("self", "scope", "receive", "send")),
    Signature("sse_stream.py", Response, "to_asgi_response", ("app", "request", "headers"),
              exact=False),
    # fast_path.py: a request over the server's scope; its response made ASGI.
    Signature("fast_path.py", Request, "__init__", ("self", "scope", "receive", "send")),
]  # fmt: skip


@pytest.mark.parametrize("expected", SIGNATURES, ids=lambda expected: expected.id)
def test_each_internal_gw_overrides_or_calls_has_the_signature_gw_was_written_for(
    expected: Signature,
) -> None:
    where = f"{expected.owner.__module__}.{expected.owner.__qualname__}.{expected.name}"
    member = getattr(expected.owner, expected.name, None)
    assert member is not None, f"{where} is gone: {revisit(expected.patch)}"
    signature = inspect.signature(member)
    actual = tuple(signature.parameters)
    if expected.exact:
        matches = actual == expected.parameters
    else:
        matches = set(expected.parameters) <= set(actual)
    assert matches, (
        f"{where}{signature} no longer takes {expected.parameters}: {revisit(expected.patch)}"
    )


def test_gw_overrides_only_methods_uvicorns_protocol_has() -> None:
    """A method of GatewayProtocol uvicorn no longer calls would silently do nothing."""
    own = {
        name
        for name, value in vars(GatewayProtocol).items()
        if callable(value) and not name.startswith("__")
    }
    patch_steps = {
        "_answered", "_send_closing", "_refuse_head", "_refuse_upgrade_when_answered",
        "_arm_header_timer", "_cancel_header_timer", "_header_timed_out",
    }  # fmt: skip
    overridden = own - patch_steps
    missing = sorted(name for name in overridden if not hasattr(HttpToolsProtocol, name))
    assert not missing, f"uvicorn's HttpToolsProtocol has no {missing}: {revisit('protocol.py')}"
    assert not patch_steps & set(dir(HttpToolsProtocol)), (
        f"uvicorn now has methods named as gw's own steps: {revisit('protocol.py')}"
    )


async def ok_app(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok", "more_body": True})
    await send({"type": "http.response.body", "body": b""})


def answered_protocol() -> tuple[GatewayProtocol, FakeTransport]:
    """gw's protocol on a fake transport, after one request answered with a chunked body."""

    async def go() -> tuple[GatewayProtocol, FakeTransport]:
        config = uvicorn.Config(ok_app, log_config=None, lifespan="off")
        protocol = gateway_protocol(5.0)(config=config, server_state=ServerState(), app_state={})
        transport = FakeTransport()
        protocol.connection_made(transport)  # type: ignore[arg-type]
        protocol.data_received(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
        for _ in range(1000):  # bounded: the app answers within a few loop steps
            if protocol.cycle.response_complete:
                break
            await asyncio.sleep(0)
        protocol.connection_lost(None)
        return protocol, transport

    return asyncio.run(go())


def missing_attributes(owner: object, names: Sequence[str]) -> list[str]:
    return [name for name in names if not hasattr(owner, name)]


def test_the_protocol_state_gw_reads_is_still_there() -> None:
    protocol, transport = answered_protocol()
    assert transport.written.startswith(b"HTTP/1.1 200"), transport.written
    names = ["loop", "transport", "cycle", "scope", "headers", "pipeline", "logger"]
    missing = missing_attributes(protocol, names)
    assert not missing, f"HttpToolsProtocol lost {missing}: {revisit('protocol.py')}"
    assert isinstance(protocol.server_state.default_headers, list), revisit("protocol.py")
    assert protocol.cycle.scope["extensions"], (
        f"the request's scope lost gw's extensions: {revisit('protocol.py')}"
    )


def test_the_response_cycle_state_gw_reads_is_still_there() -> None:
    protocol, _ = answered_protocol()
    cycle = protocol.cycle
    assert isinstance(cycle, RequestResponseCycle)
    names = ["scope", "transport", "flow", "disconnected", "response_started",
             "response_complete", "chunked_encoding"]  # fmt: skip
    missing = missing_attributes(cycle, names)
    assert not missing, f"RequestResponseCycle lost {missing}: {revisit('direct_body.py')}"
    assert hasattr(cycle.flow, "write_paused"), f"FlowControl changed: {revisit('direct_body.py')}"
    # DirectBody writes chunks as send() does: chunked framing is still how it answers.
    assert cycle.chunked_encoding is True, revisit("direct_body.py")


@pytest.mark.parametrize("status", [400, 403, 408, 431])
def test_uvicorn_still_has_the_status_lines_gw_writes_refusals_with(status: int) -> None:
    lines: dict[int, bytes] = getattr(httptools_impl, "STATUS_LINE", {})
    assert lines.get(status, b"").startswith(b"HTTP/1.1 %d " % status), revisit(
        "closing_response.py"
    )


def test_a_parser_error_still_reaches_send_400_response() -> None:
    """uvicorn catches httptools' parser errors in data_received and answers through
    send_400_response, which gw replaces (and which stops a too-large head)."""

    async def go() -> bytes:
        config = uvicorn.Config(ok_app, log_config=None, lifespan="off", log_level="critical")
        protocol = gateway_protocol(5.0)(config=config, server_state=ServerState(), app_state={})
        transport = FakeTransport()
        protocol.connection_made(transport)  # type: ignore[arg-type]
        protocol.data_received(b"NOT HTTP AT ALL\r\n\r\n")
        protocol.connection_lost(None)
        return transport.written

    written = asyncio.run(go())
    head = written.partition(b"\r\n\r\n")[0]
    assert head.startswith(b"HTTP/1.1 400 "), written
    assert b"content-type: application/json" in head, revisit("protocol.py")


def test_uvicorn_config_selects_gws_protocol() -> None:
    config = uvicorn_config(ok_app, ServerConfig())
    config.load()
    selected = getattr(config, "http_protocol_class", None)
    assert isinstance(selected, type), f"uvicorn.Config changed: {revisit('server.py')}"
    assert issubclass(selected, GatewayProtocol), revisit("server.py")


def test_sigterm_is_kept_from_the_signals_uvicorn_re_raises() -> None:
    config = uvicorn.Config(ok_app, log_config=None)
    plain, graceful = uvicorn.Server(config), GracefulServer(config)
    plain.handle_exit(signal.SIGTERM, None)
    graceful.handle_exit(signal.SIGTERM, None)
    # uvicorn re-raises what handle_exit records; gw's override records nothing for SIGTERM.
    assert getattr(plain, "_captured_signals", None) == [signal.SIGTERM], (
        f"uvicorn no longer re-raises through _captured_signals: {revisit('server.py')}"
    )
    assert getattr(graceful, "_captured_signals", None) == []
    assert plain.should_exit, f"Server.should_exit changed: {revisit('server.py')}"
    assert graceful.should_exit


def test_gw_keeps_every_default_plugin_of_litestar_but_pydantics_and_attrs() -> None:
    """A default plugin a newer Litestar adds must not be dropped silently."""

    def kinds(plugins: Sequence[object]) -> list[type]:
        return [type(plugin) for plugin in plugins]

    litestar_own = [
        kind
        for kind in kinds(Litestar._get_default_plugins([]))
        if not kind.__module__.startswith(("litestar.plugins.pydantic", "litestar.plugins.attrs"))
    ]
    assert kinds(GatewayLitestar._get_default_plugins([])) == litestar_own, revisit(
        "litestar_app.py"
    )
    assert litestar_own  # not vacuous: msgspec's plugin at least


def test_a_request_over_the_servers_scope_alone_reads_what_gw_reads() -> None:
    """The fast path builds Litestar's Request without Litestar's routing state."""

    async def receive() -> Any:
        return {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        pass

    scope = {
        "type": "http", "method": "POST", "path": "/v1/chat/completions",
        "raw_path": b"/v1/chat/completions", "query_string": b"key=k", "root_path": "",
        "headers": [(b"host", b"127.0.0.1:8787"), (b"cookie", b"gw_session=s")],
        "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8787), "scheme": "http",
        "http_version": "1.1", "asgi": {"version": "3.0"}, "state": {},
    }  # fmt: skip
    request: Request[Any, Any, Any] = Request(scope, receive, send)  # type: ignore[arg-type]
    read = (
        request.method,
        request.url.path,
        request.headers.get("host"),
        request.cookies.get("gw_session"),
        request.client.host if request.client else None,
    )
    expected = ("POST", "/v1/chat/completions", "127.0.0.1:8787", "s", "127.0.0.1")
    assert read == expected, revisit("fast_path.py")

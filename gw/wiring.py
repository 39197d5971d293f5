"""The composition root: the one place that builds the parts of gw and connects them."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import msgspec
import uvicorn

from gw.adapters.aiohttp_transport import AiohttpTransport, build_session
from gw.adapters.directory import AdapterDirectory
from gw.adapters.http_transport import HttpTransport
from gw.adapters.httpx_transport import HttpxTransport, build_http_client
from gw.adapters.secrets import SecretResolver
from gw.config import Config, Snapshot, compile_snapshot, config_hash
from gw.environment import DATABASE_FILE_NAME, SERVER_FILE_NAME
from gw.errors import GatewayError
from gw.execution.accounts import AccountBook
from gw.execution.engine import Engine
from gw.execution.gateway import Gateway
from gw.execution.health import HealthBook
from gw.execution.latency import LatencyBook
from gw.execution.probes import Prober
from gw.server.admission import Admission
from gw.server.app import build_app
from gw.server.auth import Authenticator, AuthMode, is_loopback, resolve_mode
from gw.server.services import ServerServices
from gw.server.slow_clients import header_timeout_protocol
from gw.store.sqlite import SqliteStore
from gw.telemetry.recorder import TraceRecorder

log = logging.getLogger("gw")


class SystemClock:
    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()


class ServeError(Exception):
    """gw cannot start as configured; the message says why and what to do."""


class ServePlan(msgspec.Struct, frozen=True, kw_only=True):
    home: Path
    config: Config
    source: str
    environ: Mapping[str, str]


class SnapshotHolder:
    """The current snapshot; replaced whole, never changed in place (invariant 2)."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.current = snapshot

    def get(self) -> Snapshot:
        return self.current


def database_path(home: Path) -> Path:
    return home / DATABASE_FILE_NAME


def auth_mode_for(plan: ServePlan) -> AuthMode:
    host = plan.config.server.host
    mode = resolve_mode(plan.config.auth.mode, host, keys_exist=False)
    if mode == "open" and not is_loopback(host):
        raise ServeError(
            f"auth.mode is open but server.host {host} is not a loopback address; "
            "open mode is for loopback only: set auth.mode: keys or bind 127.0.0.1"
        )
    return mode


def bind_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def resolve_admin_key(config: Config, environ: Mapping[str, str]) -> str | None:
    if config.auth.admin_key is None:
        return None
    try:
        return SecretResolver(environ).resolve(config.auth.admin_key, field="auth.admin_key")
    except GatewayError as error:
        raise ServeError(error.message) from None


async def serve(plan: ServePlan) -> None:
    """Run gw until SIGINT/SIGTERM, then drain, flush traces and close the store."""
    mode = auth_mode_for(plan)
    admin_key = resolve_admin_key(plan.config, plan.environ)
    server_config = plan.config.server
    sock = bind_socket(server_config.host, server_config.port)
    address = sock.getsockname()
    clock = SystemClock()
    store = await SqliteStore.open(database_path(plan.home))
    revision = await store.record_revision(
        config_hash=config_hash(plan.config), source=plan.source, time=clock.time()
    )
    snapshots = SnapshotHolder(compile_snapshot(plan.config, revision=revision, source=plan.source))
    recorder = TraceRecorder(store)
    transport = build_transport(server_config.upstream_transport)
    health, latency = HealthBook(plan.config.health), LatencyBook()
    accounts = AccountBook(plan.config.health)
    directory = AdapterDirectory(transport, plan.environ)
    engine = Engine(
        directory, clock, asyncio.sleep, health=health, latency=latency, accounts=accounts
    )
    prober = Prober(directory, health, snapshots.get, clock, asyncio.sleep)
    services = ServerServices(
        gateway=Gateway(engine, recorder, clock, health=health, latency=latency, accounts=accounts),
        snapshot=snapshots.get,
        clock=clock,
        admission=Admission(server_config.max_concurrency, server_config.queue_timeout.seconds),
        authenticator=Authenticator(mode, admin_key),
        health=health,
        latency=latency,
        accounts=accounts,
    )
    server_file = plan.home / SERVER_FILE_NAME
    url = f"http://{_url_host(address[0])}:{address[1]}"

    async def announce() -> None:
        facts = {"url": url, "port": address[1], "pid": os.getpid(), "revision": revision}
        server_file.write_text(json.dumps({**facts, "host": address[0], "auth_mode": mode}))
        print(f"gw listening on {url} (revision {revision}, auth {mode}, config {plan.source})")
        sys.stdout.flush()

    async def close() -> None:
        # Runs inside uvicorn's lifespan shutdown: after SIGTERM, uvicorn re-raises the
        # signal once serve() returns, so cleanup placed after serve() would never run.
        with contextlib.suppress(FileNotFoundError):
            server_file.unlink()
        await prober.stop()
        await recorder.stop()
        if recorder.dropped:
            log.warning("%d traces were dropped (queue full or write errors)", recorder.dropped)
        await transport.close()
        await store.close()

    app = build_app(
        services, on_startup=[recorder.start, prober.start, announce], on_shutdown=[close]
    )
    config = uvicorn.Config(
        app,
        loop="none",
        # httptools plus a header-read deadline (gw/server/slow_clients.py), which also
        # runs between requests: a kept-alive connection idles min(header_timeout, 15 s).
        http=header_timeout_protocol(server_config.header_timeout.seconds),
        lifespan="on",
        log_level="warning",
        access_log=False,
        timeout_keep_alive=15,
        timeout_graceful_shutdown=30,
    )
    try:
        await uvicorn.Server(config).serve(sockets=[sock])
    finally:
        sock.close()


def build_transport(kind: str) -> HttpTransport:
    """The upstream HTTP client (call inside the running event loop)."""
    if kind == "httpx":
        return HttpxTransport(build_http_client())
    return AiohttpTransport(build_session())


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def run(plan: ServePlan) -> None:
    """Blocking entry point for ``gw serve``: uvloop when available."""
    try:
        import uvloop  # noqa: PLC0415  (optional speed-up, imported only when serving)
    except ImportError:  # pragma: no cover - uvicorn[standard] brings it on Linux and macOS
        asyncio.run(serve(plan))
    else:
        uvloop.run(serve(plan))

"""The composition root: the one place that builds the parts of gw and connects them."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import platform
import socket
import sys
import time
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import msgspec
import uvicorn

from gw import __version__
from gw.adapters.directory import AdapterDirectory
from gw.adapters.env_proxy import (
    ProxySettingError,
    describe_proxies,
    proxy_settings,
    public_proxies,
)
from gw.adapters.secrets import SecretResolver, vault_references
from gw.adapters.upstream_client import build_transport
from gw.config import Config, ConfigError, Snapshot, compile_snapshot, config_hash
from gw.config.catalog import ShippedCatalog, parse_catalog
from gw.config.redact import redacted
from gw.config.schema import ServerConfig
from gw.config.validate import SECRET_SCHEMES
from gw.environment import SERVER_FILE_NAME, database_path
from gw.errors import GatewayError
from gw.execution.accounts import AccountBook
from gw.execution.engine import Engine
from gw.execution.gateway import Gateway
from gw.execution.health import HealthBook
from gw.execution.latency import LatencyBook
from gw.execution.limits import TenantLimiter
from gw.execution.periods import period_label
from gw.execution.probes import Prober
from gw.reload import AppliedConfig, Reloader, WatchTask, read_applied
from gw.server.admission import Admission
from gw.server.app import build_app
from gw.server.auth import Authenticator, AuthMode, exposure_problem, resolve_mode
from gw.server.edges import edge_problem
from gw.server.graceful import GracefulServer
from gw.server.key_cache import KeyCache
from gw.server.services import ServerServices
from gw.server.slow_clients import header_timeout_protocol
from gw.server.status import RequestCounts, ServerFacts
from gw.store.sqlite import SqliteStore
from gw.telemetry.hub import QueueStats, TelemetryHub
from gw.telemetry.log_lines import install_log_handler
from gw.telemetry.metrics import GatewayMetrics
from gw.telemetry.otel import OtelUnavailableError, load_otel, require_otel
from gw.telemetry.otel_attributes import snapshot_addresses
from gw.telemetry.pruner import TracePruner
from gw.telemetry.request_log import RequestLog
from gw.telemetry.state_metrics import StateSources
from gw.vault import VAULT_FILE_NAME, Vault, VaultError

log = logging.getLogger("gw")
CATALOG_FILE = "catalog.yaml"


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
    # Where the config came from, to reload it (None: the built-in default, not watched)
    # with the same GW_* variables and flags on top.
    config_path: Path | None = None
    explicit: bool = False
    overrides: Mapping[str, Any] = msgspec.field(default_factory=dict)
    on_listening: Callable[[], None] | None = None  # once the server accepts requests


class SnapshotHolder:
    """The current snapshot; replaced whole, never changed in place (invariant 2)."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.current = snapshot

    def get(self) -> Snapshot:
        return self.current


def check_exposure(plan: ServePlan, admin_key: str | None) -> None:
    """Refuse to start beyond loopback in open mode, or without a strong admin key."""
    problem = exposure_problem(plan.config.auth.mode, reachable_as(plan), admin_key)
    if problem is not None:
        raise ServeError(problem)


def auth_mode_for(plan: ServePlan, *, keys_exist: bool) -> AuthMode:
    """``auth.mode`` when set; else ``open`` on a loopback bind while no active API key
    exists (provisional: see gw/server/auth.py), else ``keys``."""
    return resolve_mode(plan.config.auth.mode, reachable_as(plan), keys_exist=keys_exist)


def reachable_as(plan: ServePlan) -> str:
    """The bind address, as far as exposure goes: behind a trusted reverse proxy even a
    loopback bind serves whoever the proxy lets in, so it counts as exposed."""
    server = plan.config.server
    if server.trusted_proxies:
        return f"{server.host} behind server.trusted_proxies"
    return server.host


def write_server_file(
    path: Path, *, url: str, address: tuple[Any, ...], auth_mode: AuthMode
) -> None:
    """``server.json``, through which CLI commands find the running server; rewritten when
    an implicit ``open`` switches to ``keys``, so ``gw health`` knows to send a key. Only
    facts that hold for the process's life: the revision is ``gw status``'s to tell."""
    facts = {"url": url, "port": address[1], "pid": os.getpid()}
    path.write_text(json.dumps({**facts, "host": address[0], "auth_mode": auth_mode}))


async def build_authenticator(
    plan: ServePlan,
    admin_key: str | None,
    store: SqliteStore,
    clock: SystemClock,
    *,
    on_keys_mode: Callable[[], None],
) -> Authenticator:
    """API keys from ``store`` through the ≤1 s cache; an implicit ``open`` stays open only
    until a key exists, then ``on_keys_mode`` runs."""
    mode = auth_mode_for(plan, keys_exist=await store.count_active_keys(now=clock.time()) > 0)
    return Authenticator(
        mode,
        admin_key,
        keys=KeyCache(store, clock),
        clock=clock,
        open_until_keys=mode == "open" and plan.config.auth.mode is None,
        on_keys_mode=on_keys_mode,
    )


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


def resolve_admin_key(
    config: Config, environ: Mapping[str, str], vault: Mapping[str, str] | None = None
) -> str | None:
    if config.auth.admin_key is None:
        return None
    try:
        return SecretResolver(environ, vault).resolve(config.auth.admin_key, field="auth.admin_key")
    except GatewayError as error:
        raise ServeError(error.message) from None


def load_vault(plan: ServePlan) -> Mapping[str, str] | None:
    """The vault's secrets, read once at start when the config refers to any (``vault:``);
    None when it refers to none, so such a gw never touches the vault or the keyring."""
    references = vault_references(plan.config)
    if not references:
        return None
    try:
        return Vault(plan.home, plan.environ).read()
    except VaultError as error:
        fields = ", ".join(f"{field} is vault:{name}" for field, name in references.items())
        raise ServeError(f"{fields}, but the vault cannot be opened: {error}") from None


def check_edges(plan: ServePlan) -> None:
    """Refuse CORS and proxy settings that are unsafe or unreadable (gw/server/edges.py)."""
    server = plan.config.server
    problem = edge_problem(
        reachable_as(plan), server.cors_origins, server.trusted_proxies, plan.config.auth.mode
    )
    if problem is not None:
        raise ServeError(problem)


async def seeded_limiter(store: SqliteStore, clock: SystemClock) -> TenantLimiter:
    """Tenant limits, with today's and this month's spend read back from the ledger."""
    limits, wall = TenantLimiter(), clock.time()
    limits.seed(await store.tenant_spend(period_label("day", wall), period_label("month", wall)))
    return limits


def checked_start(
    plan: ServePlan,
) -> tuple[Mapping[str, str] | None, str | None, dict[str, str]]:
    """The vault, the admin key and the environment's proxy settings, once the settings
    that would expose gw, and proxy variables gw cannot use, are refused."""
    vault = load_vault(plan)
    admin_key = resolve_admin_key(plan.config, plan.environ, vault)
    check_edges(plan)
    proxies = checked_proxies(plan)
    check_exposure(plan, admin_key)
    return vault, admin_key, proxies


async def serve(plan: ServePlan) -> None:
    """Run gw until SIGINT/SIGTERM, then drain, flush traces and close the store."""
    vault, admin_key, proxies = checked_start(plan)
    server_config = plan.config.server
    sock = bind_socket(server_config.host, server_config.port)
    address = sock.getsockname()
    clock = SystemClock()
    store = await SqliteStore.open(database_path(plan.home))
    authenticator = await build_authenticator(
        plan, admin_key, store, clock, on_keys_mode=lambda: server_facts(auth_mode="keys")
    )
    revision, start_text = await record_start(plan, store, clock)
    shipped = shipped_catalog()
    snapshots = SnapshotHolder(
        compile_snapshot(plan.config, revision=revision, source=plan.source, shipped=shipped)
    )
    telemetry = with_request_log(TelemetryHub(store), snapshots)  # traces, usage, logs
    add_otel(telemetry, plan, snapshots)
    transport = build_transport(server_config.upstream_transport, proxies)
    health, latency = HealthBook(plan.config.health), LatencyBook()
    accounts = AccountBook(plan.config.health)
    directory = AdapterDirectory(transport, plan.environ, vault)
    engine = Engine(
        directory, clock, asyncio.sleep, health=health, latency=latency, accounts=accounts
    )
    prober = Prober(directory, health, snapshots.get, clock, asyncio.sleep)
    # Old traces are deleted in the background; the limits follow config reloads.
    pruner = TracePruner(store, lambda: snapshots.get().config.state, clock, asyncio.sleep)
    reloader = build_reloader(
        plan,
        snapshots,
        store=store,
        clock=clock,
        shipped=shipped,
        health=health,
        accounts=accounts,
        directory=directory,
        start_text=start_text,
    )
    counts = RequestCounts(telemetry.sink())  # for GET /admin/v1/status
    services = ServerServices(
        gateway=Gateway(
            engine,
            counts,
            clock,
            health=health,
            latency=latency,
            accounts=accounts,
            limits=await seeded_limiter(store, clock),
            usage=telemetry.usage,
        ),
        snapshot=snapshots.get,
        clock=clock,
        admission=Admission(server_config.max_concurrency, server_config.queue_timeout.seconds),
        authenticator=authenticator,
        health=health,
        latency=latency,
        accounts=accounts,
        usage=store,
        reloader=reloader,
        ready=store.ping,
        facts=status_facts(plan, store, clock, address, counts, proxies=proxies),
    )
    services.metrics = gateway_metrics(telemetry, services)  # GET /metrics
    server_file = plan.home / SERVER_FILE_NAME
    url = f"http://{_url_host(address[0])}:{address[1]}"
    server_facts = functools.partial(write_server_file, server_file, url=url, address=address)

    async def announce() -> None:
        server_facts(auth_mode=authenticator.mode)
        auth = "open until an API key exists" if authenticator.provisional else authenticator.mode
        print(start_banner(plan, url, revision, auth, proxies))
        sys.stdout.flush()
        if plan.on_listening is not None:
            plan.on_listening()

    async def close() -> None:
        # Runs inside uvicorn's lifespan shutdown: after SIGTERM, uvicorn re-raises the
        # signal once serve() returns, so cleanup placed after serve() would never run.
        await watch.stop()
        await asyncio.gather(prober.stop(), pruner.stop())
        await telemetry.stop()  # every queued trace and usage row is written
        await transport.close()
        await store.close()
        # Last: while server.json names this pid, `gw state restore` refuses to replace the
        # database, and until here the queues above were still writing to it.
        with contextlib.suppress(FileNotFoundError):
            server_file.unlink()

    watch = WatchTask(reloader)
    app = build_app(
        services,
        on_startup=[*telemetry.starts, prober.start, pruner.start, watch.start, announce],
        on_shutdown=[close],
    )
    config = uvicorn_config(app, server_config)
    try:
        await GracefulServer(config).serve(sockets=[sock])
    finally:
        sock.close()


def add_otel(telemetry: TelemetryHub, plan: ServePlan, snapshots: SnapshotHolder) -> None:
    """OpenTelemetry spans of every request over OTLP/HTTP when ``telemetry.otlp.enabled``
    (gw/telemetry/otel.py); read at start, a reload does not change it. Its queue is
    reported as ``otlp`` (gw_telemetry_queue_depth / gw_telemetry_dropped_total)."""
    otlp = plan.config.telemetry.otlp
    if not otlp.enabled:
        return
    headers = check_otel(plan)
    exporter = load_otel(otlp, headers=headers, server_address=snapshot_addresses(snapshots.get))
    telemetry.add(exporter, start=exporter.start, stop=exporter.stop)
    telemetry.report_queue("otlp", lambda: QueueStats(exporter.queue_depth, exporter.dropped))


def check_otel(plan: ServePlan) -> dict[str, str]:
    """Refuse ``telemetry.otlp.enabled`` without the ``otel`` extra installed, or with a
    header whose ``env:``/``vault:`` reference does not resolve; the headers to send, with
    their references resolved (none when export is off). ``run`` calls it before anything
    is opened, so a refusal leaves nothing behind; the vault is read only when a header
    refers to it."""
    otlp = plan.config.telemetry.otlp
    if not otlp.enabled:
        return {}
    try:
        require_otel()
    except OtelUnavailableError as error:
        raise ServeError(str(error)) from None
    in_vault = any(field.startswith("telemetry.otlp.") for field in vault_references(plan.config))
    resolver = SecretResolver(plan.environ, load_vault(plan) if in_vault else None)
    headers: dict[str, str] = {}
    for name, value in otlp.headers.items():
        if not value.startswith(SECRET_SCHEMES):  # a literal, allowed where it is no credential
            headers[name] = value
            continue
        try:
            headers[name] = resolver.resolve(value, field=f"telemetry.otlp.headers.{name}")
        except GatewayError as error:
            raise ServeError(error.message) from None
    return headers


def with_request_log(telemetry: TelemetryHub, snapshots: SnapshotHolder) -> TelemetryHub:
    """``telemetry`` plus one stderr line per finished request, as the current snapshot's
    ``telemetry.request_log`` says (gw/telemetry/request_log.py)."""
    request_log = RequestLog(sys.stderr, lambda: snapshots.get().config.telemetry.request_log)
    telemetry.add(request_log, start=request_log.start, stop=request_log.stop)
    telemetry.report_queue(
        "request_log", lambda: QueueStats(request_log.queue_depth, request_log.dropped)
    )
    return telemetry


def gateway_metrics(
    telemetry: TelemetryHub, services: ServerServices
) -> Callable[[str | None], bytes]:
    """Prometheus metrics (gw/telemetry/metrics.py), fed every trace and reading the live
    parts of ``services`` at scrape time; built even while ``telemetry.metrics`` is off,
    so a reload can turn /metrics on."""
    reloader = services.reloader
    sources = StateSources(
        snapshot=services.snapshot,
        monotonic=services.clock.monotonic,
        version=__version__,
        python=platform.python_version(),
        health=services.health,
        admission=services.admission,
        reloads=None if reloader is None else lambda: reloader.status,
        queues=telemetry.queues,
    )
    metrics = GatewayMetrics(services.snapshot, sources)
    telemetry.add(metrics.requests)
    return metrics.render


def status_facts(
    plan: ServePlan,
    store: SqliteStore,
    clock: SystemClock,
    address: tuple[Any, ...],
    counts: RequestCounts,
    *,
    proxies: Mapping[str, str],
) -> ServerFacts:
    """What ``GET /admin/v1/status`` reports beside the snapshot and the reloader."""
    return ServerFacts(
        url=f"http://{_url_host(address[0])}:{address[1]}",
        host=str(address[0]),
        port=int(address[1]),
        pid=os.getpid(),
        version=__version__,
        started_at=clock.time(),
        started_mono=clock.monotonic(),
        database=store.path,
        vault_file=plan.home / VAULT_FILE_NAME,
        schema_version=store.schema_version,
        counts=counts,
        upstream_proxies=public_proxies(proxies),
    )


def uvicorn_config(app: Any, server_config: ServerConfig) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        loop="none",
        # httptools plus a header-read deadline (gw/server/slow_clients.py), which also
        # runs between requests: a kept-alive connection idles min(header_timeout, 15 s).
        http=header_timeout_protocol(server_config.header_timeout.seconds),
        ws="none",  # upgrades get 403 from the protocol (gw/server/no_websockets.py)
        lifespan="on",
        log_level="warning",
        access_log=False,
        timeout_keep_alive=15,
        timeout_graceful_shutdown=int(server_config.drain_timeout.seconds),
        # X-Forwarded-For only from configured proxies (gw/server/edges.py); none: ignored.
        proxy_headers=bool(server_config.trusted_proxies),
        forwarded_allow_ips=list(server_config.trusted_proxies),
    )


def build_reloader(
    plan: ServePlan,
    snapshots: SnapshotHolder,
    *,
    store: SqliteStore,
    clock: SystemClock,
    shipped: ShippedCatalog,
    health: HealthBook,
    accounts: AccountBook,
    directory: AdapterDirectory,
    start_text: str | None,
) -> Reloader:
    """Reloads of the config file into new snapshots; health, latency and account locks
    carry over for the targets that remain (the books live outside the snapshot)."""

    def apply(snapshot: Snapshot) -> None:
        snapshots.current = snapshot  # one assignment: requests pinned the old one
        health.reconfigure(snapshot.config.health)
        health.retain(route_target_keys(snapshot))
        accounts.reconfigure(snapshot.config.health)

    async def record(applied: AppliedConfig) -> int:
        return await store.record_revision(
            config_hash=applied.hash,
            source=applied.source,
            time=clock.time(),
            content=applied.text,
            redacted=redacted_json(applied.config),
        )

    def compile_config(config: Config, revision: int, source: str) -> Snapshot:
        return compile_snapshot(config, revision=revision, source=source, shipped=shipped)

    return Reloader(
        path=plan.config_path or plan.home / "gw.yaml",
        explicit=plan.explicit,
        overrides=plan.overrides,
        current=snapshots.get,
        apply=apply,
        record_revision=record,
        compile_config=compile_config,
        now=clock.time,
        stored_revision=store.get_revision,
        prepare=functools.partial(refresh_vault, plan, directory),
        start_text=start_text,
    )


async def refresh_vault(plan: ServePlan, directory: AdapterDirectory, config: Config) -> None:
    """A reload's check that the vault holds every ``vault:NAME`` the new config names.
    The vault is read again, so `gw vault set NAME` and then an edit that uses it needs no
    restart; a config that names no vault secret leaves the vault alone."""
    references = vault_references(config)
    if not references:
        return
    source = str(plan.config_path or plan.home / "gw.yaml")
    try:
        secrets = await asyncio.to_thread(Vault(plan.home, plan.environ).read)
    except VaultError as error:
        field, name = next(iter(references.items()))
        reason = f"is vault:{name}, but the vault cannot be opened: {error}"
        raise ConfigError(source, field, reason) from None
    for field, name in references.items():
        if name not in secrets:
            reason = (
                f"is vault:{name}, and the vault holds no secret named {name}; run "
                f"`gw vault set {name}`, then save the config file again"
            )
            raise ConfigError(source, field, reason)
    directory.use_vault(secrets)


async def record_start(
    plan: ServePlan, store: SqliteStore, clock: SystemClock
) -> tuple[int, str | None]:
    """The revision gw starts at (source ``start``), recorded with the file's text as it is
    now when that still loads to the config being started; that revision and that text
    (None: the built-in default, or the file changed since ``gw serve`` read it, an edit
    the watch applies once it is set: ``Reloader.watch``)."""
    digest, text = config_hash(plan.config), None
    if plan.config_path is not None:
        with contextlib.suppress(ConfigError):
            loaded, text = read_applied(
                plan.config_path, explicit=plan.explicit, overrides=plan.overrides
            )
            if config_hash(loaded.config) != digest:
                text = None
    revision = await store.record_revision(
        config_hash=digest,
        source="start",
        time=clock.time(),
        content=text,
        redacted=redacted_json(plan.config),
    )
    return revision, text


def redacted_json(config: Config) -> str:
    """The config as stored beside each revision: redacted (gw/config/redact.py), JSON."""
    return msgspec.json.encode(redacted(config)).decode()


def route_target_keys(snapshot: Snapshot) -> set[str]:
    return {f"{t.provider}/{t.model}" for route in snapshot.routes.values() for t in route.targets}


def shipped_catalog() -> ShippedCatalog:
    """The model catalog gw ships (``gw/catalog.yaml``, package data): prices, windows
    and capabilities by provider kind, under config's own ``models:`` entries."""
    text = resources.files("gw").joinpath(CATALOG_FILE).read_text(encoding="utf-8")
    try:
        return parse_catalog(text, f"gw/{CATALOG_FILE}")
    except ConfigError as error:  # pragma: no cover - a test parses the shipped file
        raise ServeError(f"the shipped model catalog is broken (a gw bug): {error}") from None


def checked_proxies(plan: ServePlan) -> dict[str, str]:
    """The environment's proxy settings (gw/adapters/env_proxy.py); a proxy variable
    (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY) gw cannot use is refused."""
    try:
        return proxy_settings(plan.environ)
    except ProxySettingError as error:
        raise ServeError(str(error)) from None


def start_banner(
    plan: ServePlan, url: str, revision: int, auth: str, proxies: Mapping[str, str]
) -> str:
    """What ``gw serve`` prints once it listens: where, which config, and the upstream
    proxies the environment sets, if any."""
    lines = [f"gw listening on {url} (revision {revision}, auth {auth}, config {plan.source})"]
    if proxied := describe_proxies(public_proxies(proxies)):
        lines.append(f"upstream proxy (from the environment): {proxied}")
    return "\n".join(lines)


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def run(plan: ServePlan) -> None:
    """Blocking entry point for ``gw serve``: uvloop when available; gw's log lines on
    stderr in the request log's format meanwhile (gw/telemetry/log_lines.py)."""
    check_otel(plan)  # before anything is opened: a store left open would hold the exit
    uninstall = install_log_handler(plan.config.telemetry.request_log, sys.stderr)
    try:
        _run_loop(plan)
    finally:
        uninstall()


def _run_loop(plan: ServePlan) -> None:
    try:
        import uvloop  # noqa: PLC0415  (optional speed-up, imported only when serving)
    except ImportError:  # pragma: no cover - uvicorn[standard] brings it on Linux and macOS
        asyncio.run(serve(plan))
    else:
        uvloop.run(serve(plan))

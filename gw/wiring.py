"""The composition root: the one place that builds the parts of gw and connects them."""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import functools
import json
import os
import socket
import sys
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from gw import __version__
from gw.adapters.directory import AdapterDirectory
from gw.config.credentials import CredentialReport
from gw.config.validate import config_warnings
from gw.environment import SERVER_FILE_NAME, database_path
from gw.execution.accounts import AccountBook
from gw.execution.breaker_share import LOCAL_BREAKERS
from gw.execution.engine import Engine
from gw.execution.gateway import Gateway
from gw.execution.health import HealthBook
from gw.execution.latency import LatencyBook
from gw.execution.probes import Prober
from gw.fleet.breaker_mirror import BreakerMirror, MirrorCounts
from gw.fleet.gateway_id import gateway_id
from gw.reload import WatchTask
from gw.server.admin.status import RequestCounts, ServerFacts
from gw.server.admission import Admission
from gw.server.app import build_app
from gw.server.auth import Authenticator, AuthMode, resolve_mode
from gw.server.inference.idempotency import Idempotency
from gw.server.key_cache import KeyCache
from gw.server.runtime.server import GracefulServer, uvicorn_config
from gw.server.services import ServerServices
from gw.startup.checks import check_otel, checked_start, shipped_catalog
from gw.startup.fleet import fleet_duties
from gw.startup.limits import seeded_limiter, shared_limits
from gw.startup.plan import ServeError, ServePlan, SnapshotHolder, SystemClock, reachable_as
from gw.startup.reloading import build_reloader, start_snapshot
from gw.startup.response_cache import response_cache
from gw.startup.responses_state import responses_state
from gw.startup.sticky import sticky_sessions
from gw.startup.store_health import StoreHealth
from gw.startup.telemetry import add_otel, gateway_metrics, with_request_log
from gw.startup.usage_recovery import journaled_telemetry
from gw.store.admin_token import admin_token_path, write_admin_token
from gw.store.open import open_store
from gw.store.port import StateStore
from gw.store.serve_lock import ServeLock, StateDirBusyError
from gw.telemetry.hub import TelemetryHub
from gw.telemetry.log_lines import install_log_handler
from gw.telemetry.pruner import TracePruner
from gw.upstream_http.env_proxy import describe_proxies, public_proxies
from gw.upstream_http.reply_budget import ReplyBudget
from gw.upstream_http.upstream_client import build_transport
from gw.vault import VAULT_FILE_NAME
from gw.vault.content_seal import ContentSeal


def auth_mode_for(plan: ServePlan, *, keys_exist: bool) -> AuthMode:
    """``auth.mode`` when set; else ``open`` on a loopback bind while no active API key
    exists (provisional: see gw/server/auth.py), else ``keys``."""
    return resolve_mode(plan.config.auth.mode, reachable_as(plan), keys_exist=keys_exist)


def write_server_file(
    path: Path, *, url: str, address: tuple[Any, ...], auth_mode: AuthMode
) -> None:
    """``server.json``, through which CLI commands find the running server; rewritten when
    an implicit ``open`` switches to ``keys``, so ``gw health`` knows to send a key. Only
    facts that hold for the process's life: the revision is ``gw status``'s to tell."""
    facts = {"url": url, "port": address[1], "pid": os.getpid()}
    # Written beside and renamed over: a CLI reading it meanwhile sees the old or the new.
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temp.write_text(json.dumps({**facts, "host": address[0], "auth_mode": auth_mode}))
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


async def build_authenticator(
    plan: ServePlan,
    admin_key: str | None,
    store: StateStore,
    clock: SystemClock,
    *,
    on_keys_mode: Callable[[], None],
) -> Authenticator:
    """API keys from ``store`` through the ≤1 s cache; an implicit ``open`` stays open only
    until a key exists, then ``on_keys_mode`` runs. Writes a new local admin token to
    ``<state-dir>/admin-token`` (gw/store/admin_token.py) at every start, under the state
    directory's lock: the CLI reads it, and a copy of the last one is worthless now."""
    local_token = write_admin_token(plan.home)
    mode = auth_mode_for(plan, keys_exist=await store.count_active_keys(now=clock.time()) > 0)
    return Authenticator(
        mode,
        admin_key,
        keys=KeyCache(store, clock),
        clock=clock,
        open_until_keys=mode == "open" and plan.config.auth.mode is None,
        on_keys_mode=on_keys_mode,
        local_token=local_token,
        local_token_path=str(admin_token_path(plan.home)),
    )


def hold_state_dir(home: Path) -> ServeLock:
    """The state directory's serve lock (gw/store/serve_lock.py), or a ``ServeError``
    naming the server that holds it."""
    lock = ServeLock(home)
    try:
        lock.acquire()
    except StateDirBusyError:
        holder = ""
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            facts = json.loads((home / SERVER_FILE_NAME).read_text())
            holder = f" (pid {int(facts['pid'])}, {facts['url']})"
        raise ServeError(
            f"another gw serve{holder} is running with the state directory {home}; "
            "stop it first, or give this one its own --state-dir"
        ) from None
    except OSError as error:
        raise ServeError(f"cannot lock the state directory {home}: {error}") from None
    return lock


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


async def serve(plan: ServePlan) -> None:
    """Run gw until SIGINT/SIGTERM, then drain, flush traces and close the store."""
    # A fatal signal (SIGBUS from a memory-mapped file gone bad, say) leaves a traceback
    # on stderr rather than nothing.
    faulthandler.enable()
    vault, admin_key, proxies = checked_start(plan)
    await _serve(plan, vault, admin_key, proxies)


def _idempotency(
    seal: ContentSeal, store: StateStore, gateway: Gateway, clock: SystemClock
) -> Idempotency:
    return Idempotency(store.idempotency_keys(), seal, gateway, clock)


async def _serve(
    plan: ServePlan,
    vault: Mapping[str, str] | None,
    admin_key: str | None,
    proxies: dict[str, str],
) -> None:
    # This gateway's id names its traces, usage rows, run and breaker notes.
    server_config, gateway_name = plan.config.server, serving_gateway(plan)
    # Redis first: a gateway that cannot reach the fleet's limits does not take the port.
    shared, sock = await shared_limits(plan), bind_socket(server_config.host, server_config.port)
    address = sock.getsockname()
    clock = SystemClock()
    store = await open_store(plan.config.state.url, database_path(plan.home))
    authenticator = await build_authenticator(
        plan, admin_key, store, clock, on_keys_mode=lambda: server_facts(auth_mode="keys")
    )
    shipped = shipped_catalog()
    snapshots = SnapshotHolder(await start_snapshot(plan, store, clock, shipped))
    # What a killed run left in the usage journal goes back first (budgets read it below).
    telemetry = with_request_log(
        await journaled_telemetry(plan.home, store, gateway_name), snapshots
    )
    add_otel(telemetry, plan, snapshots)
    transport = build_transport(
        server_config.upstream_transport,
        proxies,
        reply_budget(plan),
        max_connections=server_config.upstream_max_connections,
        max_per_host=server_config.upstream_max_connections_per_host,
    )
    (health, breakers), latency = health_book(plan, clock, snapshots, gateway_name), LatencyBook()
    # One seal for all content gw holds (background jobs, Idempotency-Key answers) and the
    # sticky sessions' digest key: the vault identity is found, or made, once.
    accounts, seal = AccountBook(plan.config.health), ContentSeal(plan.home, plan.environ)
    directory = AdapterDirectory(transport, plan.environ, vault)
    engine = Engine(
        directory, clock, asyncio.sleep, health=health, latency=latency, accounts=accounts
    )
    prober = Prober(directory, health, snapshots.get, clock, asyncio.sleep)
    pruner, store_health = store_keepers(
        store, snapshots, clock, telemetry, shared=plan.config.state.url is not None
    )
    reloader = build_reloader(
        plan,
        snapshots,
        store=store,
        clock=clock,
        shipped=shipped,
        health=health,
        accounts=accounts,
        directory=directory,
        start_text=plan.config_text,
        on_applied=pruner.settings_changed,
        fleet=store.gateways() is not None,
    )
    server_file, url = plan.home / SERVER_FILE_NAME, f"http://{_url_host(address[0])}:{address[1]}"
    fleet = fleet_duties(  # with state.url: follow the fleet's config, join its registry
        plan, store, reloader, snapshots, ready=store_health.check, gateway_id=gateway_name,
        url=url, clock=clock,
    )  # fmt: skip
    # Requests counted for GET /admin/v1/status; the response cache, with what is at rest.
    counts, (cache, at_rest) = (
        RequestCounts(telemetry.sink()),
        await response_cache(plan, store, seal, clock),
    )
    gateway = Gateway(
        engine,
        counts,
        clock,
        health=health,
        latency=latency,
        accounts=accounts,
        limits=await seeded_limiter(store, clock, shared),
        usage=telemetry.usage,
        gateway=gateway_name,
        cache=cache,
        at_rest=at_rest,
        sticky=sticky_sessions(plan, seal, clock),
    )
    # What previous_response_id follows, and the background Responses jobs.
    idempotency = _idempotency(seal, store, gateway, clock)
    links, background = responses_state(
        plan, store, gateway, seal=seal, telemetry=telemetry, snapshots=snapshots, clock=clock
    )
    services = ServerServices(
        gateway=gateway,
        snapshot=snapshots.get,
        clock=clock,
        admission=Admission(server_config.max_concurrency, server_config.queue_timeout.seconds),
        authenticator=authenticator,
        health=health,
        latency=latency,
        accounts=accounts,
        usage=store,
        reloader=reloader,
        ready=store_health.check,
        facts=status_facts(
            plan,
            store,
            clock,
            address,
            counts,
            proxies=proxies,
            watched=(store_health, pruner),
            journal=telemetry.journal_report,
            losses=telemetry.losses_report,
            fleet=None if fleet is None else fleet.view,
        ),
        background=background,
        response_links=links,
        credentials=directory.check_credentials,
        idempotency=idempotency,
    )
    services.metrics = gateway_metrics(  # GET /metrics
        telemetry,
        services,
        breaker_sharing=_counts(breakers),
        limits_fallback=None if shared is None else shared.fallback_counts,
    )
    server_facts = functools.partial(write_server_file, server_file, url=url, address=address)

    async def announce() -> None:
        server_facts(auth_mode=authenticator.mode)
        checked = directory.check_credentials(plan.config)
        print(
            start_banner(
                plan, url, snapshots.current.revision, authenticator, proxies, credentials=checked
            )
        )
        sys.stdout.flush()
        if plan.on_listening is not None:
            plan.on_listening()

    async def close() -> None:
        # Runs inside uvicorn's lifespan shutdown: after SIGTERM, uvicorn re-raises the
        # signal once serve() returns, so cleanup placed after serve() would never run.
        await watch.stop()
        # Running background jobs get the drain time too, then end (traced) before the store.
        await asyncio.gather(
            prober.stop(),
            *([breakers.stop()] if breakers is not None else []),
            *([fleet.stop()] if fleet is not None else []),  # unregistered: not "gone"
            pruner.stop(),
            store_health.stop(),
            authenticator.stop(),
            background.worker.stop(server_config.drain_timeout.seconds),
            idempotency.aclose(),  # keys let go by the last requests, before the store
            at_rest.drain(),  # cached answers still being sealed into the store
        )
        await telemetry.stop()  # every queued trace and usage row is written
        await transport.close()
        await store.close()
        # Last: while server.json names this pid, `gw state restore` refuses to replace the
        # database, and until here the queues above were still writing to it.
        # The admin token dies with this process; the state directory's lock (held until
        # the process ends) means no other server wrote it since.
        for path in (server_file, admin_token_path(plan.home)):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    watch = WatchTask(reloader)
    app = build_app(
        services,
        on_startup=[
            *telemetry.starts,
            *([breakers.start] if breakers is not None else []),
            prober.start,
            pruner.start,
            store_health.start,
            background.worker.start,
            watch.start,
            *([fleet.start] if fleet is not None else []),
            announce,
            authenticator.start,
        ],
        on_shutdown=[close, gateway.aclose],  # then the limits' last settles are written
    )
    config = uvicorn_config(app, server_config)
    try:
        await GracefulServer(config).serve(sockets=[sock])
    finally:
        sock.close()


def serving_gateway(plan: ServePlan) -> str:
    """This run's gateway id (gw/fleet/gateway_id.py): ``GW_GATEWAY_ID`` or a fresh one."""
    try:
        return gateway_id(plan.environ)
    except ValueError as exc:
        raise ServeError(str(exc)) from None


def health_book(
    plan: ServePlan, clock: SystemClock, snapshots: SnapshotHolder, gateway: str
) -> tuple[HealthBook, BreakerMirror | None]:
    """Targets' health and breakers; with ``state.redis_url`` the breakers are shared by
    the fleet through the mirror returned beside it (to start and stop), this run of gw
    serve named by ``gateway``."""
    breakers = shared_breakers(plan, gateway, clock, snapshots)
    health = HealthBook(plan.config.health, share=breakers or LOCAL_BREAKERS)
    if breakers is not None:
        breakers.attach(health)
    return health, breakers


def shared_breakers(
    plan: ServePlan, gateway_id: str, clock: SystemClock, snapshots: SnapshotHolder
) -> BreakerMirror | None:
    """With ``state.redis_url``: the circuit breakers this gateway (``gateway_id``, one
    per run) shares with the fleet through Redis (gw/fleet/redis_health.py); None without."""
    url = plan.config.state.redis_url
    if url is None:
        return None
    # Imported only for a fleet: redis-py is not loaded by a gateway alone.
    from gw.fleet.redis_health import redis_breakers  # noqa: PLC0415

    def linger() -> float:
        return snapshots.get().config.health.trial_timeout.seconds

    return redis_breakers(url, gateway_id, clock, asyncio.sleep, linger=linger)


def _counts(breakers: BreakerMirror | None) -> MirrorCounts | None:
    return None if breakers is None else breakers.counts


def reply_budget(plan: ServePlan) -> ReplyBudget:
    """The memory whole upstream answers may take (gw/upstream_http/reply_budget.py); read at
    start, as the transport is built once."""
    server = plan.config.server
    return ReplyBudget(server.max_upstream_body_bytes.bytes, server.upstream_buffer_budget.bytes)


def store_keepers(
    store: StateStore,
    snapshots: SnapshotHolder,
    clock: SystemClock,
    telemetry: TelemetryHub,
    *,
    shared: bool,
) -> tuple[TracePruner, StoreHealth]:
    """Old traces deleted in the background (the limits follow config reloads), and the
    check of whether the store can be written (/readyz: gw/startup/store_health.py; a
    ``shared`` store's outage leaves the gateway ready while its usage spool has room)."""
    pruner = TracePruner(store, lambda: snapshots.get().config.state, clock, asyncio.sleep)
    usage = telemetry.usage
    spool_full = (lambda: usage.spool_full) if shared else None
    return pruner, StoreHealth(store, lambda: usage.failing, spool_full=spool_full)


def status_facts(
    plan: ServePlan,
    store: StateStore,
    clock: SystemClock,
    address: tuple[Any, ...],
    counts: RequestCounts,
    *,
    proxies: Mapping[str, str],
    journal: Callable[[], dict[str, object] | None] | None = None,
    losses: Callable[[], dict[str, object] | None] | None = None,
    watched: tuple[StoreHealth, TracePruner],
    fleet: Callable[[], Awaitable[list[dict[str, Any]]]] | None = None,
) -> ServerFacts:
    """What ``GET /admin/v1/status`` reports beside the snapshot and the reloader."""
    health, pruner = watched
    return ServerFacts(
        url=f"http://{_url_host(address[0])}:{address[1]}",
        host=str(address[0]),
        port=int(address[1]),
        pid=os.getpid(),
        version=__version__,
        started_at=clock.time(),
        started_mono=clock.monotonic(),
        database=store.location,
        database_size=store.size_bytes,
        vault_file=plan.home / VAULT_FILE_NAME,
        schema_version=store.schema_version,
        counts=counts,
        upstream_proxies=public_proxies(proxies),
        usage_journal=journal,
        trace_losses=losses,
        store_problem=lambda: health.problem,
        prune_rounds=lambda: pruner.rounds,
        fleet=fleet,
    )


def start_banner(
    plan: ServePlan,
    url: str,
    revision: int,
    authenticator: Authenticator,
    proxies: Mapping[str, str],
    *,
    credentials: CredentialReport | None = None,
) -> str:
    """What ``gw serve`` prints once it listens: where, which config, what will not work
    (providers without usable credentials and the routes that fall through because of it),
    and the upstream proxies the environment sets, if any."""
    auth = "open until an API key exists" if authenticator.provisional else authenticator.mode
    lines = [f"gw listening on {url} (revision {revision}, auth {auth}, config {plan.source})"]
    unusable = credentials.warnings() if credentials is not None else []
    warnings = [*config_warnings(plan.config), *unusable]
    lines += [f"warning: {warning}" for warning in warnings]
    if proxied := describe_proxies(public_proxies(proxies)):
        lines.append(f"upstream proxy (from the environment): {proxied}")
    return "\n".join(lines)


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def run(plan: ServePlan) -> None:
    """Blocking entry point for ``gw serve``: uvloop when available; gw's log lines on
    stderr in the request log's format meanwhile (gw/telemetry/log_lines.py)."""
    # First: a second gw serve on this state directory stops here, before it reads the
    # vault or the keyring. The process's end drops the lock, whatever ends it.
    lock = hold_state_dir(plan.home)
    try:
        check_otel(plan)  # before anything is opened: a store left open would hold the exit
        uninstall = install_log_handler(plan.config.telemetry.request_log, sys.stderr)
        try:
            _run_loop(plan)
        finally:
            uninstall()
    finally:
        lock.release()


def _run_loop(plan: ServePlan) -> None:
    try:
        import uvloop  # noqa: PLC0415  (optional speed-up, imported only when serving)
    except ImportError:  # pragma: no cover - uvicorn[standard] brings it on Linux and macOS
        asyncio.run(serve(plan))
    else:
        uvloop.run(serve(plan))

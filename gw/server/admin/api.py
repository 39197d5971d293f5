"""The admin API (``/admin/v1``): what this gateway observes about its upstreams.

Never anonymous, in either auth mode (gw/server/auth.py): a caller with neither a valid
key nor the local admin token gets 401 ``authentication_failed``, and one whose key lacks
the scope a route needs 403 ``permission_denied`` naming it: ``admin:read`` for the reads,
``admin:config`` for a rollback (``admin``, the admin key ``auth.admin_key`` and the local
admin token hold both). Errors take the OpenAI shape.

``GET /admin/v1/health`` (what ``gw health`` shows)::

    {"now": 1773583323.12,            // wall clock, epoch seconds
     "revision": 3,                   // the config revision the targets come from
     "targets": [{"provider", "model", "routes": ["chat", ...],
                  "status": "healthy" | "degraded" | "unhealthy", "reason",
                  "breaker": "closed" | "open" | "half_open",
                  "consecutive_failures", "window_calls", "window_failures", "openings",
                  "cooldown_until": epoch seconds | null, "cooldown_remaining_s": s | null,
                  "trial_in_flight",
                  "latency": {"total_ms", "ttft_ms", "samples"} | null,
                  "last_probe_ok": bool | null}],
     "accounts": [{"provider", "account",
                   "locks": [{"model", "locked_until", "remaining_s", "reason"}]}],
     "credentials": {"gaps": [{"provider", "account" | null, "field", "reason"}],
                     "unusable": ["openai", ...],   // no account has usable credentials
                     "falls_through": [{"route", "strategy", "target", "first",
                                        "next": ["provider/model", ...]}]}}

Targets are those of the snapshot's routes, in config order, then any other target gw has
seen (addressed directly as ``provider/model``), by name. A target whose every account is
locked reads ``unhealthy`` with the lock as its reason, as routing sees it. Only names,
states and numbers are reported: never a key, a base URL or a header.

``GET /admin/v1/status`` (what ``gw status`` shows): address, pid, version, uptime, auth
mode, the config file's state (last error included), store, vault and request counts;
shape in gw/server/admin/status.py.

``POST /admin/v1/config/rollback`` ``{"revision": N}``: writes revision N's stored file
text back to the config file (atomically) and applies it as a new revision, source
``rollback``; answers ``{"revision" (now running), "rolled_back_to", "applied"}``
(``applied`` false when N is the config already running). An unknown N is 400
``invalid_request``; a revision without stored text (the built-in default, or recorded by
an older gw) or one that no longer loads is 409 ``conflict``, the file untouched.

``GET /admin/v1/usage?by=tenant|model|key|day|route|provider&since=7d&tenant=T`` (what
``gw usage --json`` prints, same shape: ``gw/store/usage.py``): the usage ledger grouped
by ``by`` (default ``model``), from ``since`` (a duration back from now or a date; default:
all) on. It needs the ``usage:read`` scope (``admin`` holds it): an admin may filter by
``tenant``; a key without ``admin`` reads only its own tenant's usage.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import msgspec
from litestar import Response, get, post
from litestar.handlers import HTTPRouteHandler

from gw.config.credentials import CredentialReport
from gw.config.schema import Config
from gw.config.snapshot import Snapshot
from gw.config.switches import switch_sentence
from gw.errors import ConflictError, GatewayError, InvalidRequestError, PermissionDeniedError
from gw.execution.accounts import AccountBook, AccountLock
from gw.execution.health import BreakerState, HealthBook, HealthStatus, TargetHealth
from gw.execution.latency import LatencyAverage, LatencyBook
from gw.server.admin.status import status_report
from gw.server.auth import Principal, require_scope
from gw.server.body import read_body
from gw.server.responses import JSON, gw_headers, openai_error_response
from gw.server.services import HttpRequest, ServerServices
from gw.store.usage import USAGE_GROUPS, UsageGroup, UsageTotals, parse_since, report_json

DEFAULT_USAGE_GROUP: UsageGroup = "model"


class Now(msgspec.Struct, frozen=True, kw_only=True):
    """One instant on both clocks: the books keep monotonic deadlines, users read wall time."""

    wall: float
    mono: float

    def to_wall(self, deadline: float) -> float:
        """A monotonic deadline as epoch seconds."""
        return round(self.wall + (deadline - self.mono), 3)

    def remaining(self, deadline: float) -> float:
        """Seconds until a monotonic deadline, never negative."""
        return round(max(0.0, deadline - self.mono), 3)


class LatencyView(msgspec.Struct, frozen=True, kw_only=True):
    total_ms: float | None
    ttft_ms: float | None
    samples: int


class TargetView(msgspec.Struct, frozen=True, kw_only=True):
    provider: str
    model: str
    routes: tuple[str, ...]
    status: HealthStatus
    reason: str
    breaker: BreakerState
    consecutive_failures: int
    window_calls: int
    window_failures: int
    openings: int
    cooldown_until: float | None
    cooldown_remaining_s: float | None
    trial_in_flight: bool
    latency: LatencyView | None
    last_probe_ok: bool | None
    # An operator's switch on it, its provider or its breaker (gw/config/switches.py),
    # in words; a target switched off in only some routes names them.
    switched: str | None = None


class LockView(msgspec.Struct, frozen=True, kw_only=True):
    model: str
    locked_until: float
    remaining_s: float
    reason: str


class AccountView(msgspec.Struct, frozen=True, kw_only=True):
    provider: str
    account: str
    locks: tuple[LockView, ...]


class HealthReport(msgspec.Struct, frozen=True, kw_only=True):
    now: float
    revision: int
    targets: tuple[TargetView, ...]
    accounts: tuple[AccountView, ...]
    # Providers without usable credentials, and the routes that fall through because of
    # it (gw/config/credentials.py); None from a gateway that does not check.
    credentials: CredentialReport | None = None
    switches: tuple[str, ...] = ()  # every switch in force, in words


def admin_handlers(services: ServerServices) -> list[HTTPRouteHandler]:
    @get("/admin/v1/health", include_in_schema=False)
    async def health(request: HttpRequest) -> Response[bytes]:
        ctx = services.begin(request, "admin.health")
        try:
            require_scope(await services.authenticate_admin(request), "admin:read")
        except GatewayError as error:
            failed = services.gateway.reject(ctx, error, stream=False)
            return openai_error_response(failed.error, failed.trace)
        now = Now(wall=services.clock.time(), mono=services.clock.monotonic())
        report = health_report(
            ctx.snapshot,
            health=services.health,
            latency=services.latency,
            accounts=services.accounts,
            now=now,
            credentials=services.credentials,
        )
        return Response(
            content=msgspec.json.encode(report),
            media_type=JSON,
            headers=gw_headers(ctx.request_id, "-", ctx.snapshot.revision),
        )

    @get("/admin/v1/usage", include_in_schema=False)
    async def usage(request: HttpRequest) -> Response[bytes]:
        ctx = services.begin(request, "admin.usage")
        try:
            principal = await services.authenticate_admin(request)
            require_scope(principal, "usage:read")
            query = UsageQuery.parse(request.query_params, principal, now=services.clock.time())
        except GatewayError as error:
            failed = services.gateway.reject(ctx, error, stream=False)
            return openai_error_response(failed.error, failed.trace)
        totals: list[UsageTotals] = []
        if services.usage is not None:
            totals = await services.usage.usage_report(query.by, query.since, query.tenant)
        return Response(
            content=msgspec.json.encode(report_json(query.by, totals)),
            media_type=JSON,
            headers=gw_headers(ctx.request_id, "-", ctx.snapshot.revision),
        )

    @get("/admin/v1/status", include_in_schema=False)
    async def status(request: HttpRequest) -> Response[bytes]:
        ctx = services.begin(request, "admin.status")
        try:
            require_scope(await services.authenticate_admin(request), "admin:read")
            if services.facts is None:
                raise ConflictError("this gateway keeps no status facts")
        except GatewayError as error:
            failed = services.gateway.reject(ctx, error, stream=False)
            return openai_error_response(failed.error, failed.trace)
        report = await status_report(
            services.facts,
            ctx.snapshot,
            reload=services.reloader.status if services.reloader is not None else None,
            auth_mode=services.authenticator.mode,
            now=services.clock.time(),
            mono=services.clock.monotonic(),
        )
        return Response(
            content=msgspec.json.encode(report),
            media_type=JSON,
            headers=gw_headers(ctx.request_id, "-", ctx.snapshot.revision),
        )

    @post("/admin/v1/config/rollback", status_code=200, include_in_schema=False)
    async def rollback(request: HttpRequest) -> Response[bytes]:
        ctx = services.begin(request, "admin.rollback")
        try:
            require_scope(await services.authenticate_admin(request), "admin:config")
            target = RollbackRequest.decode(await read_body(request, MAX_ROLLBACK_BODY))
            if services.reloader is None:
                raise ConflictError("this gateway does not reload its config")
            applied = await services.reloader.rollback(target.revision)
        except GatewayError as error:
            failed = services.gateway.reject(ctx, error, stream=False)
            response = openai_error_response(failed.error, failed.trace)
            response.headers["x-gw-revision"] = str(services.snapshot().revision)
            return response
        revision = services.snapshot().revision
        body = {"revision": revision, "rolled_back_to": target.revision, "applied": bool(applied)}
        return Response(
            content=msgspec.json.encode(body),
            media_type=JSON,
            headers=gw_headers(ctx.request_id, "-", revision),
        )

    return [health, usage, status, rollback]


MAX_ROLLBACK_BODY = 4096


class RollbackRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The body of ``POST /admin/v1/config/rollback``."""

    revision: int

    @classmethod
    def decode(cls, body: bytes) -> RollbackRequest:
        try:
            return msgspec.json.decode(body, type=cls, strict=True)
        except msgspec.DecodeError:
            raise InvalidRequestError(
                'the body must be {"revision": N}, N an applied config revision',
                param="revision",
            ) from None


class UsageQuery(msgspec.Struct, frozen=True, kw_only=True):
    """What ``GET /admin/v1/usage`` was asked for, checked against who asks."""

    by: UsageGroup
    since: float | None
    tenant: str | None

    @classmethod
    def parse(cls, params: Mapping[str, str], principal: Principal, *, now: float) -> UsageQuery:
        asked = params.get("by") or DEFAULT_USAGE_GROUP
        by = next((group for group in USAGE_GROUPS if group == asked), None)
        if by is None:
            raise InvalidRequestError(
                f"by must be one of {', '.join(USAGE_GROUPS)}, not {asked!r}", param="by"
            )
        since = params.get("since")
        try:
            start = None if not since else parse_since(since, now=now)
        except ValueError as exc:
            raise InvalidRequestError(f"since {exc}", param="since") from None
        tenant = params.get("tenant") or None
        if not principal.has_scope("admin:read"):
            if tenant is not None and tenant != principal.tenant:
                raise PermissionDeniedError(
                    f"this API key reads only its own tenant's usage ({principal.tenant})"
                )
            tenant = principal.tenant
        return cls(by=by, since=start, tenant=tenant)


def health_report(
    snapshot: Snapshot,
    *,
    health: HealthBook | None,
    latency: LatencyBook | None,
    accounts: AccountBook | None,
    now: Now,
    credentials: Callable[[Config], CredentialReport] | None = None,
) -> HealthReport:
    """Every target's health, breaker and latency, every account's locks, as of ``now``,
    and the providers ``credentials`` finds without usable credentials."""
    states: dict[str, TargetHealth] = {}
    untracked = "this gateway keeps no health book"
    if health is not None:
        states = {state.key: state for state in health.states(now=now.mono)}
        untracked = "no calls recorded yet"
    averages = latency.averages() if latency is not None else {}
    locks: list[AccountLock] = []
    locked: dict[str, str] = {}
    if accounts is not None:
        locks = accounts.locks(now=now.mono)
        locked = accounts.fully_locked(snapshot.accounts, now=now.mono)
    routes = target_routes(snapshot, [*states, *averages, *locked])
    targets = tuple(
        target_view(
            states.get(key, TargetHealth(key=key, status="healthy", reason=untracked)),
            routes=names,
            average=averages.get(key),
            locked_reason=locked.get(key),
            now=now,
        )
        for key, names in routes.items()
    )
    if snapshot.config.switches:
        targets = tuple(
            msgspec.structs.replace(view, switched=target_switched(snapshot, view))
            for view in targets
        )
    return HealthReport(
        now=round(now.wall, 3),
        revision=snapshot.revision,
        targets=targets,
        accounts=account_views(snapshot, locks, now),
        credentials=credentials(snapshot.config) if credentials is not None else None,
        switches=tuple(switch_sentence(switch) for switch in snapshot.config.switches),
    )


def target_switched(snapshot: Snapshot, view: TargetView) -> str | None:
    """What switches say of one target: off everywhere, off in some routes, or its
    breaker forced (closed shows here too, since health no longer decides for it)."""
    board = snapshot.switches
    key = f"{view.provider}/{view.model}"
    off = (
        board.providers_off.get(view.provider)
        or board.targets_off.get(key)
        or board.breakers_open.get(key)
    )
    if off is not None:
        return off
    in_routes = [board.route_targets_off[(route, key)] for route in view.routes
                 if (route, key) in board.route_targets_off]  # fmt: skip
    if in_routes:
        return "; ".join(in_routes)
    if key in board.breakers_closed:
        return next(
            switch_sentence(switch)
            for switch in snapshot.config.switches
            if switch.target == key and switch.state == "breaker_closed"
        )
    return None


def target_routes(snapshot: Snapshot, known: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """``provider/model`` -> the routes naming it: route targets in config order, then any
    other known target by name (with no routes)."""
    routes: dict[str, list[str]] = {}
    for route in snapshot.routes.values():
        for target in route.targets:
            names = routes.setdefault(f"{target.provider}/{target.model}", [])
            if route.name not in names:
                names.append(route.name)
    for key in sorted(set(known) - routes.keys()):
        routes[key] = []
    return {key: tuple(names) for key, names in routes.items()}


def target_view(
    state: TargetHealth,
    *,
    routes: tuple[str, ...],
    average: LatencyAverage | None,
    locked_reason: str | None,
    now: Now,
) -> TargetView:
    """One target's row; a lock on every account makes it unhealthy, as routing sees it."""
    provider, _, model = state.key.partition("/")  # provider names hold no '/'; models may
    status, reason = state.status, state.reason
    cooldown = state.cooldown_until
    if locked_reason is not None and status != "unhealthy":
        status, reason = "unhealthy", locked_reason
    return TargetView(
        provider=provider,
        model=model,
        routes=routes,
        status=status,
        reason=reason,
        breaker=state.breaker,
        consecutive_failures=state.consecutive_failures,
        window_calls=state.window_calls,
        window_failures=state.window_failures,
        openings=state.openings,
        cooldown_until=None if cooldown is None else now.to_wall(cooldown),
        cooldown_remaining_s=None if cooldown is None else now.remaining(cooldown),
        trial_in_flight=state.trial_until is not None,
        latency=None if average is None else latency_view(average),
        last_probe_ok=state.last_probe_ok,
    )


def latency_view(average: LatencyAverage) -> LatencyView:
    def ms(value: float | None) -> float | None:
        return None if value is None else round(value, 1)

    return LatencyView(
        total_ms=ms(average.total_ms), ttft_ms=ms(average.ttft_ms), samples=average.samples
    )


def account_views(
    snapshot: Snapshot, locks: Sequence[AccountLock], now: Now
) -> tuple[AccountView, ...]:
    """One row per configured account, in config order; locks of accounts no longer
    configured are left out."""
    by_account: dict[tuple[str, str], list[AccountLock]] = {}
    for lock in locks:
        by_account.setdefault((lock.provider, lock.account), []).append(lock)
    return tuple(
        AccountView(
            provider=provider,
            account=account.name,
            locks=tuple(
                LockView(
                    model=lock.model,
                    locked_until=now.to_wall(lock.until),
                    remaining_s=now.remaining(lock.until),
                    reason=lock.reason,
                )
                for lock in by_account.get((provider, account.name), ())
            ),
        )
        for provider, configured in snapshot.accounts.items()
        for account in configured
    )

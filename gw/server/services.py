"""What the handlers need, handed in by wiring: no handler builds anything itself."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from litestar import Request
from litestar.datastructures import State

from gw.config.credentials import CredentialReport
from gw.config.schema import Config
from gw.config.snapshot import Snapshot
from gw.execution.accounts import AccountBook
from gw.execution.gateway import Gateway
from gw.execution.health import HealthBook
from gw.execution.latency import LatencyBook
from gw.execution.request_context import RequestContext
from gw.ports import Clock
from gw.record import kept_client_request_id
from gw.server.admin.dashboard_sessions import DashboardSessions
from gw.server.admin.status import ServerFacts
from gw.server.admission import Admission
from gw.server.auth import Authenticator, Principal, bearer_token, query_api_key
from gw.server.ids import new_request_id
from gw.server.inference.background_jobs import BackgroundJobs
from gw.server.inference.idempotency import Idempotency
from gw.server.inference.previous_response import ResponseLinks
from gw.store.file_checks import StoreProblem
from gw.store.usage import UsageReader


class ReloadStatusView(Protocol):
    path: str
    revision: int
    applied_at: float | None
    error: str | None
    error_at: float | None
    reloads: int
    failures: int


class ConfigReloads(Protocol):
    """What the server may ask of the reloader (gw/reload.py, a layer above)."""

    @property
    def status(self) -> ReloadStatusView: ...

    async def reload(self, source: Any = "admin") -> Snapshot | None: ...

    async def edit(
        self, change: Callable[[str | None], str], source: Any = "admin", audit: Any = None
    ) -> Snapshot | None: ...

    async def rollback(self, revision: int) -> Snapshot | None: ...


HttpRequest = Request[Any, Any, State]


class ServerServices:
    def __init__(
        self,
        *,
        gateway: Gateway,
        snapshot: Callable[[], Snapshot],
        clock: Clock,
        admission: Admission,
        authenticator: Authenticator,
        health: HealthBook | None = None,
        latency: LatencyBook | None = None,
        accounts: AccountBook | None = None,
        usage: UsageReader | None = None,
        reloader: ConfigReloads | None = None,
        ready: Callable[[], Awaitable[StoreProblem | None]] | None = None,
        facts: ServerFacts | None = None,
        dashboard: DashboardSessions | None = None,
        metrics: Callable[[str | None], bytes] | None = None,
        background: BackgroundJobs | None = None,
        response_links: ResponseLinks | None = None,
        credentials: Callable[[Config], CredentialReport] | None = None,
        idempotency: Idempotency | None = None,
    ) -> None:
        self.gateway = gateway
        self.snapshot = snapshot
        self.clock = clock
        self.admission = admission
        self.authenticator = authenticator
        # The gateway's own books, read (never written) by the admin API.
        self.health = health
        self.latency = latency
        self.accounts = accounts
        self.usage = usage  # the usage ledger, for GET /admin/v1/usage
        self.reloader = reloader  # config reloads and their status (gw/reload.py)
        # /readyz: raises when this gateway should get no requests; returns a problem it
        # serves through (a shared store unreachable: gw/startup/store_health.py)
        self.ready = ready
        self.facts = facts  # for GET /admin/v1/status (gw/server/admin/status.py)
        # The dashboard's login links and sessions (in memory: admin/dashboard_sessions.py).
        self.dashboard = dashboard if dashboard is not None else DashboardSessions(clock)
        # Renders GET /metrics, all of it or one tenant's (gw/telemetry/metrics.py); None: off
        self.metrics = metrics
        # Background Responses jobs (gw/server/inference/background_jobs.py); None: gw holds none.
        self.background = background
        # Where previous_response_id finds its upstream (gw/server/inference/previous_response.py).
        self.response_links = response_links
        # Which providers lack usable credentials (gw/config/credentials.py), for health.
        self.credentials = credentials
        # Idempotency-Key claims and replays (gw/server/inference/idempotency.py); None: the
        # header is not honoured (a server built without a store, in unit tests).
        self.idempotency = idempotency

    async def authenticate(self, request: HttpRequest) -> Principal:
        """Who sent an inference request, from the address the server sees (the socket
        peer, or the forwarded client behind a trusted proxy: uvicorn has rewritten
        ``client`` then)."""
        query_key = query_api_key(request.scope["path"], request.scope["query_string"])
        return await self.authenticator.authenticate(request.headers, _client(request), query_key)

    async def authenticate_admin(self, request: HttpRequest) -> Principal:
        """Who sent a request to the admin plane (the admin API, /metrics, the dashboard's
        page), in any auth mode: a key, the local admin token, or, with neither sent, a
        dashboard session cookie (reads, and the replay preview); never anonymous
        (gw/server/auth.py)."""
        if bearer_token(request.headers) is None:
            session = self.dashboard.authorize(
                request.method, request.url.path, request.headers, request.cookies
            )
            if session is not None:
                return session
        server = request.scope.get("server")
        server_host = str(server[0]) if server else None
        return await self.authenticator.authenticate_admin(
            request.headers, _client(request), server_host
        )

    def begin(self, request: HttpRequest, endpoint: str) -> RequestContext:
        """Give the request its id and pin the current snapshot for its whole life."""
        client_request_id = request.headers.get("x-request-id")
        if client_request_id is not None:
            client_request_id = kept_client_request_id(client_request_id)
        return RequestContext(
            request_id=new_request_id(),
            snapshot=self.snapshot(),
            endpoint=endpoint,
            started_at=self.clock.time(),
            started_mono=self.clock.monotonic(),
            client_request_id=client_request_id,
        )


def _client(request: HttpRequest) -> str | None:
    return request.client.host if request.client is not None else None

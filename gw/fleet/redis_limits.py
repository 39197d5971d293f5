"""The ``TenantLimits`` port shared by a fleet of gateways, in Redis.

Each admission is one round trip: one ``EVALSHA`` (``EVAL`` when the server has not seen
the script yet) runs gw/fleet/limit_scripts.py's ``ADMIT``, which purges dead leases,
checks concurrency, budgets and the minute's buckets in that order, and takes the lot or
nothing. Settling is one more script, run in the background: the request's answer does
not wait for it, and ``drain`` (at shutdown) waits for what is still on its way.

The counts are the fleet's, the refusals the same as one gateway's
(gw/execution/limits.py words them). A tenant with no limit and no budget costs no round
trip. Budgets are seeded from the usage ledger with ``HSETNX``: several gateways starting
together seed once, and a counter already in Redis is the truth.

While Redis does not answer, admissions follow ``state.redis_failure``
(gw/fleet/limits_fallback.py); a script that fails (``ResponseError``) is a bug, not an
outage, and raises.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final

import msgspec
import redis.asyncio as aioredis
from redis.exceptions import NoScriptError, RedisError, ResponseError

from gw.config.schema import RedisFailureConfig, TenantConfig
from gw.config.state_url import safe_url
from gw.errors import GatewayError, InternalError
from gw.execution.limits import (
    budget_error,
    budget_warning,
    budgets_for,
    concurrency_error,
    rate_error,
    too_large_error,
)
from gw.execution.local_limits import ADMITTED
from gw.execution.periods import Period
from gw.fleet.limit_scripts import ADMIT, SETTLE, TOP_UP
from gw.fleet.limits_fallback import LimitsFallback
from gw.ports import LimitGrant

log = logging.getLogger("gw.fleet")

KEY_PREFIX: Final = "gw:v1:"  # the layout's version: a new layout gets a new prefix
POOL_SIZE: Final = 16  # one round trip per admission and settle: a few sockets suffice
SOCKET_TIMEOUT_S: Final = 2.0
BUDGET_TTL_S: Final = 400 * 86_400  # outlives its period; a total is refreshed by each settle
DEFAULT_FAILURE: Final = RedisFailureConfig()


class RedisUnreachableError(Exception):
    """Redis did not answer; ``str()`` names the URL (password hidden) and the cause."""


class _Ticket(msgspec.Struct, frozen=True):
    tenant: str
    tokens: int
    labels: tuple[str, ...]
    tpm: bool


class _Settle(msgspec.Struct, frozen=True):
    request_id: str
    keys: list[str]
    args: list[str | int | float]


class _Script:
    """A Lua script run by digest, sent whole only when the server does not know it."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.sha = hashlib.sha1(source.encode(), usedforsecurity=False).hexdigest()

    async def run(
        self, client: aioredis.Redis, keys: Sequence[str], args: Sequence[str | int | float]
    ) -> object:
        try:
            return await client.evalsha(self.sha, len(keys), *keys, *args)  # type: ignore[misc]
        except NoScriptError:  # a restarted or new server: EVAL also caches it
            return await client.eval(self.source, len(keys), *keys, *args)  # type: ignore[misc]


TOP_UP_BATCH = 500  # counters per script call: a big ledger is read back in steps
_ADMIT, _SETTLE, _TOP_UP = _Script(ADMIT), _Script(SETTLE), _Script(TOP_UP)


class RedisLimits:
    def __init__(
        self,
        client: aioredis.Redis,
        url: str,
        *,
        prefix: str = KEY_PREFIX,
        failure: RedisFailureConfig = DEFAULT_FAILURE,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self.url = url
        self._prefix = prefix
        self._fallback = LimitsFallback(failure, f"Redis at {safe_url(url)}")
        self._monotonic = monotonic
        self._tickets: dict[str, _Ticket] = {}  # by request id, until settled
        self._pending: set[asyncio.Task[None]] = set()
        self._settles: list[_Settle] = []  # queued for the flushing task
        self._flushing = False

    @classmethod
    async def connect(
        cls,
        url: str,
        *,
        prefix: str = KEY_PREFIX,
        failure: RedisFailureConfig = DEFAULT_FAILURE,
    ) -> RedisLimits:
        """Connect and check that Redis answers; ``RedisUnreachableError`` if it does not."""
        # A blocking pool: a burst beyond POOL_SIZE waits for a socket rather than failing.
        pool = aioredis.BlockingConnectionPool.from_url(
            url,
            max_connections=POOL_SIZE,
            timeout=SOCKET_TIMEOUT_S,
            socket_timeout=SOCKET_TIMEOUT_S,
            socket_connect_timeout=SOCKET_TIMEOUT_S,
            decode_responses=True,
        )
        client = aioredis.Redis.from_pool(pool)
        try:
            await client.ping()  # type: ignore[misc]
        except (RedisError, OSError) as exc:
            await client.aclose()
            raise RedisUnreachableError(
                f"Redis at {safe_url(url)} does not answer ({exc})"
            ) from exc
        return cls(client, url, prefix=prefix, failure=failure)

    def _key(self, tenant: str, part: str) -> str:
        return f"{self._prefix}{{{tenant}}}:{part}"

    async def admit(
        self,
        tenant: TenantConfig,
        request_id: str,
        *,
        tokens: int,
        cost_usd: float,
        lease_ttl: float,
        now: float,  # for the fallback only: the buckets run on Redis's clock
        wall: float,
    ) -> LimitGrant:
        limits = tenant.limits
        budgets = budgets_for(tenant, wall)
        rpm, tpm, conc = (
            limits.requests_per_minute,
            limits.tokens_per_minute,
            limits.max_concurrency,
        )
        if rpm is None and tpm is None and conc is None and not budgets:
            return ADMITTED  # nothing the fleet counts for this tenant
        if tpm is not None and tokens > tpm:
            raise too_large_error(tenant.name, "tokens_per_minute", tpm, tokens)
        name = tenant.name
        budget_keys = [self._key(name, f"b:{label}") for _, label, _ in budgets]
        keys = [
            self._key(name, "leases"),
            self._key(name, "held"),
            self._key(name, "rpm"),
            self._key(name, "tpm"),
            *budget_keys,
        ]
        args: list[str | int | float] = [
            request_id,
            -1 if conc is None else conc,
            -1 if rpm is None else rpm,
            -1 if tpm is None else tpm,
            tokens,
            repr(cost_usd),
            max(1, round(lease_ttl * 1000)),
            len(budgets),
            *(repr(usd) for _, _, usd in budgets),
            " ".join([repr(cost_usd), *budget_keys]),
            BUDGET_TTL_S,
        ]
        moment = self._monotonic()
        if self._fallback.redis_due(moment):
            try:
                reply = await _ADMIT.run(self._client, keys, args)
            except ResponseError:
                raise  # the script failed: a bug, not an outage
            except (RedisError, OSError) as exc:
                self._fallback.redis_failed(exc, self._monotonic())
            else:
                self._fallback.redis_answered()
                return self._admitted(
                    tenant, request_id, reply, budgets=budgets, tokens=tokens, cost_usd=cost_usd
                )
        return self._fallback.admit(
            tenant, request_id, tokens=tokens, cost_usd=cost_usd, now=now, wall=wall
        )

    def _admitted(
        self,
        tenant: TenantConfig,
        request_id: str,
        reply: object,
        *,
        budgets: list[tuple[Period, str, float]],
        tokens: int,
        cost_usd: float,
    ) -> LimitGrant:
        name = tenant.name
        _raise_refusal(tenant, reply, budgets, cost_usd)
        labels = tuple(label for _, label, _ in budgets)
        tpm = tenant.limits.tokens_per_minute is not None
        self._tickets[request_id] = _Ticket(name, tokens, labels, tpm)
        used = reply[2:] if isinstance(reply, list) else []
        warnings = tuple(
            warning
            for (period, label, usd), spent in zip(budgets, used, strict=False)
            if (warning := budget_warning(name, period, label, usd, float(spent)))
        )
        return LimitGrant(warnings=warnings) if warnings else ADMITTED

    def settle(self, request_id: str, *, tokens: int, cost_usd: float | None) -> None:
        if self._fallback.settle(request_id, tokens=tokens, cost_usd=cost_usd):
            return
        ticket = self._tickets.pop(request_id, None)
        if ticket is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on the server's loop: the lease runs out by itself
            log.warning("request %s settled off the event loop: left to its lease", request_id)
            return
        keys = [
            self._key(ticket.tenant, "leases"),
            self._key(ticket.tenant, "held"),
            self._key(ticket.tenant, "tpm"),
            *(self._key(ticket.tenant, f"b:{label}") for label in ticket.labels),
        ]
        refund = ticket.tokens - tokens if ticket.tpm else 0
        cost = cost_usd or 0.0
        self._settles.append(
            _Settle(request_id, keys, [request_id, refund, repr(cost), BUDGET_TTL_S])
        )
        if not self._flushing:
            self._flushing = True
            task = loop.create_task(self._flush())
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)

    async def _flush(self) -> None:
        """Send the queued settles, one pipeline of them per round trip: under load the
        settles of many requests share one, so a request costs its admission's round trip
        and a share of one."""
        try:
            while self._settles:
                batch, self._settles = self._settles, []
                await self._send(batch)
        finally:
            self._flushing = False  # no await since the queue was seen empty

    async def _send(self, batch: list[_Settle]) -> None:
        try:
            if len(batch) == 1:
                await _SETTLE.run(self._client, batch[0].keys, batch[0].args)
                return
            async with self._client.pipeline(transaction=False) as pipe:
                for item in batch:
                    pipe.evalsha(_SETTLE.sha, len(item.keys), *item.keys, *item.args)
                replies = await pipe.execute(raise_on_error=False)
            for item, reply in zip(batch, replies, strict=True):
                if isinstance(reply, NoScriptError):  # a restarted Redis: send it whole
                    await _SETTLE.run(self._client, item.keys, item.args)
                elif isinstance(reply, Exception):
                    raise reply
        except (RedisError, OSError) as exc:
            # Each lease runs out by itself and its reservation goes back; what was billed
            # is missing from the fleet's counter until the next start seeds it again.
            self._fallback.redis_failed(exc, self._monotonic())  # says so once an outage
            log.debug("%d settles not counted in Redis", len(batch))

    async def seed(self, spend: Iterable[tuple[str, str, float]]) -> None:
        totals: dict[tuple[str, str], float] = {}
        for tenant, label, usd in spend:
            totals[(tenant, label)] = totals.get((tenant, label), 0.0) + usd
        if not totals:
            return
        # Raised to the ledger's figure, never lowered: the fleet's counter may already
        # hold spend the ledger has not written yet.
        items = list(totals.items())
        for start in range(0, len(items), TOP_UP_BATCH):
            batch = items[start : start + TOP_UP_BATCH]
            keys = [self._key(tenant, f"b:{label}") for (tenant, label), _ in batch]
            amounts = [repr(spent) for _, spent in batch]
            await _TOP_UP.run(self._client, keys, [*amounts, BUDGET_TTL_S])

    async def spent(self, tenant: str, label: str) -> float:
        value = await self._client.hget(self._key(tenant, f"b:{label}"), "spent")  # type: ignore[misc]
        return 0.0 if value is None else float(value)

    async def in_flight(self, tenant: str) -> int:
        seconds, micros = await self._client.time()
        now_ms = seconds * 1000 + micros // 1000
        return int(await self._client.zcount(self._key(tenant, "leases"), now_ms, "+inf"))

    def fallback_counts(self) -> Mapping[tuple[str, str], int]:
        return self._fallback.counts

    async def drain(self) -> None:
        while self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)

    async def aclose(self) -> None:
        await self._client.aclose()


def _raise_refusal(
    tenant: TenantConfig,
    reply: object,
    budgets: list[tuple[Period, str, float]],
    cost_usd: float,
) -> None:
    if not isinstance(reply, list) or not reply:
        raise InternalError(f"unexpected reply from the limits script: {reply!r}")
    kind = int(reply[0])
    if kind == 0:
        return
    error: GatewayError
    if kind == 1:
        limit = tenant.limits.max_concurrency or 0
        error = concurrency_error(tenant.name, int(reply[1]), limit)
    elif kind == 2:
        period, label, usd = budgets[int(reply[1]) - 1]
        spent, reserved = float(reply[2]), float(reply[3])
        error = budget_error(
            tenant.name,
            period,
            label,
            budget=usd,
            spent=spent,
            reserved=reserved,
            cost_usd=cost_usd,
        )
    else:
        field = "requests_per_minute" if int(reply[1]) == 1 else "tokens_per_minute"
        size = tenant.limits.requests_per_minute if field == "requests_per_minute" else None
        size = tenant.limits.tokens_per_minute if size is None else size
        error = rate_error(tenant.name, field, float(size or 0), float(reply[2]))
    raise error

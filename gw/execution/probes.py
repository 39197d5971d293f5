"""Active probes: a one-token chat to each probed target, off the request path.

Providers opt in with ``probe: {interval, timeout, models}``. Every ``interval`` each of
the provider's probed models (by default every model a route sends to it) gets one
``max_tokens: 1`` call on the provider's first account, and the outcome feeds the health
book as a probe (``HealthBook.record_probe``): a probe may degrade a target or restore a
degraded one, never open or close a breaker. Only the upstream's own faults count as a
failed probe; a rate limit or a refused request says nothing of its health and is not
recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import msgspec

from gw.config.schema import ProviderConfig
from gw.config.snapshot import Snapshot
from gw.errors import GatewayError
from gw.execution.engine import HEALTH_FAILURES
from gw.execution.health import HealthBook
from gw.ir import ChatRequest, TextPart, UserMessage
from gw.ports import AttemptTimeouts, Clock, Sleep, UpstreamCall, UpstreamDirectory

logger = logging.getLogger("gw.probes")
PROBE_MESSAGE = "ping"


def probed_targets(snapshot: Snapshot) -> list[tuple[ProviderConfig, str]]:
    """(provider, model) for each target to probe now, in config order, no repeats.

    ``provider`` is the account a probe uses (the provider's first) merged over it."""
    targets: list[tuple[ProviderConfig, str]] = []
    routed: dict[str, list[str]] = {}
    for route in snapshot.routes.values():
        for target in route.targets:
            models = routed.setdefault(target.provider, [])
            if target.model not in models:
                models.append(target.model)
    for provider in snapshot.providers.values():
        if provider.probe is None:
            continue
        chosen = provider.probe.models
        account = snapshot.accounts[provider.name][0]
        for model in chosen if chosen is not None else routed.get(provider.name, ()):
            targets.append((msgspec.structs.replace(account.provider, probe=provider.probe), model))
    return targets


class Prober:
    """Probes the current snapshot's targets, each provider at its own interval."""

    def __init__(
        self,
        upstreams: UpstreamDirectory,
        health: HealthBook,
        snapshot: Callable[[], Snapshot],
        clock: Clock,
        sleep: Sleep,
    ) -> None:
        self._upstreams = upstreams
        self._health = health
        self._snapshot = snapshot
        self._clock = clock
        self._sleep = sleep
        self._due: dict[str, float] = {}  # provider name -> next probe time (monotonic)
        self._task: asyncio.Task[None] | None = None
        self.probes = 0  # probes sent, for tests and status

    async def start(self) -> None:
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):  # a crashed loop must not stop shutdown
                await self._task

    async def probe_due(self) -> float | None:
        """Probe every provider whose interval has passed; return seconds until the next
        one is due (None: nothing to probe)."""
        now = self._clock.monotonic()
        targets = probed_targets(self._snapshot())
        due = {p.name for p, _ in targets if self._due.get(p.name, now) <= now}
        batch = [(p, m) for p, m in targets if p.name in due]
        await asyncio.gather(*(self._probe(p, m) for p, m in batch))
        for provider, _ in batch:
            assert provider.probe is not None  # noqa: S101 - probed_targets keeps only these
            self._due[provider.name] = now + provider.probe.interval.seconds
        live = {p.name for p, _ in targets}
        waits = [when - self._clock.monotonic() for name, when in self._due.items() if name in live]
        return max(min(waits), 0.0) if waits else None

    async def _loop(self) -> None:
        while True:
            try:
                wait = await self.probe_due()
            except Exception as exc:  # noqa: BLE001 -- the loop outlives any one round
                logger.warning("a probe round failed: %s", type(exc).__name__)
                wait = None
            await self._sleep(1.0 if wait is None else max(wait, 0.05))

    async def _probe(self, provider: ProviderConfig, model: str) -> None:
        assert provider.probe is not None  # noqa: S101 - only probed providers get here
        budget = provider.probe.timeout.seconds
        call = UpstreamCall(
            request_id="probe",
            provider=provider,
            request=ChatRequest(
                model=model,
                messages=(UserMessage(content=(TextPart(text=PROBE_MESSAGE),)),),
                max_tokens=1,
            ),
            account=None,
            timeouts=AttemptTimeouts(connect=budget, read=budget),
        )
        ok: bool | None
        try:
            async with asyncio.timeout(budget):
                await self._upstreams.upstream_for(provider).complete(call)
            ok = True
        except TimeoutError:
            ok = False
        except GatewayError as error:
            ok = False if error.code in HEALTH_FAILURES else None
        except Exception as exc:  # noqa: BLE001 -- a probe must never take the loop down
            logger.warning("probe of %s/%s failed: %s", provider.name, model, type(exc).__name__)
            ok = False
        self.probes += 1
        if ok is not None:
            key = f"{provider.name}/{model}"
            self._health.record_probe(key, ok, now=self._clock.monotonic())

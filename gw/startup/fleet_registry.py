"""The fleet's gateway registry, from this gateway's side: it registers itself at start
(its id, URL, host, pid, start time, the revision and config hash it serves, whether it
is ready) and writes the row again every ``heartbeat_s`` seconds. A row whose heartbeat
is older than ``GONE_AFTER_BEATS`` of its own intervals is reported as gone; one not heard
from for ``FORGET_AFTER_S`` is deleted by whichever gateway beats next. A clean stop
removes its own row.

``GW_FLEET_HEARTBEAT_S`` sets the interval (default 5 seconds; the tests shorten it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import msgspec

from gw.config import Snapshot
from gw.store.port import GatewayRegistry, GatewayRow

log = logging.getLogger("gw.fleet")

DEFAULT_HEARTBEAT_S: Final = 5.0
GONE_AFTER_BEATS: Final = 3
FORGET_AFTER_S: Final = 24 * 3600.0


def heartbeat_seconds(environ: Mapping[str, str]) -> float:
    """``GW_FLEET_HEARTBEAT_S`` (seconds, > 0), else the default."""
    value = environ.get("GW_FLEET_HEARTBEAT_S")
    if not value:
        return DEFAULT_HEARTBEAT_S
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        log.warning("GW_FLEET_HEARTBEAT_S=%r is not a positive number of seconds; using %s",
                    value, DEFAULT_HEARTBEAT_S)  # fmt: skip
        return DEFAULT_HEARTBEAT_S
    return seconds


def fleet_view(rows: list[GatewayRow], *, now: float, me: str) -> list[dict[str, Any]]:
    """The rows as ``gw status`` shows them: each with ``age_s`` (since its last
    heartbeat), ``gone`` (no heartbeat for ``GONE_AFTER_BEATS`` intervals) and ``self``."""
    return [
        msgspec.to_builtins(row)
        | {
            "age_s": round(max(now - row.heartbeat_at, 0.0), 3),
            "gone": now - row.heartbeat_at > GONE_AFTER_BEATS * row.heartbeat_s,
            "self": row.id == me,
        }
        for row in rows
    ]


class Heartbeat:
    """Writes this gateway's row (see the module docstring); a background task."""

    def __init__(
        self,
        registry: GatewayRegistry,
        *,
        gateway_id: str,
        url: str,
        started_at: float,
        snapshot: Callable[[], Snapshot],
        ready: Callable[[], Awaitable[bool]],
        now: Callable[[], float],
        interval: float,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.registry = registry
        self.gateway_id = gateway_id
        self._url = url
        self._started_at = started_at
        self._snapshot = snapshot
        self._ready = ready
        self._now = now
        self._interval = interval
        self._sleep = sleep
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self.beat()  # registered before the port answers its first request
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        try:
            await self.registry.remove(self.gateway_id)
        except Exception as error:  # noqa: BLE001 -- the row then ages into "gone"
            log.warning("could not unregister %s: %s", self.gateway_id, error)

    async def beat(self) -> None:
        snapshot = self._snapshot()
        now = self._now()
        try:
            await self.registry.beat(
                GatewayRow(
                    id=self.gateway_id,
                    url=self._url,
                    host=socket.gethostname(),
                    pid=os.getpid(),
                    started_at=self._started_at,
                    revision=snapshot.revision,
                    config_hash=snapshot.config_hash,
                    ready=await self._ready(),
                    heartbeat_at=now,
                    heartbeat_s=self._interval,
                )
            )
            await self.registry.prune(before=now - FORGET_AFTER_S)
        except Exception as error:  # noqa: BLE001 -- a missed beat is retried next interval
            log.warning("fleet heartbeat failed: %s: %s", type(error).__name__, error)

    async def _run(self) -> None:
        while True:
            await self._sleep(self._interval)
            await self.beat()

"""TelemetryHub.stop: the usage ledger is flushed whatever the other stop hooks do, within
a bounded time."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import pytest
from unit.telemetry.test_usage_recorder import make_row

from gw.ports import UsageRow
from gw.record import TraceRecord
from gw.telemetry.hub import TelemetryHub


class MemoryStore:
    def __init__(self) -> None:
        self.usage: list[str] = []

    async def write_traces(self, traces: Sequence[TraceRecord]) -> None: ...

    async def write_usage(self, rows: Sequence[UsageRow]) -> None:
        self.usage.extend(row.request_id for row in rows)


async def failing_stop() -> None:
    raise RuntimeError("secret prompt text")


async def stuck_stop() -> None:
    await asyncio.sleep(3600)


def test_a_failing_and_a_stuck_hook_still_let_usage_be_written(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = MemoryStore()
    hub = TelemetryHub(store, stop_timeout=0.2)
    hub.stops.extend([failing_stop, stuck_stop])  # both ahead of the ledger, as added hooks are

    async def main() -> float:
        for start in hub.starts:
            await start()
        for n in range(5):
            hub.usage.submit(make_row(n))
        loop = asyncio.get_running_loop()
        started = loop.time()
        await asyncio.wait_for(hub.stop(), timeout=5.0)
        return loop.time() - started

    with caplog.at_level(logging.WARNING, logger="gw.telemetry"):
        took = asyncio.run(main())
    assert store.usage == [f"req-{n:08d}" for n in range(5)]
    assert hub.usage.lost == 0
    assert took < 2.0
    assert "failing_stop failed to stop: RuntimeError" in caplog.text
    assert "stuck_stop did not stop within 0.2 s" in caplog.text
    assert "secret" not in caplog.text

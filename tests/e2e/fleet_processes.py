"""A fleet of real ``gw serve`` processes on loopback: N gateways, one config, one env.

Each gateway has its own state directory (its serve lock, server.json and usage journal
are per process, as on separate machines); what they share comes from the config and the
environment (``state.url`` / ``GW_STATE_URL``, ``state.redis_url``). A gateway killed by a
test is started again with ``restart`` on the same state directory, so that its usage
journal is replayed as after a crash. Every process started is stopped by pid on exit.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from e2e.gw_process import GwServer


class Fleet:
    """``size`` gateways sharing ``config`` and ``env``; index them like a list."""

    def __init__(
        self, home: Path, config: Path, size: int = 3, env: dict[str, str] | None = None
    ) -> None:
        self.gateways = [GwServer(home / f"gw{n}", config, env=env) for n in range(size)]

    def __getitem__(self, n: int) -> GwServer:
        return self.gateways[n]

    def __iter__(self) -> Iterator[GwServer]:
        return iter(self.gateways)

    def __len__(self) -> int:
        return len(self.gateways)

    def start(self) -> Fleet:
        try:
            for gateway in self.gateways:
                gateway.start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for gateway in self.gateways:
            gateway.stop()

    def kill(self, n: int) -> None:
        """SIGKILL gateway ``n``: nothing it held is settled, nothing buffered is flushed."""
        process = self.gateways[n].process
        assert process is not None, f"gateway {n} was never started"
        assert process.poll() is None, f"gateway {n} is not running"
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def restart(self, n: int) -> GwServer:
        """Start gateway ``n`` again on its state directory (its journal is replayed)."""
        return self.gateways[n].start()


@contextmanager
def running_fleet(
    home: Path, config: Path, size: int = 3, env: dict[str, str] | None = None
) -> Iterator[Fleet]:
    fleet = Fleet(home, config, size, env).start()
    try:
        yield fleet
    finally:
        fleet.stop()

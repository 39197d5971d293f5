"""What ``gw serve`` is asked to run (``ServePlan``), and the small parts every start step
shares: the clock, the current snapshot, the refusal to start (``ServeError``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import msgspec

from gw.config import Config, Snapshot
from gw.config.limits import ConfigLimits


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
    config_text: str | None = None  # the file's text ``config`` was loaded from
    limits: ConfigLimits = ConfigLimits()  # how large a config file a reload reads
    explicit: bool = False
    overrides: Mapping[str, Any] = msgspec.field(default_factory=dict)
    on_listening: Callable[[], None] | None = None  # once the server accepts requests


class SnapshotHolder:
    """The current snapshot; replaced whole, never changed in place (invariant 2)."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.current = snapshot

    def get(self) -> Snapshot:
        return self.current


def reachable_as(plan: ServePlan) -> str:
    """The bind address, as far as exposure goes: behind a trusted reverse proxy even a
    loopback bind serves whoever the proxy lets in, so it counts as exposed."""
    server = plan.config.server
    if server.trusted_proxies:
        return f"{server.host} behind server.trusted_proxies"
    return server.host

"""Config revisions at start and on reload: the revision recorded at start, the reloader
that turns a saved file into a new snapshot, and the vault check a reload makes."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable

from gw.adapters.directory import AdapterDirectory
from gw.adapters.secrets import vault_references
from gw.config import Config, ConfigError, Snapshot, compile_snapshot, config_hash
from gw.config.catalog import ShippedCatalog
from gw.config.redact import redacted_json
from gw.execution.accounts import AccountBook
from gw.execution.health import HealthBook
from gw.plugin_loader import load_plugins
from gw.reload import AppliedConfig, Reloader
from gw.startup.plan import ServePlan, SnapshotHolder, SystemClock
from gw.store.port import StateStore
from gw.store.revisions import StoredRevision
from gw.vault import Vault, VaultError

logger = logging.getLogger("gw.reload")


def build_reloader(
    plan: ServePlan,
    snapshots: SnapshotHolder,
    *,
    store: StateStore,
    clock: SystemClock,
    shipped: ShippedCatalog,
    health: HealthBook,
    accounts: AccountBook,
    directory: AdapterDirectory,
    start_text: str | None,
    on_applied: Callable[[Snapshot], None] | None = None,
    fleet: bool = False,
) -> Reloader:
    """Reloads of the config file into new snapshots; health, latency and account locks
    carry over for the targets that remain (the books live outside the snapshot).
    ``fleet``: the store is shared (state.url), so an admin write first catches up to the
    newest revision any gateway recorded (gw/startup/fleet_config.py)."""

    def apply(snapshot: Snapshot) -> None:
        snapshots.current = snapshot  # one assignment: requests pinned the old one
        health.reconfigure(snapshot.config.health)
        health.retain(route_target_keys(snapshot))
        accounts.reconfigure(snapshot.config.health)
        for warning in directory.check_credentials(snapshot.config).warnings():
            logger.warning("config revision %d: %s", snapshot.revision, warning)

    async def record(applied: AppliedConfig) -> int:
        return await store.record_revision(
            config_hash=applied.hash,
            source=applied.source,
            time=clock.time(),
            content=applied.text,
            redacted=applied.redacted,
            parent=applied.parent,
            actor=applied.audit.actor if applied.audit else None,
            reason=applied.audit.reason if applied.audit else None,
        )

    def compile_config(config: Config, revision: int, source: str, digest: str) -> Snapshot:
        plugins = load_plugins(config, source)
        return compile_snapshot(
            config,
            revision=revision,
            source=source,
            shipped=shipped,
            digest=digest,
            plugins=plugins,
        )

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
        limits=plan.limits,
        on_applied=on_applied,
        fleet_newest=fleet_newest(store, snapshots.get) if fleet else None,
    )


def fleet_newest(
    store: StateStore, current: Callable[[], Snapshot]
) -> Callable[[], Awaitable[StoredRevision | None]]:
    """The fleet's newest revision when it is newer than the running one (else None)."""

    async def newest() -> StoredRevision | None:
        rows = await store.list_revisions(limit=1)
        if not rows or rows[0].revision <= current().revision:
            return None
        return await store.get_revision(rows[0].revision)

    return newest


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


async def start_snapshot(
    plan: ServePlan, store: StateStore, clock: SystemClock, shipped: ShippedCatalog
) -> Snapshot:
    """The snapshot gw starts with: its revision (source ``start``) recorded with the file's
    text the config was loaded from (None: the built-in default), unless the newest one
    has the same hash. The hash leaves out what this process overrides (flags, GW_*), so
    gateways of a fleet started from one file share one revision."""
    digest = config_hash(plan.config, plan.overrides)
    revision = await store.record_revision(
        config_hash=digest,
        source="start",
        time=clock.time(),
        content=plan.config_text,
        redacted=redacted_json(plan.config),
    )
    return compile_snapshot(
        plan.config,
        revision=revision,
        source=plan.source,
        shipped=shipped,
        digest=digest,
        plugins=load_plugins(plan.config, plan.source),
    )


def route_target_keys(snapshot: Snapshot) -> set[str]:
    return {f"{t.provider}/{t.model}" for route in snapshot.routes.values() for t in route.targets}

"""``gw keys create | list | show | update | revoke``: API keys, written straight to the
state database.

The server reads the same SQLite file (WAL), so a key created or revoked here takes effect
in a running ``gw serve`` within a second, with no restart and no admin API call. The key
is printed once, by ``create``; gw stores only its SHA-256 digest (gw/store/api_keys.py).
Without ``--json``, ``create`` prints the key alone on stdout (``KEY=$(gw keys create ...)``)
and what it is on stderr. ``--allow-ip`` (repeatable) limits where a key may be used from;
a value that is not an address or network is a usage error (exit 2), like any bad option.
``--daily-usd``, ``--weekly-usd``, ``--monthly-usd`` and ``--total-usd`` give a key a
budget of its own (gw/cli/key_budget.py); ``update`` changes it, and a running ``gw
serve`` counts by the new one within a second, as it sees a revocation.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Final, TypeVar

import typer

from gw.cli.console import fail, print_json, stderr, stdout
from gw.cli.key_budget import DailyUsd, MonthlyUsd, TotalUsd, WeeklyUsd, budget_from
from gw.cli.keys_view import created_json, describe, key_json, keys_table
from gw.cli.options import (
    ConfigOption,
    JsonOption,
    StateDirOption,
    load_or_fail,
    resolve_config,
    resolve_home,
)
from gw.cli.state_target import state_target
from gw.config import Config
from gw.store.api_keys import NO_BUDGET, ApiKey, new_key, parse_scopes
from gw.store.ip_allowlist import parse_allowlist
from gw.store.port import StateStore

keys_app = typer.Typer(
    help="API keys: create (shown once), list, show, update (budget), revoke.",
    no_args_is_help=True,
)

ResultT = TypeVar("ResultT")
_RELATIVE: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)\s*$")
_UNIT_SECONDS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


MAX_EXPIRES = datetime(9000, 1, 1, tzinfo=UTC).timestamp()


def parse_expiry(text: str, now: float) -> float:
    """``30d`` (s, m, h, d, w from now) or an ISO 8601 date or time (UTC unless it names a
    zone; a date is its first instant) -> epoch seconds. ValueError says what to write."""
    relative = _RELATIVE.match(text)
    if relative is not None:
        expires = now + float(relative.group(1)) * _UNIT_SECONDS[relative.group(2)]
    else:
        try:
            moment = datetime.fromisoformat(text.strip())
        except ValueError:
            raise ValueError(
                f"--expires {text!r} is neither a duration (30d, 12h, 90m) nor an ISO date or"
                " time (2026-12-31, 2026-12-31T18:00:00Z)"
            ) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        expires = moment.timestamp()
    if expires > MAX_EXPIRES:  # later dates cannot be shown (year 10000); none is needed
        raise ValueError(f"--expires {text!r} is past the year 9000; leave it out for no expiry")
    return expires


def parse_models(text: str | None, config: Config) -> tuple[str, ...] | None:
    """``chat,openai/gpt-4o`` -> names a client may send: routes or ``provider/model``
    with a configured provider. ValueError names one that is neither."""
    if text is None:
        return None
    models = tuple(dict.fromkeys(m.strip() for m in text.split(",") if m.strip()))
    if not models:
        raise ValueError("--models lists no model; leave it out to allow any")
    routes = {route.name for route in config.routes}
    providers = {provider.name for provider in config.providers}
    for model in models:
        provider, slash, _ = model.partition("/")
        if model not in routes and not (slash and provider in providers):
            known = ", ".join(sorted(routes)) or "none"
            raise ValueError(
                f"--models: {model!r} is neither a route (routes: {known}) nor"
                " provider/model with a configured provider"
            )
    return models


def parse_allow_ips(values: list[str] | None) -> list[str] | None:
    """``--allow-ip`` values -> the key's allowlist in normal form; None when none is given
    (any address). Raises ``typer.BadParameter`` naming a bad value, so the exit is 2."""
    if not values:
        return None
    try:
        return list(parse_allowlist(values))
    except ValueError as error:
        raise typer.BadParameter(str(error)) from None


def _with_store(
    home: Path, work: Callable[[StateStore], Awaitable[ResultT]], config: Path | None = None
) -> ResultT:
    return state_target(home, config).run(work, doing="use the key store")


@keys_app.command("create")
def create_command(  # keyword-only: one parameter per flag, Typer passes them by name
    *,
    tenant: Annotated[str, typer.Option("--tenant", help="The tenant (from config) it bills.")],
    name: Annotated[str | None, typer.Option("--name", help="A label, e.g. the app.")] = None,
    scopes: Annotated[
        str,
        typer.Option(
            "--scopes",
            help="Comma-separated: inference, usage:read, admin:read (every admin read),"
            " admin:config (config writes, and the reads), admin (both), *.",
        ),
    ] = "inference",
    expires: Annotated[
        str | None,
        typer.Option("--expires", help="30d, 12h, ... from now, or an ISO date/time (UTC)."),
    ] = None,
    models: Annotated[
        str | None,
        typer.Option("--models", help="Comma-separated routes or provider/model (default any)."),
    ] = None,
    allow_ips: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-ip",
            metavar="CIDR",
            help="Only clients in this network or address (repeatable; default any address).",
            callback=parse_allow_ips,
        ),
    ] = None,
    daily_usd: DailyUsd = None,
    weekly_usd: WeeklyUsd = None,
    monthly_usd: MonthlyUsd = None,
    total_usd: TotalUsd = None,
    config: ConfigOption = None,
    state_dir: StateDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create an API key for a tenant and print it, once."""
    budget = budget_from(
        NO_BUDGET, daily=daily_usd, weekly=weekly_usd, monthly=monthly_usd, total=total_usd
    )
    home = resolve_home(state_dir)
    path, explicit = resolve_config(config, home)
    loaded = load_or_fail(path, explicit=explicit)
    tenants = [t.name for t in loaded.config.tenants]
    if tenant not in tenants:
        known = ", ".join(tenants) or "none"
        fail(
            f"tenant {tenant!r} is not in the config {loaded.source} (tenants: {known});"
            f" add it under tenants: [{{name: {tenant}}}]"
        )
    now = time.time()
    try:
        key = new_key(
            tenant=tenant,
            name=name,
            scopes=parse_scopes(scopes),
            models=parse_models(models, loaded.config),
            allowed_ips=None if allow_ips is None else tuple(allow_ips),
            created_at=now,
            expires_at=None if expires is None else parse_expiry(expires, now),
            budget=budget,
        )
    except ValueError as error:
        fail(str(error))
    if key.key.expired(now):
        fail(f"--expires {expires}: that is already past; give a later date or a duration (30d)")
    first = _with_store(home, lambda store: first_key(store, key.key, now), config)
    if as_json:
        print_json(created_json(key))
        return
    stderr.print(f"created {describe(key.key)}", highlight=False, markup=False)
    stderr.print("this is the only time the key is shown: store it now", highlight=False)
    if first and loaded.config.auth.mode is None:
        stderr.print(FIRST_KEY_NOTE, highlight=False, markup=False, soft_wrap=True)
    typer.echo(key.plaintext)


# auth.mode unset: a loopback gw is open until an API key exists, then needs keys.
FIRST_KEY_NOTE = (
    "note: this is the first API key, so gw (auth.mode unset) now requires a key on every"
    " request, within a second. Clients send one as a bearer token. The admin commands"
    " (gw status, gw health, gw top, gw dashboard, gw config ...) keep working on this"
    " machine with the local admin token gw serve wrote to the state directory; elsewhere"
    " they need a key with an admin scope: export GW_ADMIN_KEY=<a key made with --scopes"
    " admin>"
)


async def first_key(store: StateStore, key: ApiKey, now: float) -> bool:
    """Store ``key``; True when no other active key existed (auth now turns on)."""
    before = await store.count_active_keys(now=now)
    await store.create_key(key)
    return before == 0


@keys_app.command("list")
def list_command(state_dir: StateDirOption = None, as_json: JsonOption = False) -> None:
    """List API keys (never the keys themselves): oldest first, revoked ones included."""
    home = resolve_home(state_dir)
    target = state_target(home)
    keys = _with_store(home, lambda store: store.list_keys()) if target.exists() else []
    now = time.time()
    if as_json:
        print_json([key_json(key, now) for key in keys])
        return
    if not keys:
        stdout.print(f"no API keys in {target.label}; `gw keys create --tenant T` makes one")
        return
    stdout.print(keys_table(keys, now))


@keys_app.command("show")
def show_command(
    key_id: Annotated[str, typer.Argument(help="The key's id (key_...), from `gw keys list`.")],
    state_dir: StateDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show one API key (never the key itself): tenant, scopes, budget, status."""
    home = resolve_home(state_dir)
    target = state_target(home)
    keys = _with_store(home, lambda store: store.list_keys()) if target.exists() else []
    key = next((k for k in keys if k.id == key_id), None)
    if key is None:
        fail(f"no API key {key_id!r} in {target.label}; `gw keys list` shows them")
    _print_key(key, as_json=as_json)


@keys_app.command("update")
def update_command(  # keyword-only: one parameter per flag, Typer passes them by name
    key_id: Annotated[str, typer.Argument(help="The key's id (key_...), from `gw keys list`.")],
    *,
    daily_usd: DailyUsd = None,
    weekly_usd: WeeklyUsd = None,
    monthly_usd: MonthlyUsd = None,
    total_usd: TotalUsd = None,
    state_dir: StateDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Change an API key's budget; a running server counts by it within a second."""
    given = (daily_usd, weekly_usd, monthly_usd, total_usd)
    if all(value is None for value in given):
        fail("nothing to change: give --daily-usd, --weekly-usd, --monthly-usd or --total-usd")
    home = resolve_home(state_dir)
    target = state_target(home)

    async def change(store: StateStore) -> ApiKey | None:
        key = next((k for k in await store.list_keys() if k.id == key_id), None)
        if key is None:
            return None
        budget = budget_from(
            key.budget, daily=daily_usd, weekly=weekly_usd, monthly=monthly_usd, total=total_usd
        )
        return await store.set_key_budget(key_id, budget)

    key = _with_store(home, change) if target.exists() else None
    if key is None:
        fail(f"no API key {key_id!r} in {target.label}; `gw keys list` shows them")
    _print_key(key, as_json=as_json, verb="updated: ")


def _print_key(key: ApiKey, *, as_json: bool, verb: str = "") -> None:
    now = time.time()
    if as_json:
        print_json(key_json(key, now))
        return
    stdout.print(f"{verb}{describe(key)}", highlight=False, markup=False)


@keys_app.command("revoke")
def revoke_command(
    key_id: Annotated[str, typer.Argument(help="The key's id (key_...), from `gw keys list`.")],
    state_dir: StateDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Revoke an API key; a running server refuses it within a second."""
    home = resolve_home(state_dir)
    target = state_target(home)
    now = time.time()
    key = _with_store(home, lambda s: s.revoke_key(key_id, time=now)) if target.exists() else None
    if key is None:
        fail(f"no API key {key_id!r} in {target.label}; `gw keys list` shows them")
    if as_json:
        print_json(key_json(key, now))
        return
    already = key.revoked_at is not None and key.revoked_at < now
    verb = "was already revoked" if already else "revoked"
    stdout.print(f"{verb}: {describe(key)}", highlight=False, markup=False)

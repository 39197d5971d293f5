"""``gw keys``: how a key is shown, as a table and as JSON. Pure rendering.

``gw keys create --json`` prints the only copy of the key there will ever be::

    {"id": "key_3f9a0c1b2d4e", "key": "gw-...", "tenant": "team-a", "name": "app" | null,
     "scopes": ["inference"], "models": ["chat"] | null (any),
     "allowed_ips": ["10.0.0.0/8", "203.0.113.7/32"] | null (any address),
     "prefix": "gw-AbCd", "suffix": "wxYz",
     "created_at": "2026-03-15T14:02:03.120Z", "expires_at": ISO 8601 UTC | null,
     "budget": {"daily_usd": 5.0 | null, "weekly_usd", "monthly_usd", "total_usd"}}

``gw keys list --json`` prints an array, oldest first, and ``gw keys show --json``,
``gw keys update --json`` and ``gw keys revoke --json`` one item, each without the key::

    {"id", "tenant", "name", "scopes", "models", "allowed_ips", "prefix", "suffix",
     "created_at", "expires_at", "revoked_at" (ISO 8601 UTC | null), "budget" (as above),
     "status": "active" | "expired" | "revoked"}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from rich.table import Table
from rich.text import Text

from gw.cli.key_budget import budget_json, budget_text
from gw.cli.traces_view import local_time
from gw.store.api_keys import NO_BUDGET, ApiKey, NewKey
from gw.telemetry.explain import iso_utc
from gw.telemetry.printable import printable

KeyStatus = Literal["active", "expired", "revoked"]
STATUS_STYLES: dict[KeyStatus, str] = {"active": "green", "expired": "yellow", "revoked": "red"}


def key_status(key: ApiKey, now: float) -> KeyStatus:
    if key.revoked_at is not None:
        return "revoked"
    return "expired" if key.expired(now) else "active"


def _iso(timestamp: float | None) -> str | None:
    return None if timestamp is None else iso_utc(timestamp)


def _listed(names: tuple[str, ...] | None) -> list[str] | None:
    return None if names is None else list(names)


def allowed_ips_text(key: ApiKey) -> str:
    """``any``, or the allowlist with /32 and /128 left off single addresses."""
    if key.allowed_ips is None:
        return "any"
    return ",".join(_short(network) for network in key.allowed_ips)


def _short(network: str) -> str:
    address, _, length = network.partition("/")
    return address if length == ("128" if ":" in address else "32") else network


def key_json(key: ApiKey, now: float) -> dict[str, object]:
    """One stored key, never the key itself (gw does not have it)."""
    return {
        "id": key.id,
        "tenant": key.tenant,
        "name": key.name,
        "scopes": list(key.scopes),
        "models": _listed(key.models),
        "allowed_ips": _listed(key.allowed_ips),
        "prefix": key.prefix,
        "suffix": key.suffix,
        "created_at": iso_utc(key.created_at),
        "expires_at": _iso(key.expires_at),
        "revoked_at": _iso(key.revoked_at),
        "budget": budget_json(key.budget),
        "status": key_status(key, now),
    }


def created_json(new: NewKey) -> dict[str, object]:
    key = new.key
    return {
        "id": key.id,
        "key": new.plaintext,
        "tenant": key.tenant,
        "name": key.name,
        "scopes": list(key.scopes),
        "models": _listed(key.models),
        "allowed_ips": _listed(key.allowed_ips),
        "prefix": key.prefix,
        "suffix": key.suffix,
        "created_at": iso_utc(key.created_at),
        "expires_at": _iso(key.expires_at),
        "budget": budget_json(key.budget),
    }


def describe(key: ApiKey) -> str:
    """``key_… (gw-AbCd…wxYz) for tenant team-a, scopes inference, models any, from any
    address, budget $5.00/day, ...``"""
    models = ", ".join(key.models) if key.models is not None else "any"
    expires = "never" if key.expires_at is None else local_time(key.expires_at)
    ips = "any address" if key.allowed_ips is None else allowed_ips_text(key)
    return (
        f"{key.id} ({key.display}) for tenant {key.tenant}, scopes {', '.join(key.scopes)}, "
        f"models {models}, from {ips}, budget {budget_text(key.budget)}, expires {expires}"
    )


def keys_table(keys: Sequence[ApiKey], now: float) -> Table:
    table = Table(box=None, header_style="bold", pad_edge=False)
    columns = (
        "id", "key", "tenant", "name", "scopes", "models", "ips", "budget", "created", "expires",
    )  # fmt: skip
    for column in columns:
        table.add_column(column, no_wrap=True)
    table.add_column("status", no_wrap=True)
    for key in keys:
        status = key_status(key, now)
        label = status if key.revoked_at is None else f"revoked {local_time(key.revoked_at)}"
        table.add_row(
            key.id,
            key.display,
            key.tenant,
            Text(printable(key.name)) if key.name else "-",  # the operator's text, escaped
            ",".join(key.scopes),
            "any" if key.models is None else ",".join(key.models),
            allowed_ips_text(key),
            "-" if key.budget == NO_BUDGET else budget_text(key.budget),
            local_time(key.created_at),
            "never" if key.expires_at is None else local_time(key.expires_at),
            Text(label, style=STATUS_STYLES[status]),
        )
    return table

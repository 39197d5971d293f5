"""API keys as rows of the ``api_keys`` table: the SQL, and the mapping both ways.

The lists a key carries (scopes, models, allowed IPs) are stored as JSON arrays; its
budget as four nullable columns (schema version 14).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgspec

from gw.config.schema import TenantBudget
from gw.store.api_keys import ApiKey

INSERT_KEY: Final = """
INSERT INTO api_keys (
    id, digest, prefix, suffix, tenant, name, scopes, models, allowed_ips, created_at,
    expires_at, revoked_at, daily_usd, weekly_usd, monthly_usd, total_usd
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
SELECT_KEYS: Final = """
SELECT id, digest, prefix, suffix, tenant, name, scopes, models, allowed_ips, created_at,
    expires_at, revoked_at, daily_usd, weekly_usd, monthly_usd, total_usd
FROM api_keys
"""
UPDATE_BUDGET: Final = """
UPDATE api_keys SET daily_usd = ?, weekly_usd = ?, monthly_usd = ?, total_usd = ? WHERE id = ?
"""


def budget_update(key_id: str, budget: TenantBudget) -> tuple[str, tuple[object, ...]]:
    """The statement replacing a key's budget, all four periods at once, and its
    parameters."""
    return UPDATE_BUDGET, (*budget_params(budget), key_id)


_ENCODER: Final = msgspec.json.Encoder()
_NAMES: Final = msgspec.json.Decoder(tuple[str, ...])


def key_params(key: ApiKey) -> tuple[object, ...]:
    """``INSERT_KEY``'s parameters for ``key``: its digest and display parts, never the key."""
    return (
        key.id,
        key.digest,
        key.prefix,
        key.suffix,
        key.tenant,
        key.name,
        _names(key.scopes),
        None if key.models is None else _names(key.models),
        None if key.allowed_ips is None else _names(key.allowed_ips),
        key.created_at,
        key.expires_at,
        key.revoked_at,
        *budget_params(key.budget),
    )


def budget_params(budget: TenantBudget) -> tuple[float | None, ...]:
    """A budget as its four columns: day, week, month, total (NULL: none)."""
    return budget.daily_usd, budget.weekly_usd, budget.monthly_usd, budget.total_usd


def key_from_row(row: Sequence[Any]) -> ApiKey:
    """An ``api_keys`` row, columns in ``SELECT_KEYS`` order, as an ``ApiKey``."""
    (key_id, digest, prefix, suffix, tenant, name, scopes, models, ips, made, expires, gone) = row[
        :12
    ]
    daily, weekly, monthly, total = row[12:16]
    return ApiKey(
        id=key_id,
        digest=digest,
        prefix=prefix,
        suffix=suffix,
        tenant=tenant,
        name=name,
        scopes=_NAMES.decode(scopes),
        models=None if models is None else _NAMES.decode(models),
        allowed_ips=None if ips is None else _NAMES.decode(ips),
        created_at=made,
        expires_at=expires,
        revoked_at=gone,
        budget=TenantBudget(
            daily_usd=daily, weekly_usd=weekly, monthly_usd=monthly, total_usd=total
        ),
    )


def _names(names: tuple[str, ...]) -> str:
    return _ENCODER.encode(names).decode()

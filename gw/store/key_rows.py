"""API keys as rows of the ``api_keys`` table: the SQL, and the mapping both ways.

The lists a key carries (scopes, models, allowed IPs) are stored as JSON arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgspec

from gw.store.api_keys import ApiKey

INSERT_KEY: Final = """
INSERT INTO api_keys (
    id, digest, prefix, suffix, tenant, name, scopes, models, allowed_ips, created_at,
    expires_at, revoked_at
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
SELECT_KEYS: Final = """
SELECT id, digest, prefix, suffix, tenant, name, scopes, models, allowed_ips, created_at,
    expires_at, revoked_at
FROM api_keys
"""
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
    )


def key_from_row(row: Sequence[Any]) -> ApiKey:
    """An ``api_keys`` row, columns in ``SELECT_KEYS`` order, as an ``ApiKey``."""
    (key_id, digest, prefix, suffix, tenant, name, scopes, models, ips, made, expires, gone) = row
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
    )


def _names(names: tuple[str, ...]) -> str:
    return _ENCODER.encode(names).decode()

"""API keys as gw stores them: a SHA-256 digest of the secret and what a listing may show.

A key is ``gw-`` followed by 256 bits from the OS CSPRNG in URL-safe base64 without padding
(``secrets.token_urlsafe(32)``, 43 characters): unguessable, safe in a header, and easy to
recognise in a leaked file. Its plaintext exists only in the ``NewKey`` that ``new_key``
returns; the caller shows it once and gw keeps only the digest (invariant 9). The digest
needs no salt or slow hash: the secret has 256 bits of entropy, so no dictionary applies.

Scopes say what a key may call: ``inference`` (``/v1/*``), ``usage:read`` (usage reads and
``/metrics``, its own tenant's only), ``admin:read`` (every read of the admin plane: health,
status, config, traces, explain, route previews, every tenant's usage and metrics, a
dashboard login link), ``admin:config`` (config writes, reloads and rollbacks, and the reads
too), ``admin`` (all of the admin plane) and ``*`` (everything). A key may also be limited
to models, and to client networks (its IP allowlist, gw/store/ip_allowlist.py), and
given a budget (USD per UTC day, ISO week, month or in total), counted as ``@key:<id>``
besides its tenant's (gw/execution/limits.py).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field
from typing import Final, Literal, get_args

import msgspec

from gw.config.schema import TenantBudget

Scope = Literal["inference", "usage:read", "admin:read", "admin:config", "admin", "*"]
SCOPES: Final[tuple[Scope, ...]] = get_args(Scope)
DEFAULT_SCOPES: Final[tuple[Scope, ...]] = ("inference",)
# The scopes that hold another besides itself (``*`` holds every one).
_HELD_BY: Final[dict[str, tuple[str, ...]]] = {
    "usage:read": ("admin:read", "admin:config", "admin"),
    "admin:read": ("admin:config", "admin"),
    "admin:config": ("admin",),
}

KEY_PREFIX: Final = "gw-"
KEY_ID_PREFIX: Final = "key_"
DISPLAY_PREFIX_CHARS: Final = 7  # "gw-" and four random characters
DISPLAY_SUFFIX_CHARS: Final = 4
NO_BUDGET: Final = TenantBudget()


class ApiKey(msgspec.Struct, frozen=True, kw_only=True):
    """One stored key (a row of ``api_keys``); never holds the key itself."""

    id: str
    digest: str  # SHA-256 of the key, hex
    prefix: str  # first characters of the key, for display
    suffix: str  # last characters of the key, for display
    tenant: str
    name: str | None = None
    scopes: tuple[str, ...] = DEFAULT_SCOPES
    models: tuple[str, ...] | None = None  # None: any route or model
    # CIDRs in normal form (gw/store/ip_allowlist.py); None: any client address
    allowed_ips: tuple[str, ...] | None = None
    created_at: float
    expires_at: float | None = None
    revoked_at: float | None = None
    budget: TenantBudget = NO_BUDGET  # gw keys create/update --daily-usd ...

    @property
    def display(self) -> str:
        """``gw-AbCd…wxYz``: enough to tell keys apart, far too little to use one."""
        return f"{self.prefix}…{self.suffix}"

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    def active(self, now: float) -> bool:
        return self.revoked_at is None and not self.expired(now)


@dataclass(frozen=True)
class NewKey:
    """A key just made: the row to store, and the plaintext to show once."""

    key: ApiKey
    plaintext: str = field(repr=False)  # kept out of reprs, tracebacks and logs


def digest_of(token: str) -> str:
    """The SHA-256 hex digest gw stores and looks keys up by."""
    return hashlib.sha256(token.encode()).hexdigest()


def looks_like_key(token: str) -> bool:
    """Whether ``token`` could be a gw API key at all (saves a lookup for anything else)."""
    return token.startswith(KEY_PREFIX)


def new_key(
    *,
    tenant: str,
    created_at: float,
    name: str | None = None,
    scopes: tuple[str, ...] = DEFAULT_SCOPES,
    models: tuple[str, ...] | None = None,
    allowed_ips: tuple[str, ...] | None = None,
    expires_at: float | None = None,
    budget: TenantBudget = NO_BUDGET,
) -> NewKey:
    """A fresh key with 256 bits of CSPRNG entropy and a short random id."""
    plaintext = KEY_PREFIX + secrets.token_urlsafe(32)
    key = ApiKey(
        id=KEY_ID_PREFIX + secrets.token_hex(6),
        digest=digest_of(plaintext),
        prefix=plaintext[:DISPLAY_PREFIX_CHARS],
        suffix=plaintext[-DISPLAY_SUFFIX_CHARS:],
        tenant=tenant,
        name=name,
        scopes=scopes,
        models=models,
        allowed_ips=allowed_ips,
        created_at=created_at,
        expires_at=expires_at,
        budget=budget,
    )
    return NewKey(key=key, plaintext=plaintext)


def parse_scopes(text: str) -> tuple[Scope, ...]:
    """``"inference,usage:read"`` -> ``("inference", "usage:read")``; ValueError names an
    unknown scope. ``*`` stands alone: it already holds every other scope."""
    chosen: list[Scope] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        scope = next((s for s in SCOPES if s == part), None)
        if scope is None:
            raise ValueError(f"unknown scope {part!r}; scopes are {', '.join(SCOPES)}")
        if scope not in chosen:
            chosen.append(scope)
    if not chosen:
        raise ValueError(f"no scope given; scopes are {', '.join(SCOPES)}")
    return ("*",) if "*" in chosen else tuple(chosen)


def grants(scopes: tuple[str, ...], needed: Scope) -> bool:
    """Whether a key with ``scopes`` may do what ``needed`` guards: ``admin`` holds
    ``admin:config``, which holds ``admin:read``, which holds ``usage:read``."""
    return (
        "*" in scopes
        or needed in scopes
        or any(scope in scopes for scope in _HELD_BY.get(needed, ()))
    )

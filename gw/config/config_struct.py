"""The base of every config struct (gw/config/schema.py and the sections beside it)."""

from __future__ import annotations

import msgspec


class ConfigStruct(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Base of every config struct: immutable, keyword-only, unknown keys refused."""

"""The one base every IR struct derives from: frozen, keyword-only, strict."""

import msgspec


class IRStruct(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Immutable IR value; tagged subclasses form closed unions."""

"""Metric label values, bounded by construction: every value comes from a closed set.

Strategy: a label value is either a name the running config defines or a fixed word, never
a string a client sent. ``LabelSpace`` holds the names of one snapshot (built once per
config revision, so a request pays a few set lookups):

- ``route``: a route name of the snapshot, or ``provider/model`` for a directly addressed
  target that config knows (a route target or a catalog entry); ``""`` when routing never
  decided (an unknown model, a refused request); ``unknown`` otherwise.
- ``provider``: a configured provider name; ``""`` when none was tried; else ``unknown``.
- ``model``: the target's model when ``(provider, model)`` is a route target or in the
  catalog; ``""`` when none was tried; else ``unknown`` (``provider/any-model`` addressed
  directly never becomes a label).
- ``tenant``: a configured tenant; ``""`` for none (open mode, the admin key); else
  ``unknown`` (a key whose tenant left the config).
- ``error_code``: one of gw's stable codes (gw/errors.py); ``""`` when none; else ``other``.
- ``status_class``: ``1xx`` .. ``5xx``; ``other`` outside 100-599.
- ``outcome``: an ``AttemptRecord.outcome``; ``other`` for anything else.

Never a request id, key id, user, requested model or prompt.
"""

from __future__ import annotations

from typing import Final, get_args

from gw.config.snapshot import Snapshot
from gw.errors import ERRORS_BY_CODE
from gw.record import AttemptOutcome

NONE: Final = ""
UNKNOWN: Final = "unknown"
OTHER: Final = "other"

ERROR_CODES: Final = frozenset(ERRORS_BY_CODE)
OUTCOMES: Final[frozenset[str]] = frozenset(get_args(AttemptOutcome))
_STATUS_CLASSES: Final = ("1xx", "2xx", "3xx", "4xx", "5xx")


def status_class(status: int) -> str:
    return _STATUS_CLASSES[status // 100 - 1] if 100 <= status < 600 else OTHER


def error_label(code: str | None) -> str:
    if code is None:
        return NONE
    return code if code in ERROR_CODES else OTHER


def outcome_label(outcome: str) -> str:
    return outcome if outcome in OUTCOMES else OTHER


class LabelSpace:
    """The names one snapshot allows as label values; see the module docstring."""

    __slots__ = ("providers", "routes", "targets", "tenants")

    def __init__(self, snapshot: Snapshot) -> None:
        self.routes = frozenset(snapshot.routes)
        self.providers = frozenset(snapshot.providers)
        routes = snapshot.routes.values()
        routed = {(target.provider, target.model) for route in routes for target in route.targets}
        self.targets = frozenset(routed | set(snapshot.catalog))
        self.tenants = frozenset(snapshot.tenants)

    def route(self, name: str | None) -> str:
        if name is None:
            return NONE
        if name in self.routes:
            return name
        provider, sep, model = name.partition("/")
        return name if sep and (provider, model) in self.targets else UNKNOWN

    def target(self, provider: str | None, model: str | None) -> tuple[str, str]:
        """``(provider, model)`` labels of a target."""
        if provider is None:
            return NONE, NONE
        if provider not in self.providers:
            return UNKNOWN, UNKNOWN
        if model is None:
            return provider, NONE
        return provider, model if (provider, model) in self.targets else UNKNOWN

    def tenant(self, name: str | None) -> str:
        if name is None:
            return NONE
        return name if name in self.tenants else UNKNOWN

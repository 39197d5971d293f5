"""Which policy governs a request: the most specific match, then the highest priority.

A policy applies when every field of its ``match`` that is set matches the request; an
omitted field matches everything.

- ``routes``, ``tenants``, ``api_keys``: globs (``fnmatch.fnmatchcase``, so case-sensitive);
  the field matches when any pattern matches. A request with no tenant (or no API key)
  never matches a policy that lists tenants (or API keys), not even ``["*"]``.
- ``models``: matches when any pattern matches any of the route's target models, which the
  caller passes both as ``provider/model`` and as the bare model name.
- ``streaming``: equal to whether the request streams.
- ``capabilities``: matches when the request needs every listed capability.

Among matching policies the most specific wins. Each set field adds to the specificity:
2 when none of its patterns holds a glob character (``*``, ``?`` or ``[``), 1 otherwise;
``streaming`` and ``capabilities`` are exact and always add 2. So ``routes: ["chat"]`` (2)
beats ``routes: ["*"]`` (1), and ``{routes: ["chat"], tenants: ["team-*"]}`` (3) beats
both. Ties go to the higher ``priority``, then to the policy written first in the file.

No match gives ``DEFAULT_POLICY``, a policy named ``default`` with the built-in settings.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase

from gw.config.schema import Capability, PolicyConfig, PolicyMatch

DEFAULT_POLICY = PolicyConfig(name="default")

_GLOB_CHARACTERS = frozenset("*?[")
_EXACT = 2
_GLOB = 1


def resolve_policy(
    policies: Sequence[PolicyConfig],
    *,
    route: str,
    models: Sequence[str],
    streaming: bool,
    tenant: str | None,
    api_key_id: str | None,
    capabilities: frozenset[Capability],
) -> PolicyConfig:
    """The policy that governs a request with these attributes (see the module docstring)."""
    best: tuple[int, int, int] | None = None
    chosen = DEFAULT_POLICY
    for index, policy in enumerate(policies):
        specificity = match_specificity(
            policy.match,
            route=route,
            models=models,
            streaming=streaming,
            tenant=tenant,
            api_key_id=api_key_id,
            capabilities=capabilities,
        )
        if specificity is None:
            continue
        # Smaller is better: most specific, then highest priority, then first in the file.
        key = (-specificity, -policy.priority, index)
        if best is None or key < best:
            best, chosen = key, policy
    return chosen


def match_specificity(
    match: PolicyMatch,
    *,
    route: str,
    models: Sequence[str],
    streaming: bool,
    tenant: str | None,
    api_key_id: str | None,
    capabilities: frozenset[Capability],
) -> int | None:
    """How specific ``match`` is for this request, or ``None`` when it does not match."""
    checks: list[tuple[bool, int]] = []
    if match.routes is not None:
        checks.append((_any_glob(match.routes, (route,)), _pattern_weight(match.routes)))
    if match.models is not None:
        checks.append((_any_glob(match.models, models), _pattern_weight(match.models)))
    if match.tenants is not None:
        values = () if tenant is None else (tenant,)
        checks.append((_any_glob(match.tenants, values), _pattern_weight(match.tenants)))
    if match.api_keys is not None:
        values = () if api_key_id is None else (api_key_id,)
        checks.append((_any_glob(match.api_keys, values), _pattern_weight(match.api_keys)))
    if match.streaming is not None:
        checks.append((match.streaming == streaming, _EXACT))
    if match.capabilities is not None:
        checks.append((set(match.capabilities) <= capabilities, _EXACT))
    if not all(matched for matched, _ in checks):
        return None
    return sum(weight for _, weight in checks)


def _any_glob(patterns: Sequence[str], values: Sequence[str]) -> bool:
    return any(fnmatchcase(value, pattern) for pattern in patterns for value in values)


def _pattern_weight(patterns: Sequence[str]) -> int:
    if any(_GLOB_CHARACTERS.intersection(pattern) for pattern in patterns):
        return _GLOB
    return _EXACT

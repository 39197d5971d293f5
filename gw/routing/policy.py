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

Strategy: a policy only matches when all its set fields match, so its specificity is
fixed by which fields are set, whatever the request. Resolution is therefore split in
two: ``route_policies`` keeps the policies whose ``routes`` and ``models`` match a route,
best first (done once per route, see ``gw.routing.plan``), and ``first_matching`` walks
that list per request, checking only the fields that depend on the request.
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
    return first_matching(
        route_policies(policies, route=route, models=models),
        streaming=streaming,
        tenant=tenant,
        api_key_id=api_key_id,
        capabilities=capabilities,
    )


def route_policies(
    policies: Sequence[PolicyConfig], *, route: str, models: Sequence[str]
) -> tuple[PolicyConfig, ...]:
    """The policies whose ``routes`` and ``models`` match, best first for ``first_matching``."""
    applicable = [
        (-specificity(policy.match), -policy.priority, index, policy)
        for index, policy in enumerate(policies)
        if _matches_route(policy.match, route=route, models=models)
    ]
    # Most specific, then highest priority, then first in the file; index keys are unique.
    applicable.sort(key=lambda item: item[:3])
    return tuple(policy for *_, policy in applicable)


def first_matching(
    ordered: Sequence[PolicyConfig],
    *,
    streaming: bool,
    tenant: str | None,
    api_key_id: str | None,
    capabilities: frozenset[Capability],
) -> PolicyConfig:
    """The first of ``ordered`` (from ``route_policies``) that the request matches."""
    for policy in ordered:
        if _matches_request(
            policy.match,
            streaming=streaming,
            tenant=tenant,
            api_key_id=api_key_id,
            capabilities=capabilities,
        ):
            return policy
    return DEFAULT_POLICY


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
    if not _matches_route(match, route=route, models=models):
        return None
    if not _matches_request(
        match,
        streaming=streaming,
        tenant=tenant,
        api_key_id=api_key_id,
        capabilities=capabilities,
    ):
        return None
    return specificity(match)


def specificity(match: PolicyMatch) -> int:
    """The specificity ``match`` has whenever it matches: the sum of its set fields' weights."""
    weight = 0
    for patterns in (match.routes, match.models, match.tenants, match.api_keys):
        if patterns is not None:
            weight += _pattern_weight(patterns)
    if match.streaming is not None:
        weight += _EXACT
    if match.capabilities is not None:
        weight += _EXACT
    return weight


def _matches_route(match: PolicyMatch, *, route: str, models: Sequence[str]) -> bool:
    if match.routes is not None and not _any_glob(match.routes, (route,)):
        return False
    return match.models is None or _any_glob(match.models, models)


def _matches_request(
    match: PolicyMatch,
    *,
    streaming: bool,
    tenant: str | None,
    api_key_id: str | None,
    capabilities: frozenset[Capability],
) -> bool:
    if match.streaming is not None and match.streaming != streaming:
        return False
    if match.capabilities is not None and not capabilities.issuperset(match.capabilities):
        return False
    if match.tenants is not None and (tenant is None or not _any_glob(match.tenants, (tenant,))):
        return False
    return match.api_keys is None or (
        api_key_id is not None and _any_glob(match.api_keys, (api_key_id,))
    )


def _any_glob(patterns: Sequence[str], values: Sequence[str]) -> bool:
    return any(fnmatchcase(value, pattern) for pattern in patterns for value in values)


def _pattern_weight(patterns: Sequence[str]) -> int:
    if any(_GLOB_CHARACTERS.intersection(pattern) for pattern in patterns):
        return _GLOB
    return _EXACT

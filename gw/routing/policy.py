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
- ``kinds``: the request's kind is listed (``chat``, ``responses``, ``embeddings``,
  ``count_tokens``; ``kind_of_endpoint``).
- ``min_prompt_tokens`` / ``max_prompt_tokens``: the estimated prompt lies within them.

Among matching policies the most specific wins, ranked by field kind: one that sets
``api_keys`` beats any that does not, then ``tenants``, then the model (``routes`` and
``models``), ``capabilities``, ``streaming``, ``kinds``, and last the prompt size. Within a
kind an exact pattern (no ``*``, ``?`` or ``[``) beats a glob, and for the model, setting
both ``routes`` and ``models`` beats setting one. So ``{api_keys: [key_1]}`` beats
``{routes: [chat], streaming: true}``, and ``routes: ["chat"]`` beats ``routes: ["*"]``.
Ties go to the higher ``priority``, then to the policy written first in the file.

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
from typing import Final

from gw.config.schema import Capability, PolicyConfig, PolicyMatch, RequestKind

DEFAULT_POLICY = PolicyConfig(name="default")

_GLOB_CHARACTERS = frozenset("*?[")
_EXACT = 2
_GLOB = 1
_SET = 1  # a field with no glob form: set or not

# The trace's endpoint names (gw/server/inference/) by the kind a policy matches on.
_ENDPOINT_KINDS: Final[dict[str, RequestKind]] = {
    "responses": "responses",
    "embeddings": "embeddings",
    "gemini.embedContent": "embeddings",
    "gemini.batchEmbedContents": "embeddings",
    "messages.count_tokens": "count_tokens",
    "gemini.countTokens": "count_tokens",
}

# The field kinds in rank order, as ``specificity`` weighs them (for explain and docs).
SPECIFICITY_ORDER: Final = (
    "api_keys",
    "tenants",
    "model",
    "capabilities",
    "streaming",
    "kinds",
    "prompt_tokens",
)

Specificity = tuple[int, int, int, int, int, int, int]


def kind_of_endpoint(endpoint: str) -> RequestKind:
    """The kind of a request to ``endpoint``: every other endpoint is a chat."""
    return _ENDPOINT_KINDS.get(endpoint, "chat")


def resolve_policy(
    policies: Sequence[PolicyConfig],
    *,
    route: str,
    models: Sequence[str],
    streaming: bool,
    tenant: str | None,
    api_key_id: str | None,
    capabilities: frozenset[Capability],
    kind: RequestKind = "chat",
    prompt_tokens: int = 0,
) -> PolicyConfig:
    """The policy that governs a request with these attributes (see the module docstring)."""
    return first_matching(
        route_policies(policies, route=route, models=models),
        streaming=streaming,
        tenant=tenant,
        api_key_id=api_key_id,
        capabilities=capabilities,
        kind=kind,
        prompt_tokens=prompt_tokens,
    )


def route_policies(
    policies: Sequence[PolicyConfig], *, route: str, models: Sequence[str]
) -> tuple[PolicyConfig, ...]:
    """The policies whose ``routes`` and ``models`` match, best first for ``first_matching``."""
    applicable = [
        (tuple(-weight for weight in specificity(policy.match)), -policy.priority, index, policy)
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
    kind: RequestKind = "chat",
    prompt_tokens: int = 0,
) -> PolicyConfig:
    """The first of ``ordered`` (from ``route_policies``) that the request matches."""
    for policy in ordered:
        if _matches_request(
            policy.match,
            streaming=streaming,
            tenant=tenant,
            api_key_id=api_key_id,
            capabilities=capabilities,
            kind=kind,
            prompt_tokens=prompt_tokens,
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
    kind: RequestKind = "chat",
    prompt_tokens: int = 0,
) -> Specificity | None:
    """How specific ``match`` is for this request, or ``None`` when it does not match."""
    if not _matches_route(match, route=route, models=models):
        return None
    if not _matches_request(
        match,
        streaming=streaming,
        tenant=tenant,
        api_key_id=api_key_id,
        capabilities=capabilities,
        kind=kind,
        prompt_tokens=prompt_tokens,
    ):
        return None
    return specificity(match)


def specificity(match: PolicyMatch) -> Specificity:
    """The specificity ``match`` has whenever it matches: one weight per field kind, in
    ``SPECIFICITY_ORDER``, compared left to right."""
    return (
        _pattern_weight(match.api_keys),
        _pattern_weight(match.tenants),
        _pattern_weight(match.routes) + _pattern_weight(match.models),
        _SET if match.capabilities is not None else 0,
        _SET if match.streaming is not None else 0,
        _SET if match.kinds is not None else 0,
        _SET if match.min_prompt_tokens is not None or match.max_prompt_tokens is not None else 0,
    )


def matched_fields(match: PolicyMatch) -> tuple[str, ...]:
    """The fields ``match`` sets, in rank order: what a request matched it on."""
    weights = specificity(match)
    return tuple(name for name, weight in zip(SPECIFICITY_ORDER, weights, strict=True) if weight)


def _matches_route(match: PolicyMatch, *, route: str, models: Sequence[str]) -> bool:
    if match.routes is not None and not _any_glob(match.routes, (route,)):
        return False
    return match.models is None or _any_glob(match.models, models)


def _matches_request(  # noqa: PLR0911 -- one early exit per field
    match: PolicyMatch,
    *,
    streaming: bool,
    tenant: str | None,
    api_key_id: str | None,
    capabilities: frozenset[Capability],
    kind: RequestKind,
    prompt_tokens: int,
) -> bool:
    if match.streaming is not None and match.streaming != streaming:
        return False
    if match.capabilities is not None and not capabilities.issuperset(match.capabilities):
        return False
    if match.kinds is not None and kind not in match.kinds:
        return False
    if match.min_prompt_tokens is not None and prompt_tokens < match.min_prompt_tokens:
        return False
    if match.max_prompt_tokens is not None and prompt_tokens > match.max_prompt_tokens:
        return False
    if match.tenants is not None and (tenant is None or not _any_glob(match.tenants, (tenant,))):
        return False
    return match.api_keys is None or (
        api_key_id is not None and _any_glob(match.api_keys, (api_key_id,))
    )


def _any_glob(patterns: Sequence[str], values: Sequence[str]) -> bool:
    return any(fnmatchcase(value, pattern) for pattern in patterns for value in values)


def _pattern_weight(patterns: Sequence[str] | None) -> int:
    if patterns is None:
        return 0
    if any(_GLOB_CHARACTERS.intersection(pattern) for pattern in patterns):
        return _GLOB
    return _EXACT

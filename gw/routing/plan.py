"""RoutePlan: what routing needs to know about a route that no request can change.

``decide`` runs per request; most of what it reads depends only on the snapshot and the
route: each target's catalog entry and ``provider/model`` key, the catalog's quality
scores, and which policies the route's name and models can match. A plan holds those,
computed once per client model name and kept in ``Snapshot.derived`` (see the comment
there for why that cache is safe).
"""

from __future__ import annotations

import msgspec

from gw.config.schema import ModelEntry, PolicyConfig, RouteConfig, TargetConfig
from gw.config.snapshot import Snapshot, is_direct
from gw.config.wire_formats import native_format
from gw.ir import NativeFormat
from gw.routing.decision import TargetRef
from gw.routing.policy import route_policies


class PlannedTarget(msgspec.Struct, frozen=True, kw_only=True):
    """A route target joined with its catalog entry (``None``: not in the catalog)."""

    target: TargetConfig
    entry: ModelEntry | None
    key: str  # provider/model, how views such as latency and quality name a target
    # The format of the native tools its provider's kind takes (None: none).
    native_format: NativeFormat | None = None
    # Why an operator's switch forbids calling it (gw/config/switches.py); None: it may.
    switched_off: str | None = None


class RoutePlan(msgspec.Struct, frozen=True, kw_only=True):
    """Everything ``decide`` reads about one route that does not depend on the request."""

    route: RouteConfig
    direct: bool
    targets: tuple[PlannedTarget, ...]
    policies: tuple[PolicyConfig, ...]  # may match this route, best first (route_policies)
    quality: dict[str, float]  # catalog quality by provider/model, where known
    # The first index of each provider/model among the targets: rejected candidates are
    # listed in this order. A route may list the same target twice.
    position: dict[tuple[str, str], int]
    # The priority strategy's chain when every target passes, worked out once: target
    # indices in chain order, each target's rank, and the chain's refs in target order.
    priority_order: tuple[int, ...]
    priority_ranks: tuple[int, ...]
    refs: tuple[TargetRef, ...]


def route_plan(snapshot: Snapshot, name: str) -> RoutePlan:
    """The plan for the client's ``model``; raises ``ModelNotFoundError`` for an unknown one."""
    cached = snapshot.derived.get(name)
    if isinstance(cached, RoutePlan):
        return cached
    plan = build_plan(snapshot.resolve_model(name), snapshot)
    # A direct provider/model can be any string a client sends; keep only catalogued ones,
    # so the cache stays as small as the config.
    if not plan.direct or all(target.entry is not None for target in plan.targets):
        snapshot.derived[name] = plan
    return plan


def build_plan(route: RouteConfig, snapshot: Snapshot) -> RoutePlan:
    """The plan for ``route`` under ``snapshot``'s catalog and policies; not cached."""
    targets = tuple(
        PlannedTarget(
            target=target,
            entry=snapshot.catalog.get((target.provider, target.model)),
            key=f"{target.provider}/{target.model}",
            native_format=_native_format(snapshot, target.provider),
            switched_off=snapshot.switches.target_off(
                route.name, target.provider, f"{target.provider}/{target.model}"
            ),
        )
        for target in route.targets
    )
    # Stable, like rank_by_priority: ties keep config order.
    order = sorted(range(len(targets)), key=lambda index: targets[index].target.priority)
    ranks = [0] * len(targets)
    for rank, index in enumerate(order):
        ranks[index] = rank
    position: dict[tuple[str, str], int] = {}
    models: dict[str, None] = {}
    for index, target in enumerate(route.targets):
        position.setdefault((target.provider, target.model), index)
        models[f"{target.provider}/{target.model}"] = None
        models[target.model] = None
    return RoutePlan(
        route=route,
        direct=is_direct(route),
        targets=targets,
        policies=route_policies(snapshot.policies, route=route.name, models=list(models)),
        quality={
            planned.key: planned.entry.quality
            for planned in targets
            if planned.entry is not None and planned.entry.quality is not None
        },
        position=position,
        priority_order=tuple(order),
        priority_ranks=tuple(ranks),
        refs=tuple(TargetRef(provider=t.provider, model=t.model) for t in route.targets),
    )


def _native_format(snapshot: Snapshot, provider: str) -> NativeFormat | None:
    config = snapshot.providers.get(provider)
    return None if config is None else native_format(config.kind)

"""decide() against a straightforward reference, on generated configs and requests.

``decide`` precomputes per route (``gw.routing.plan``) and takes shortcuts per request;
the reference below recomputes everything per request, the plain way, from the rules in
the routing module docstrings. Every field of both decisions must be equal.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from gw.config import Snapshot, compile_snapshot, load_config
from gw.config.schema import (
    Capability,
    ModelEntry,
    PolicyConfig,
    PolicyMatch,
    RequestKind,
    RouteConfig,
)
from gw.ir import (
    AssistantMessage,
    ChatRequest,
    ImagePart,
    Message,
    ResponseFormat,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolChoice,
    ToolDefinition,
    UserMessage,
)
from gw.routing import DEFAULT_POLICY, decide, required_capabilities
from gw.routing.decision import Candidate, RejectReason, RouteDecision, TargetRef
from gw.routing.filters import format_usd
from gw.routing.inputs import RoutingInputs
from gw.routing.plan import route_plan
from gw.routing.router import clamp_max_tokens

# ---------------------------------------------------------------------------------------
# The reference: every step recomputed per request, no precomputation, no shortcuts.


def reference_decide(
    request: ChatRequest,
    snapshot: Snapshot,
    *,
    request_id: str,
    tenant: str | None,
    api_key_id: str | None,
    latency_ms: Mapping[str, float] | None,
    kind: RequestKind,
) -> tuple[RouteDecision, PolicyConfig]:
    route = snapshot.resolve_model(request.model)
    needs = required_capabilities(request)
    input_tokens = _estimate(request)
    # What the decision records it was routed on (gw/routing/inputs.py).
    inputs = RoutingInputs(
        kind=kind,
        stream=request.stream,
        max_tokens=request.max_tokens,
        needs=needs,
        input_tokens=input_tokens,
        window_tokens=input_tokens,
    )
    policy = _policy(
        snapshot.policies,
        route,
        streaming=request.stream,
        tenant=tenant,
        api_key_id=api_key_id,
        needs=needs,
        kind=kind,
        prompt_tokens=input_tokens,
    )
    strategy = policy.strategy or route.strategy
    if policy.deny:
        reason = policy.deny_reason or f"requests matching policy {policy.name!r} are denied"
        denied = RouteDecision(
            route=route.name,
            direct="/" in route.name,
            policy=policy.name,
            strategy=strategy,
            chain=(),
            candidates=(),
            estimated_input_tokens=input_tokens,
            max_output_tokens=None,
            notes=(f"denied by policy {policy.name}: {reason}",),
            inputs=inputs,
        )
        return denied, policy
    max_output, clamp_notes = clamp_max_tokens(request.max_tokens, policy.limits.max_output_tokens)
    ceiling = policy.limits.max_cost_per_request_usd
    notes: list[str] = list(clamp_notes)
    candidates = []
    for target in route.targets:
        entry = snapshot.catalog.get((target.provider, target.model))
        cost = None
        reason = detail = None
        if entry is None:
            key = f"{target.provider}/{target.model}"
            notes.append(f"no catalog entry for {key}; capabilities and price unknown")
            if ceiling is not None and policy.limits.unpriced == "allow":
                notes.append(f"{key} has no price: allowed by limits.unpriced: allow")
            elif ceiling is not None:
                reason = "cost_ceiling"
                detail = (
                    f"no known price, so the {format_usd(ceiling)} ceiling cannot hold it; "
                    "price it under models, or set the policy's limits.unpriced: allow"
                )
        if entry is not None:
            output = 1024 if max_output is None else max_output
            cost = input_tokens * entry.input_per_mtok / 1e6 + output * entry.output_per_mtok / 1e6
            reason, detail = _filter(
                entry,
                needs=needs,
                input_tokens=input_tokens,
                max_output=max_output,
                cost=cost,
                ceiling=ceiling,
            )
        candidates.append(
            Candidate(
                provider=target.provider,
                model=target.model,
                priority=target.priority,
                weight=target.weight,
                estimated_cost_usd=cost,
                rejected=reason,
                detail=detail,
            )
        )
    degraded: tuple[str, ...] = ()
    if (
        ceiling is not None
        and all(c.rejected is not None for c in candidates)
        and any(c.rejected == "cost_ceiling" for c in candidates)
    ):
        candidates = [
            msgspec.structs.replace(
                c, rejected=None, relaxed=True, detail=f"{c.detail}; kept: no target fits"
            )
            if c.rejected == "cost_ceiling"
            else c
            for c in candidates
        ]
        degraded = (f"cost ceiling {format_usd(ceiling)} relaxed: no target fits",)
    kept = [c for c in candidates if c.rejected is None]
    ranked, zero_weight, rank_notes = _rank(strategy, kept, request_id, snapshot, latency_ms)
    first_index: dict[tuple[str, str], int] = {}
    for index, target in enumerate(route.targets):
        first_index.setdefault((target.provider, target.model), index)
    rejected = [c for c in candidates if c.rejected is not None] + zero_weight
    rejected.sort(key=lambda c: first_index[(c.provider, c.model)])
    decision = RouteDecision(
        route=route.name,
        direct="/" in route.name,
        policy=policy.name,
        strategy=strategy,
        chain=tuple(TargetRef(provider=c.provider, model=c.model) for c in ranked),
        candidates=(*ranked, *rejected),
        estimated_input_tokens=input_tokens,
        max_output_tokens=max_output,
        degraded=bool(degraded),
        degraded_reasons=degraded,
        notes=(*notes, *rank_notes),
        warnings=clamp_notes,
        inputs=inputs,
    )
    return decision, policy


def _policy(
    policies: Sequence[PolicyConfig],
    route: RouteConfig,
    *,
    streaming: bool,
    tenant: str | None,
    api_key_id: str | None,
    needs: frozenset[Capability],
    kind: RequestKind,
    prompt_tokens: int,
) -> PolicyConfig:
    models = [f"{t.provider}/{t.model}" for t in route.targets] + [t.model for t in route.targets]
    best: tuple[tuple[int, ...], int, int] | None = None
    chosen = DEFAULT_POLICY
    for index, policy in enumerate(policies):
        specificity = _specificity(
            policy.match,
            route=route.name,
            models=models,
            streaming=streaming,
            tenant=tenant,
            api_key_id=api_key_id,
            needs=needs,
            kind=kind,
            prompt_tokens=prompt_tokens,
        )
        if specificity is not None:
            key = (tuple(-w for w in specificity), -policy.priority, index)
            if best is None or key < best:
                best, chosen = key, policy
    return chosen


def _specificity(
    match: PolicyMatch,
    *,
    route: str,
    models: list[str],
    streaming: bool,
    tenant: str | None,
    api_key_id: str | None,
    needs: frozenset[Capability],
    kind: RequestKind,
    prompt_tokens: int,
) -> tuple[int, ...] | None:
    """Weights by field kind, compared left to right: API key, tenant, model (routes plus
    models), capabilities, streaming, kinds, prompt size; exact 2, glob 1, set 1."""
    weights: dict[str, int] = {}
    globbed = [
        ("api_keys", match.api_keys, [] if api_key_id is None else [api_key_id]),
        ("tenants", match.tenants, [] if tenant is None else [tenant]),
        ("model", match.routes, [route]),
        ("model", match.models, models),
    ]
    for kind_of_field, patterns, values in globbed:
        if patterns is None:
            continue
        if not any(fnmatchcase(v, p) for p in patterns for v in values):
            return None
        weight = 1 if any(ch in p for p in patterns for ch in "*?[") else 2
        weights[kind_of_field] = weights.get(kind_of_field, 0) + weight
    if match.capabilities is not None:
        if not set(match.capabilities) <= needs:
            return None
        weights["capabilities"] = 1
    if match.streaming is not None:
        if match.streaming != streaming:
            return None
        weights["streaming"] = 1
    if match.kinds is not None:
        if kind not in match.kinds:
            return None
        weights["kinds"] = 1
    low, high = match.min_prompt_tokens, match.max_prompt_tokens
    if low is not None or high is not None:
        if (low is not None and prompt_tokens < low) or (high is not None and prompt_tokens > high):
            return None
        weights["size"] = 1
    order = ("api_keys", "tenants", "model", "capabilities", "streaming", "kinds", "size")
    return tuple(weights.get(name, 0) for name in order)


def _estimate(request: ChatRequest) -> int:
    chars = 0
    images = 0
    for message in request.messages:
        if isinstance(message, UserMessage):
            for part in message.content:
                if isinstance(part, TextPart):
                    chars += len(part.text)
                else:
                    images += 85 if part.detail == "low" else 765
        else:
            chars += sum(len(part.text) for part in message.content)
        if isinstance(message, AssistantMessage):
            chars += sum(len(call.name) + len(call.arguments) for call in message.tool_calls)
    chars += sum(len(msgspec.json.encode(tool)) for tool in request.tools)
    schema = request.response_format
    if schema is not None and schema.type == "json_schema" and schema.json_schema is not None:
        chars += len(msgspec.json.encode(schema.json_schema))
    return math.ceil(chars / 4) + 4 * len(request.messages) + images


def _filter(
    entry: ModelEntry,
    *,
    needs: frozenset[Capability],
    input_tokens: int,
    max_output: int | None,
    cost: float,
    ceiling: float | None,
) -> tuple[RejectReason, str] | tuple[None, None]:
    missing = sorted(needs - set(entry.capabilities))
    if missing:
        return "missing_capability", f"lacks {', '.join(missing)}"
    window = entry.context_window
    if window is not None and input_tokens + (max_output or 0) > window:
        output = f" + {max_output} output" if max_output else ""
        return (
            "context_window",
            f"about {input_tokens} input{output} tokens exceed its {window}-token context window",
        )
    if ceiling is not None and cost > ceiling:
        return (
            "cost_ceiling",
            f"projected {format_usd(cost)} is above the {format_usd(ceiling)} ceiling",
        )
    return None, None


def _rank_by_latency(
    kept: list[Candidate], views: Mapping[str, float]
) -> tuple[list[tuple[tuple[float, ...], float | None, Candidate]], tuple[str, ...]]:
    """Unmeasured targets first (by priority), then by observed latency."""

    def key(c: Candidate) -> str:
        return f"{c.provider}/{c.model}"

    def rank_key(value: float | None, c: Candidate) -> tuple[float, ...]:
        return (0, 0.0, c.priority) if value is None else (1, value, c.priority)

    unmeasured = [key(c) for c in kept if key(c) not in views]
    scored = [(rank_key(views.get(key(c)), c), views.get(key(c)), c) for c in kept]
    notes: tuple[str, ...] = ()
    if kept and len(unmeasured) == len(kept):
        notes = ("no latency observed yet; ordered by priority",)
    elif unmeasured:
        notes = (
            f"no latency observed yet for {', '.join(unmeasured)}; "
            "tried first, by priority, to measure it",
        )
    return scored, notes


def _rank(
    strategy: str,
    kept: list[Candidate],
    request_id: str,
    snapshot: Snapshot,
    latency_ms: Mapping[str, float] | None,
) -> tuple[list[Candidate], list[Candidate], tuple[str, ...]]:
    def key(c: Candidate) -> str:
        return f"{c.provider}/{c.model}"

    def unknown_last(value: float | None, c: Candidate) -> tuple[float, ...]:
        return (1, 0.0, c.priority) if value is None else (0, value, c.priority)

    scored: list[tuple[tuple[float, ...], float | None, Candidate]] = []
    zero_weight: list[Candidate] = []
    notes: tuple[str, ...] = ()
    if strategy == "priority":
        scored = [((c.priority,), float(c.priority), c) for c in kept]
    elif strategy == "weighted":
        positive = [c for c in kept if c.weight > 0]
        if not positive:
            notes = ("every remaining target has weight 0; all picked with equal chance",)
        zero_weight = [
            msgspec.structs.replace(
                c, rejected="zero_weight", detail="weight 0: the weighted strategy never picks it"
            )
            for c in kept
            if positive and c.weight <= 0
        ]
        for c in positive or kept:
            weight = c.weight if positive else 1.0
            digest = hashlib.sha256(f"{request_id}\0{key(c)}".encode()).digest()
            u = ((int.from_bytes(digest[:8], "big") >> 11) + 0.5) / 2.0**53
            scored.append(((-math.log(u) / weight,), u ** (1.0 / weight), c))
    elif strategy == "lowest_cost":
        scored = [(unknown_last(c.estimated_cost_usd, c), c.estimated_cost_usd, c) for c in kept]
    elif strategy == "highest_quality":
        for c in kept:
            entry = snapshot.catalog.get((c.provider, c.model))
            value = None if entry is None else entry.quality
            scored.append((unknown_last(None if value is None else -value, c), value, c))
    else:
        scored, notes = _rank_by_latency(kept, latency_ms or {})
    scored.sort(key=lambda item: item[0])
    ranked = [
        msgspec.structs.replace(c, score=score, rank=position)
        for position, (_, score, c) in enumerate(scored)
    ]
    return ranked, zero_weight, notes


# ---------------------------------------------------------------------------------------
# Generated configs and requests: small name spaces, so targets repeat and policies collide.

PROVIDERS = ["p0", "p1", "p2"]
MODELS = ["m0", "m1", "m2"]
PAIRS = [(p, m) for p in PROVIDERS for m in MODELS]
CAPABILITIES = ["tools", "vision", "json_schema", "json_object"]
STRATEGIES = ["priority", "weighted", "lowest_cost", "lowest_latency", "highest_quality"]


def _optional(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | values


# Most pairs listed: a route with an unlisted target never runs out of candidates.
catalog_entries = st.dictionaries(
    st.sampled_from(PAIRS),
    st.fixed_dictionaries(
        {
            "input_per_mtok": st.sampled_from([0.0, 0.15, 2.5]),
            "output_per_mtok": st.sampled_from([0.0, 0.6, 10.0]),
            "context_window": _optional(st.sampled_from([900, 100_000])),
            "capabilities": st.lists(st.sampled_from(CAPABILITIES), unique=True),
            "quality": _optional(st.sampled_from([0.2, 0.7, 0.9])),
        }
    ),
    min_size=len(PAIRS) - 2,
)
# (provider, model), priority, weight
route_targets = st.lists(
    st.tuples(st.sampled_from(PAIRS), st.integers(0, 3), st.sampled_from([0.0, 0.5, 1.0, 3.0])),
    min_size=1,
    max_size=6,
)
policy_matches = st.fixed_dictionaries(
    {},
    optional={
        "routes": st.lists(st.sampled_from(["a", "b", "*", "a*", "?", "[ab]", "c"]), max_size=2),
        "models": st.lists(st.sampled_from(["m0", "p1/m2", "m*", "p0/*", "x"]), max_size=2),
        "tenants": st.lists(st.sampled_from(["t1", "t*", "*"]), max_size=2),
        "api_keys": st.lists(st.sampled_from(["k1", "k?", "*"]), max_size=2),
        "streaming": st.booleans(),
        "capabilities": st.lists(st.sampled_from(CAPABILITIES), unique=True, max_size=2),
        "kinds": st.lists(st.sampled_from(["chat", "responses"]), unique=True, max_size=2),
        "min_prompt_tokens": st.sampled_from([0, 100, 1000]),
        "max_prompt_tokens": st.sampled_from([1000, 1500, 10000]),
    },
)
policy_bodies = st.fixed_dictionaries(
    {
        "match": st.just({}) | policy_matches,
        "priority": st.integers(0, 2),
        "deny": st.sampled_from([False, False, False, True]),  # mostly routed
        "limits": st.fixed_dictionaries(
            {},
            optional={
                "max_output_tokens": st.integers(1, 3000),
                "max_cost_per_request_usd": st.sampled_from([0.0, 0.0001, 0.01, 1.0]),
                "unpriced": st.sampled_from(["exclude", "allow"]),
            },
        ),
    },
    optional={"strategy": st.sampled_from(STRATEGIES)},
)


@st.composite
def snapshots(draw: st.DrawFn) -> Snapshot:
    routes = []
    for name in ("a", "b"):
        strategy = draw(st.sampled_from(STRATEGIES))
        targets = draw(route_targets)
        if strategy == "weighted" and not any(weight > 0 for _, _, weight in targets):
            targets[0] = (targets[0][0], targets[0][1], 1.0)  # validation wants a positive weight
        routes.append(
            {
                "name": name,
                "strategy": strategy,
                "targets": [
                    {"provider": provider, "model": model, "priority": priority, "weight": weight}
                    for (provider, model), priority, weight in targets
                ],
            }
        )
    data = {
        "providers": [{"name": p, "kind": "mock"} for p in PROVIDERS],
        "models": [
            {"provider": p, "model": m, **fields}
            for (p, m), fields in draw(catalog_entries).items()
        ],
        "routes": routes,
        "policies": [
            {"name": f"policy{i}", **body}
            for i, body in enumerate(draw(st.lists(policy_bodies, max_size=5)))
        ],
    }
    config = load_config(json.dumps(data), "test.yaml")  # JSON is YAML
    return compile_snapshot(config, revision=1, source="t")


@st.composite
def requests(draw: st.DrawFn) -> ChatRequest:
    parts: tuple[TextPart | ImagePart, ...] = (TextPart(text="x" * draw(st.integers(0, 6000))),)
    if draw(st.booleans()):
        parts += (
            ImagePart(url="https://example.com/a.png", detail=draw(_optional(st.just("low")))),
        )
    messages: tuple[Message, ...] = (UserMessage(content=parts),)
    if draw(st.booleans()):
        messages = (
            SystemMessage(content=(TextPart(text="be brief"),)),
            *messages,
            AssistantMessage(tool_calls=(ToolCall(id="c1", name="f", arguments='{"a": 1}'),)),
        )
    return ChatRequest(
        model=draw(st.sampled_from(["a", "b", "p0/m0", "p1/m2", "p2/unlisted"])),
        messages=messages,
        tools=(ToolDefinition(name="f"),) if draw(st.booleans()) else (),
        tool_choice=draw(_optional(st.builds(ToolChoice, mode=st.sampled_from(["auto", "none"])))),
        response_format=draw(
            _optional(
                st.builds(
                    ResponseFormat,
                    type=st.sampled_from(["text", "json_object", "json_schema"]),
                    json_schema=_optional(st.just({"type": "object"})),
                )
            )
        ),
        max_tokens=draw(_optional(st.integers(1, 5000))),
        stream=draw(st.booleans()),
    )


latencies = st.none() | st.dictionaries(
    st.sampled_from([f"{p}/{m}" for p, m in PAIRS]), st.floats(1, 5000)
)


@settings(max_examples=300, deadline=None)
@given(
    snapshots(),
    st.lists(requests(), min_size=1, max_size=3),
    st.text(min_size=1, max_size=10),
    st.tuples(_optional(st.sampled_from(["t1", "t2"])), _optional(st.sampled_from(["k1", "k22"]))),
    latencies,
    st.sampled_from(["chat", "responses"]),
)
def test_decide_equals_the_reference(  # noqa: PLR0917 -- hypothesis passes them by position
    snap: Snapshot,
    batch: list[ChatRequest],
    request_id: str,
    caller: tuple[str | None, str | None],
    latency: dict[str, float] | None,
    kind: RequestKind,
) -> None:
    tenant, api_key_id = caller
    # Several requests on one snapshot: later ones reuse the plans earlier ones cached.
    for request in batch:
        got = decide(
            request,
            snap,
            request_id=request_id,
            tenant=tenant,
            api_key_id=api_key_id,
            latency_ms=latency,
            kind=kind,
        )
        want = reference_decide(
            request,
            snap,
            request_id=request_id,
            tenant=tenant,
            api_key_id=api_key_id,
            latency_ms=latency,
            kind=kind,
        )
        assert got == want


def test_plans_are_cached_for_routes_and_catalogued_models_only() -> None:
    config = load_config(
        "providers: [{name: p, kind: mock}]\n"
        "models: [{provider: p, model: known}]\n"
        "routes: [{name: r, targets: [{provider: p, model: known}]}]\n",
        "test.yaml",
    )
    snap = compile_snapshot(config, revision=1, source="t")
    assert route_plan(snap, "r") is route_plan(snap, "r")
    assert route_plan(snap, "p/known") is route_plan(snap, "p/known")
    route_plan(snap, "p/anything-a-client-sends")
    assert set(snap.derived) == {"r", "p/known"}

"""``gw explain <request-id>``: why a request went where it went. Pure rendering.

``gw explain <id> --json`` prints one object; times are ISO 8601 UTC, durations ms::

    {
      "request_id": "req_01a22ef0e160acd7ddd8376a6196",
      "time": "2026-03-15T14:02:03.120Z",
      "client_request_id": null,          // the client's x-request-id, if sent
      "tenant": null,                     // the API key's tenant (null in open mode)
      "key_id": null,                     // the API key's id ("admin" for the admin key)
      "endpoint": "chat.completions",     // the client's format: chat.completions, messages,
                                          //   responses, gemini.generateContent, embeddings;
                                          //   or models.list, http (refused before a handler)
      "requested_model": "chat",          // what the client put in "model"
      "stream": false,
      "background": false,                // run as a background Responses job
      "replay_of": null,                  // an Idempotency-Key retry answered with this
                                          //   request's stored answer (no upstream call)
      "cache": null,                      // the response cache, where the policy uses it:
                                          //   hit | miss | bypass (the client's no-cache
                                          //   or no-store)
      "cache_of": null,                   // a hit: the request whose answer it served
      "status": 200,
      "error": null,                      // or {"code": "upstream_error", "message": "..."}
      "revision": 3,
      "latency_ms": 412.5,
      "ttft_ms": null,                    // time to first token (streams)
      "answered_by": {"provider": "openai-prod", "model": "gpt-4o-mini"},  // null if none did
      "decision": {                       // null when routing never ran (e.g. bad request)
        "route": "chat",
        "direct": false,                  // true for a "provider/model" request
        "policy": "default",
        "strategy": "priority",
        "degraded": false,                // a filter was relaxed to keep a candidate
        "degraded_reasons": [],
        "notes": [],                      // e.g. max_tokens clamped
        "estimated_input_tokens": 12,
        "max_output_tokens": null,
        "chain": ["openai-prod/gpt-4o-mini", "local/llama3.2"],  // try order
        "candidates": [
          {"provider": "openai-prod", "model": "gpt-4o-mini", "priority": 1, "weight": 1.0,
           "rank": 0, "score": 1.0, "estimated_cost_usd": 0.00002,   // rank 0 = tried first
           "rejected": null,              // or a reason: missing_capability, context_window,
           "detail": null,                //   cost_ceiling, zero_weight; detail says more
           "relaxed": false}
        ]
      },
      "attempts": [
        {"number": 1, "provider": "openai-prod", "model": "gpt-4o-mini",
         "account": "default",            // the provider's account (its name under accounts:)
         "started_at": "2026-03-15T14:02:03.121Z", "latency_ms": 410.0, "ttft_ms": null,
         "outcome": "answered",           // answered | retried | next_account | fell_back |
                                          //   failed | aborted | hedge_lost
         "upstream_status": null,         // the upstream's HTTP status when it failed
         "error_code": null, "error_message": null,
         "blame": null,                   // client | upstream | gateway when it failed
         "retry_after_s": null, "backoff_ms": 0.0,   // backoff_ms: waited before this attempt
         "provider_kind": "openai",       // the upstream's wire format; null in older traces
         "translation_notes": [],         // what that format could not carry exactly
         "limit_notes": [],               // max_tokens clamped to the model's ceiling, or
                                          //   the default a provider requires, added
         "hedge": false,                  // started by hedging, alongside the first target
         "upstream_response_id": null}    // the upstream's own id of its answer
      ],
      "usage": {"input_tokens": 12, "output_tokens": 34, "cached_input_tokens": 0,
                "reasoning_tokens": 0, "source": "provider"},   // or "estimate"; "cache":
                                          //   a response cache hit, nothing billed; null if none
      "cost_usd": 0.000022,               // null when the price is unknown
      "gateway": "gw-a"                   // the gateway that served it (GW_GATEWAY_ID, or
                                          //   host-pid-random); null in older traces
    }
"""

from __future__ import annotations

from datetime import tzinfo

from rich.console import RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from gw.cli.traces_view import format_cost, format_ms, local_time, status_text
from gw.record import AttemptRecord, TraceRecord
from gw.routing.decision import Candidate, RouteDecision
from gw.telemetry.explain import iso_utc
from gw.telemetry.printable import printable


def explain_renderables(trace: TraceRecord, *, tz: tzinfo | None = None) -> list[RenderableType]:
    """Header, candidates, decision notes, attempts and usage, in reading order."""
    parts: list[RenderableType] = [_header(trace, tz)]
    decision = trace.decision
    if decision is not None:
        parts += [_candidates_table(decision), _decision_note(decision)]
    parts.append(_attempts_table(trace) if trace.attempts else Text("No upstream attempt."))
    if trace.attempts:
        parts.append(_translation(trace))
    parts.append(_usage_line(trace))
    return parts


def candidate_status(decision: RouteDecision, candidate: Candidate) -> str:
    """``chosen``, ``fallback #n``, ``rejected: reason — detail``; ``relaxed`` when it applies."""
    key = f"{candidate.provider}/{candidate.model}"
    chain = [target.key for target in decision.chain]
    why = _reason(candidate)
    if key in chain:
        position = chain.index(key)
        status = "chosen" if position == 0 else f"fallback #{position}"
    elif candidate.rejected is not None and not candidate.relaxed:
        return f"rejected: {why}"
    else:
        status = "not in chain"
    if candidate.relaxed:
        status += f" (relaxed: {why})" if candidate.rejected is not None else " (relaxed)"
    return status


# -- rendering ----------------------------------------------------------------------------


def _header(trace: TraceRecord, tz: tzinfo | None) -> Panel:
    decision = trace.decision
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    rows: list[tuple[str, Text]] = [
        ("time", Text(f"{local_time(trace.time, tz)}  ({iso_utc(trace.time)})")),
        ("endpoint", Text(_endpoint(trace))),
        ("requested model", Text(printable(trace.requested_model))),
    ]
    if trace.client_request_id is not None:
        rows.append(("client request id", Text(printable(trace.client_request_id))))
    if decision is not None:
        rows += [
            ("route", Text(decision.route + ("  (direct)" if decision.direct else ""))),
            ("policy", Text(decision.policy)),
            ("strategy", Text(decision.strategy)),
        ]
    outcome = status_text(trace.status)
    if trace.error_code is not None:
        outcome.append(f"  {trace.error_code}", style="red")
        if trace.error_message:
            outcome.append(f": {trace.error_message}")
    rows += [
        ("revision", Text(str(trace.revision))),
        ("status", outcome),
        ("answered by" if trace.answered else "last tried", Text(printable(trace.route_header))),
        ("latency", Text(_duration(trace.latency_ms) + _ttft_suffix(trace.ttft_ms))),
    ]
    if trace.gateway is not None:
        rows.append(("gateway", Text(printable(trace.gateway))))
    for label, value in rows:
        grid.add_row(label, value)
    return Panel(grid, title=Text(f"request {trace.request_id}"), title_align="left", expand=False)


def _candidates_table(decision: RouteDecision) -> Table:
    table = Table(title="Candidates", title_justify="left")
    table.add_column("rank", justify="right")
    table.add_column("target")
    table.add_column("priority", justify="right")
    table.add_column("weight", justify="right")
    table.add_column("score", justify="right")
    table.add_column("est. cost", justify="right")
    table.add_column("status")
    order = {target.key: i for i, target in enumerate(decision.chain)}

    def sort_key(item: tuple[int, Candidate]) -> tuple[int, int, int]:
        index, candidate = item
        position = order.get(f"{candidate.provider}/{candidate.model}")
        if position is not None:
            return (0, position, index)
        return (1 if candidate.rejected is None else 2, candidate.rank or 0, index)

    for _, candidate in sorted(enumerate(decision.candidates), key=sort_key):
        status = candidate_status(decision, candidate)
        style = "green" if status.startswith("chosen") else "red" if "rejected" in status else ""
        table.add_row(
            Text("-" if candidate.rank is None else str(candidate.rank)),
            Text(f"{candidate.provider}/{candidate.model}"),
            Text(str(candidate.priority)),
            Text(f"{candidate.weight:g}"),
            Text("-" if candidate.score is None else f"{candidate.score:.4g}"),
            Text(format_cost(candidate.estimated_cost_usd)),
            Text(status, style=style),
        )
    return table


def _decision_note(decision: RouteDecision) -> Text:
    lines: list[str] = []
    if decision.degraded:
        reasons = ", ".join(decision.degraded_reasons) or "no reason recorded"
        lines.append(f"Degraded: filters were relaxed to keep a candidate ({reasons}).")
    lines += [f"Note: {note}" for note in decision.notes]
    lines.append(
        f"Estimated input tokens: {decision.estimated_input_tokens}; max output tokens: "
        f"{'none' if decision.max_output_tokens is None else decision.max_output_tokens}."
    )
    return Text("\n".join(lines), style="yellow" if decision.degraded else "")


def _attempts_table(trace: TraceRecord) -> Table:
    table = Table(title="Attempts", title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("target")
    table.add_column("account")
    table.add_column("started", justify="right")
    table.add_column("backoff before", justify="right")
    table.add_column("latency", justify="right")
    table.add_column("ttft", justify="right")
    table.add_column("upstream", justify="right")
    table.add_column("error")
    table.add_column("outcome")
    for attempt in trace.attempts:
        table.add_row(
            Text(str(attempt.number)),
            Text(f"{attempt.provider}/{attempt.model}"),
            Text(attempt.account or "-"),
            Text(f"+{(attempt.started_at - trace.time) * 1000:,.0f} ms"),
            Text("-" if not attempt.backoff_ms else _duration(attempt.backoff_ms)),
            Text(_duration(attempt.latency_ms)),
            Text("-" if attempt.ttft_ms is None else _duration(attempt.ttft_ms)),
            Text("-" if attempt.upstream_status is None else str(attempt.upstream_status)),
            Text(_attempt_error(attempt)),
            Text(
                f"{attempt.outcome} (hedge)" if attempt.hedge else attempt.outcome,
                style="green" if attempt.outcome == "answered" else "yellow",
            ),
        )
    return table


# Wire format by trace endpoint (the client's side) and by provider kind (the upstream's).
CLIENT_FORMATS = {
    "chat.completions": "OpenAI chat",
    "messages": "Anthropic messages",
    "responses": "OpenAI Responses",
    "embeddings": "OpenAI embeddings",
}
EMBEDDING_ENDPOINTS = frozenset({"embeddings", "gemini.embedContent", "gemini.batchEmbedContents"})
EMBEDDING_FORMATS = {
    "openai": "OpenAI embeddings",
    "openai_compatible": "OpenAI embeddings",
    "openai_responses": "OpenAI embeddings",
    "azure_openai": "OpenAI embeddings (Azure)",
    "gemini": "Gemini batchEmbedContents",
    "mock": "mock (IR)",
}
UPSTREAM_FORMATS = {
    "openai": "OpenAI chat",
    "openai_compatible": "OpenAI chat",
    "openai_responses": "OpenAI Responses",
    "azure_openai": "OpenAI chat (Azure)",
    "anthropic": "Anthropic messages",
    "gemini": "Gemini generateContent",
    "mock": "mock (IR)",
}


def client_format(endpoint: str) -> str:
    """The client's wire format, by the trace's endpoint (``gemini.*``: Gemini's API)."""
    if endpoint.startswith("gemini."):
        return "Gemini " + endpoint.removeprefix("gemini.")
    return CLIENT_FORMATS.get(endpoint, endpoint)


def _endpoint(trace: TraceRecord) -> str:
    """``responses  (OpenAI Responses, stream)``: the endpoint and the client's format."""
    format_ = client_format(trace.endpoint)
    shown = [format_] if format_ != trace.endpoint else []
    if trace.stream:
        shown.append("stream")
    if trace.background:
        shown.append("background job")
    if trace.replay_of is not None:
        shown.append(f"Idempotency-Key replay of {trace.replay_of}: no upstream call")
    if trace.cache_of is not None:
        shown.append(f"response cache hit: the answer of {trace.cache_of}, no upstream call")
    return trace.endpoint + (f"  ({', '.join(shown)})" if shown else "")


def translation_line(trace: TraceRecord, attempt: AttemptRecord) -> str:
    """``OpenAI chat -> IR -> Anthropic messages``, and what the upstream format lost."""
    client = client_format(trace.endpoint)
    formats = EMBEDDING_FORMATS if trace.endpoint in EMBEDDING_ENDPOINTS else UPSTREAM_FORMATS
    upstream = formats.get(attempt.provider_kind or "", attempt.provider_kind or "?")
    line = f"{client} -> IR -> {upstream}"
    if attempt.translation_notes:
        line += "; lossy: " + "; ".join(attempt.translation_notes)
    if attempt.limit_notes:
        line += "; " + "; ".join(attempt.limit_notes)
    return line


def _translation(trace: TraceRecord) -> Text:
    lines = [f"  #{a.number} {translation_line(trace, a)}" for a in trace.attempts]
    return Text("Translation:\n" + "\n".join(lines))


def _usage_line(trace: TraceRecord) -> Text:
    usage = trace.usage
    if usage is None:
        text = "Usage: unknown"
    else:
        text = (
            f"Usage ({trace.usage_source or 'unknown source'}): {usage.input_tokens} in"
            f" ({usage.cached_input_tokens} cached), {usage.output_tokens} out"
            f" ({usage.reasoning_tokens} reasoning)"
        )
    return Text(f"{text}; cost: {format_cost(trace.cost_usd)}")


def _reason(candidate: Candidate) -> str:
    reason = candidate.rejected or ""
    return f"{reason} — {candidate.detail}" if candidate.detail else reason


def _attempt_error(attempt: AttemptRecord) -> str:
    if attempt.error_code is None:
        return "-"
    blame = f" ({attempt.blame})" if attempt.blame else ""
    retry_after = (
        f", retry-after {attempt.retry_after_s:g}s" if attempt.retry_after_s is not None else ""
    )
    message = f": {attempt.error_message}" if attempt.error_message else ""
    return f"{attempt.error_code}{blame}{retry_after}{message}"


def _duration(ms: float) -> str:
    return f"{format_ms(ms)} ms"


def _ttft_suffix(ttft_ms: float | None) -> str:
    return "" if ttft_ms is None else f", first token after {_duration(ttft_ms)}"

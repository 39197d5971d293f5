// One request, explained (GET /admin/v1/traces/{id}): the routing decision, every
// candidate and why it was passed over, the attempts on a time axis, usage and cost; a
// response cache hit says so, with a link to the request whose answer it served.

import { api } from "./api.js";
import { timeline, widthOf } from "./charts.js";
import { badge, facts, h, replace, table } from "./dom.js";
import * as fmt from "./format.js";

function reason(candidate) {
  const why = candidate.rejected || "";
  return candidate.detail ? `${why} — ${candidate.detail}` : why;
}

/** As `gw explain` says it: chosen, fallback #n, rejected: why, not in chain (+ relaxed). */
export function candidateStatus(decision, candidate) {
  const key = `${candidate.provider}/${candidate.model}`;
  const position = decision.chain.indexOf(key);
  let status;
  if (position >= 0) status = position === 0 ? "chosen" : `fallback #${position}`;
  else if (candidate.rejected && !candidate.relaxed) return `rejected: ${reason(candidate)}`;
  else status = "not in chain";
  if (candidate.relaxed) status += candidate.rejected ? ` (relaxed: ${reason(candidate)})` : " (relaxed)";
  return status;
}

function candidateTone(status) {
  if (status === "chosen") return "ok";
  if (status.startsWith("rejected")) return "bad";
  if (status.startsWith("fallback")) return "info";
  return "muted";
}

/** The status as a badge, with any detail (after " — ") as quieter text beside it. */
function statusCell(status) {
  const [head, ...detail] = status.split(" — ");
  return h(
    "span",
    { class: "candidate-status", "data-testid": "candidate-status" },
    badge(head, candidateTone(status)),
    detail.length ? h("span", { class: "detail" }, detail.join(" — ")) : null,
  );
}

// The client's wire format by endpoint, as `gw explain` names it.
const CLIENT_FORMATS = {
  "chat.completions": "OpenAI chat",
  messages: "Anthropic messages",
  responses: "OpenAI Responses",
  embeddings: "OpenAI embeddings",
};

function endpointText(trace) {
  const format = CLIENT_FORMATS[trace.endpoint] || (trace.endpoint.startsWith("gemini.") ? "Gemini" : null);
  const shown = [format, trace.stream ? "stream" : null, trace.background ? "background job" : null].filter(Boolean);
  return shown.length ? `${trace.endpoint} (${shown.join(", ")})` : trace.endpoint;
}

const CACHE_OUTCOMES = {
  miss: "miss (looked up, not found: an upstream answered)",
  bypass: "bypass (not looked up: the client sent no-cache or no-store)",
};

/** The response cache's part, where the request's policy uses it; null where it does not. */
function cacheFact(trace) {
  if (trace.cache !== "hit") return trace.cache ? CACHE_OUTCOMES[trace.cache] || trace.cache : null;
  return h(
    "span",
    { "data-testid": "explain-cache" },
    badge("cache hit", "info"),
    " ",
    trace.cache_of
      ? ["the answer of ", h("a", { class: "mono", href: `#/requests/${encodeURIComponent(trace.cache_of)}`, "data-testid": "cache-of" }, trace.cache_of), ", no upstream call"]
      : "no upstream call",
  );
}

function summary(trace) {
  const hit = trace.cache === "hit";
  const answered = trace.answered_by
    ? `${trace.answered_by.provider}/${trace.answered_by.model}`
    : hit ? "the response cache" : "nobody";
  return h(
    "div",
    { class: "card" },
    h(
      "div",
      { class: "explain-status" },
      badge(String(trace.status), fmt.statusTone(trace.status)),
      trace.error ? h("span", { class: "code" }, trace.error.code) : h("span", null, "answered"),
      trace.error ? h("p", { class: "error-text", "data-testid": "explain-error" }, trace.error.message) : null,
    ),
    facts([
      ["time", `${fmt.time(trace.time)}  (${trace.time})`],
      ["endpoint", endpointText(trace)],
      ["requested model", trace.requested_model || "–"],
      ["answered by", answered],
      ["response cache", cacheFact(trace)],
      ["client request id", trace.client_request_id],
      ["tenant", trace.tenant],
      ["API key", trace.key_id],
      ["latency", fmt.ms(trace.latency_ms)],
      ["time to first token", trace.ttft_ms === null ? null : fmt.ms(trace.ttft_ms)],
      ["config revision", String(trace.revision)],
      ["gateway", trace.gateway],
    ]),
  );
}

function decisionCard(decision) {
  if (!decision) {
    return h("div", { class: "card" }, h("h2", null, "Decision"), h("p", { class: "muted" }, "Routing never ran for this request (it was refused before)."));
  }
  const notes = [...decision.degraded_reasons.map((r) => `degraded: ${r}`), ...decision.notes];
  const candidates = decision.candidates.map((candidate) => {
    const status = candidateStatus(decision, candidate);
    return [
      [{ class: "mono nowrap" }, `${candidate.provider}/${candidate.model}`],
      [{ class: "num" }, candidate.rank === null ? "–" : String(candidate.rank)],
      [{ class: "num" }, candidate.priority === null ? "–" : String(candidate.priority)],
      [{ class: "num" }, candidate.weight === null ? "–" : String(candidate.weight)],
      [{ class: "num" }, candidate.score === null ? "–" : String(Math.round(candidate.score * 1000) / 1000)],
      [{ class: "num" }, fmt.usd(candidate.estimated_cost_usd)],
      statusCell(status),
    ];
  });
  return h(
    "div",
    { class: "card", "data-testid": "decision" },
    h("h2", null, "Decision"),
    facts([
      ["route", decision.direct ? `${decision.route} (direct provider/model)` : decision.route],
      ["policy", decision.policy],
      ["strategy", decision.strategy],
      ["try order", decision.chain.length ? decision.chain.join("  →  ") : "nothing left to try"],
      ["estimated input tokens", fmt.int(decision.estimated_input_tokens)],
      ["max output tokens", decision.max_output_tokens === null ? "no limit" : fmt.int(decision.max_output_tokens)],
      ["degraded", decision.degraded ? "yes" : null],
    ]),
    notes.length ? h("ul", { class: "notes" }, notes.map((note) => h("li", null, note))) : null,
    h("h3", null, "Candidates"),
    table(["target", "rank", "priority", "weight", "score", "est. cost", "status"], candidates, {
      class: "grid-table",
      "data-testid": "candidates",
    }),
  );
}

function attemptRows(trace) {
  const t0 = Date.parse(trace.time);
  return trace.attempts.map((attempt) => {
    const start = Math.max(0, Date.parse(attempt.started_at) - t0);
    const what = attempt.error_code
      ? `${attempt.upstream_status || ""} ${attempt.error_code}`.trim()
      : attempt.upstream_status
        ? String(attempt.upstream_status)
        : "";
    const tone = fmt.OUTCOME_TONES[attempt.outcome] || "muted";
    return {
      label: `#${attempt.number} ${attempt.provider}/${attempt.model}`,
      start,
      end: start + (attempt.latency_ms || 0),
      ttft: attempt.ttft_ms,
      tone,
      text: `${attempt.outcome}${what ? ` · ${what}` : ""} · ${fmt.ms(attempt.latency_ms)}`,
      title: `#${attempt.number} ${attempt.provider}/${attempt.model} (account ${attempt.account}): ${attempt.outcome}, ${fmt.ms(attempt.latency_ms)}`,
    };
  });
}

function attemptsCard(trace) {
  if (!trace.attempts.length) {
    const why = trace.cache === "hit" ? " The answer came from the response cache." : "";
    return h("div", { class: "card" }, h("h2", null, "Attempts"), h("p", { class: "muted" }, `No upstream was called.${why}`));
  }
  const rows = trace.attempts.map((a) => [
    String(a.number),
    `${a.provider}/${a.model}`,
    a.account,
    badge(a.outcome, fmt.OUTCOME_TONES[a.outcome] || "muted"),
    [{ class: "num" }, a.upstream_status === null ? "–" : String(a.upstream_status)],
    a.error_code ? h("span", { class: "code", title: a.error_message || "" }, a.error_code) : "–",
    a.blame || "–",
    [{ class: "num" }, fmt.ms(a.latency_ms)],
    [{ class: "num" }, a.ttft_ms === null ? "–" : fmt.ms(a.ttft_ms)],
    [{ class: "num" }, a.backoff_ms ? fmt.ms(a.backoff_ms) : "–"],
  ]);
  const messages = trace.attempts.filter((a) => a.error_message || a.translation_notes.length);
  const chart = h("div", { class: "chart-wrap" });
  // Drawn once the card is on the page, at the width it has there.
  requestAnimationFrame(() => replace(chart, timeline(attemptRows(trace), { total: trace.latency_ms, width: widthOf(chart, 1000) })));
  return h(
    "div",
    { class: "card", "data-testid": "attempts" },
    h("h2", null, "Attempts"),
    h("div", { class: "legend" }, ["answered", "retried / fell back", "failed"].map((name, i) => h("span", { class: `key ${["ok", "warn", "bad"][i]}` }, name)), h("span", { class: "key ttft-key" }, "first token"), h("span", { class: "key end-key" }, "request ends")),
    chart,
    table(["#", "target", "account", "outcome", "upstream", "error", "blame", "latency", "first token", "backoff"], rows, { class: "grid-table" }),
    messages.length
      ? h(
          "ul",
          { class: "notes" },
          messages.map((a) =>
            h("li", null, `#${a.number}: `, [a.error_message, ...a.translation_notes.map((n) => `translation: ${n}`)].filter(Boolean).join("; ")),
          ),
        )
      : null,
  );
}

const USAGE_SOURCES = {
  estimate: "gw's estimate",
  provider: "the provider",
  cache: "the response cache: nothing billed",
};

function costText(trace) {
  // A hit is in the ledger with no cost (docs/guides/response-cache.md), not unpriced.
  if (trace.cache === "hit" && !trace.cost_usd) return "$0 (answered from the response cache)";
  return trace.cost_usd === null ? "unpriced (no catalog price)" : fmt.usd(trace.cost_usd);
}

function usageCard(trace) {
  const usage = trace.usage;
  return h(
    "div",
    { class: "card", "data-testid": "usage" },
    h("h2", null, "Usage and cost"),
    usage
      ? facts([
          ["input tokens", `${fmt.int(usage.input_tokens)}${usage.cached_input_tokens ? ` (${fmt.int(usage.cached_input_tokens)} cached)` : ""}`],
          ["output tokens", `${fmt.int(usage.output_tokens)}${usage.reasoning_tokens ? ` (${fmt.int(usage.reasoning_tokens)} reasoning)` : ""}`],
          ["counted by", USAGE_SOURCES[usage.source] || "the provider"],
          ["cost", costText(trace)],
        ])
      : h("p", { class: "muted" }, "No usage: no upstream answered."),
  );
}

export function explainView(_ctx, id) {
  const body = h("div", { class: "explain" }, h("p", { class: "muted" }, "Loading…"));
  const title = h("h1", { class: "request-id" }, id);
  const root = h(
    "section",
    { class: "view", "data-testid": "view-explain" },
    h("p", null, h("a", { href: "#/requests" }, "← all requests")),
    h("div", { class: "view-head" }, title),
    body,
  );

  async function refresh() {
    const trace = await api.trace(id);
    replace(title, trace.request_id);
    replace(body, summary(trace), decisionCard(trace.decision), attemptsCard(trace), usageCard(trace));
  }

  return { root, refresh, auto: false, title: `Request ${id}` };
}

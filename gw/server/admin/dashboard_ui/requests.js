// Recent requests (GET /admin/v1/traces), filtered in the page. A response cache hit
// (trace.cache "hit") is marked: no upstream answered it, the answer was cache_of's.

import { api } from "./api.js";
import { badge, h, replace, select, setOptions, table } from "./dom.js";
import * as fmt from "./format.js";

const NO_TENANT = "\u0000none";
const LIMITS = ["50", "200", "500", "1000"];

// Kept while the page lives, so going to an explain view and back keeps the filters.
const filters = { limit: "200", model: "", status: "", tenant: "", text: "" };

/** Answered from the response cache (gw/record.py TraceRecord.cache). */
export function isCacheHit(trace) {
  return trace.cache === "hit";
}

function target(trace) {
  if (trace.answered_by) return `${trace.answered_by.provider}/${trace.answered_by.model}`;
  const last = trace.attempts[trace.attempts.length - 1];
  return last ? `${last.provider}/${last.model}` : null;
}

function models(trace) {
  return [trace.requested_model, trace.decision && trace.decision.route, target(trace)].filter(Boolean);
}

function matches(trace) {
  if (filters.model && !models(trace).includes(filters.model)) return false;
  if (filters.status === "ok" && trace.status >= 400) return false;
  if (filters.status === "error" && trace.status < 400) return false;
  if (filters.status === "cache:hit" && !isCacheHit(trace)) return false;
  if (filters.status.startsWith("code:") && (!trace.error || `code:${trace.error.code}` !== filters.status)) {
    return false;
  }
  if (filters.tenant === NO_TENANT && trace.tenant) return false;
  if (filters.tenant && filters.tenant !== NO_TENANT && trace.tenant !== filters.tenant) return false;
  const text = filters.text.trim().toLowerCase();
  if (text) {
    const ids = [trace.request_id, trace.client_request_id].filter(Boolean).map((id) => id.toLowerCase());
    if (!ids.some((id) => id.includes(text))) return false;
  }
  return true;
}

function distinct(values) {
  return [...new Set(values.filter(Boolean))].sort();
}

function row(trace, navigate) {
  const href = `#/requests/${encodeURIComponent(trace.request_id)}`;
  const tokens = trace.usage ? `${fmt.int(trace.usage.input_tokens)} / ${fmt.int(trace.usage.output_tokens)}` : "–";
  const status = h(
    "span",
    { class: "status-cell" },
    badge(String(trace.status), fmt.statusTone(trace.status)),
    trace.error ? h("span", { class: "code" }, trace.error.code) : null,
    isCacheHit(trace)
      ? h(
          "span",
          { class: "badge info", "data-testid": "cache-hit", title: trace.cache_of ? `the answer of ${trace.cache_of}; no upstream call` : "no upstream call" },
          "cache hit",
        )
      : null,
  );
  const tr = h(
    "tr",
    { class: "clickable", "data-testid": "trace-row", "data-request-id": trace.request_id },
    h("td", { title: fmt.time(trace.time) }, fmt.time(trace.time, false)),
    h(
      "td",
      { class: "mono" },
      h("a", { href }, trace.request_id),
      trace.client_request_id ? h("div", { class: "muted", title: "the client's x-request-id" }, trace.client_request_id) : null,
    ),
    h(
      "td",
      null,
      trace.requested_model || "–",
      trace.stream ? h("span", { class: "tag" }, "stream") : null,
      trace.background ? h("span", { class: "tag" }, "background") : null,
    ),
    h(
      "td",
      null,
      isCacheHit(trace) ? h("span", { class: "muted" }, "response cache") : target(trace) || "–",
      trace.gateway ? h("div", { class: "muted", title: "the gateway that served it", "data-testid": "trace-gateway" }, trace.gateway) : null,
    ),
    h("td", null, status),
    h("td", { class: "num" }, String(trace.attempts.length)),
    h("td", { class: "num" }, fmt.ms(trace.latency_ms)),
    h("td", { class: "num" }, tokens),
    h("td", { class: "num" }, isCacheHit(trace) && !trace.cost_usd ? "$0" : fmt.usd(trace.cost_usd)),
    h("td", null, trace.tenant || "–"),
  );
  tr.addEventListener("click", (event) => {
    if (event.target.closest("a")) return;
    navigate(href);
  });
  return tr;
}

export function requestsView({ navigate }) {
  let traces = [];
  const refilter = (name, node) => () => {
    filters[name] = node.value;
    render();
  };
  const model = select({ "aria-label": "route or model", "data-testid": "filter-model" }, [["", "all routes and models"]]);
  const status = select({ "aria-label": "status", "data-testid": "filter-status" }, [["", "any status"]]);
  const tenant = select({ "aria-label": "tenant", "data-testid": "filter-tenant" }, [["", "any tenant"]]);
  const limit = select({ "aria-label": "how many", "data-testid": "filter-limit" }, LIMITS.map((n) => [n, `last ${n}`]), filters.limit);
  const text = h("input", {
    type: "search",
    placeholder: "request id or x-request-id…",
    "aria-label": "request id",
    "data-testid": "filter-text",
    spellcheck: "false",
  });
  text.value = filters.text;
  model.addEventListener("change", refilter("model", model));
  status.addEventListener("change", refilter("status", status));
  tenant.addEventListener("change", refilter("tenant", tenant));
  text.addEventListener("input", refilter("text", text));
  limit.addEventListener("change", () => {
    filters.limit = limit.value;
    refresh();
  });
  const count = h("span", { class: "muted", "data-testid": "trace-count" });
  const body = h("div", { class: "table-wrap" });
  const root = h(
    "section",
    { class: "view", "data-testid": "view-requests" },
    h("div", { class: "view-head" }, h("h1", null, "Recent requests"), count),
    h("div", { class: "filters" }, text, model, status, tenant, limit),
    body,
  );

  function updateOptions() {
    setOptions(model, [["", "all routes and models"], ...distinct(traces.flatMap(models))], filters.model);
    const codes = distinct(traces.map((t) => t.error && t.error.code));
    setOptions(
      status,
      [
        ["", "any status"],
        ["ok", "succeeded"],
        ["error", "failed"],
        ...(traces.some(isCacheHit) ? [["cache:hit", "response cache hits"]] : []),
        ...codes.map((c) => [`code:${c}`, `error: ${c}`]),
      ],
      filters.status,
    );
    const tenants = distinct(traces.map((t) => t.tenant));
    setOptions(tenant, [["", "any tenant"], [NO_TENANT, "no tenant"], ...tenants], filters.tenant);
    // A filter whose value left the list (its traces aged out) stops filtering.
    filters.model = model.value;
    filters.status = status.value;
    filters.tenant = tenant.value;
  }

  function render() {
    const shown = traces.filter(matches);
    const hits = shown.filter(isCacheHit).length;
    replace(count, `${shown.length} of ${traces.length} shown${hits ? `, ${hits} from the response cache` : ""}`);
    if (!shown.length) {
      const wanted = filters.text.trim();
      replace(
        body,
        h(
          "div",
          { class: "empty-state" },
          traces.length ? "No request matches these filters." : "No requests yet: send one to gw.",
          wanted.length >= 4
            ? h("p", null, h("a", { href: `#/requests/${encodeURIComponent(wanted)}`, "data-testid": "lookup" }, `Look up “${wanted}” on the server`))
            : null,
        ),
      );
      return;
    }
    replace(
      body,
      table(
        ["time", "request id", "model", "served by / last tried", "status", "attempts", "latency", "tokens in / out", "cost", "tenant"],
        shown.map((trace) => row(trace, navigate)),
        { class: "grid-table", "data-testid": "traces-table" },
      ),
    );
  }

  async function refresh() {
    traces = await api.traces(filters.limit);
    updateOptions();
    render();
  }

  return { root, refresh, auto: true, title: "Requests" };
}

// Usage and cost (GET /admin/v1/usage): by day, route and model. The usage report does not
// count response cache hits apart (a hit is a request with no tokens and no cost), so the
// hits are counted from the newest traces (GET /admin/v1/traces), and the tile says so.

import { api } from "./api.js";
import { barList, columnChart, widthOf } from "./charts.js";
import { h, replace, select } from "./dom.js";
import * as fmt from "./format.js";

const SINCE = [["1d", "last 24 hours"], ["7d", "last 7 days"], ["30d", "last 30 days"], ["90d", "last 90 days"], ["", "all time"]];
const METRICS = {
  cost_usd: { label: "cost", value: (row) => row.cost_usd, format: fmt.usd },
  requests: { label: "requests", value: (row) => row.requests, format: fmt.compact },
  tokens: { label: "tokens (in + out)", value: (row) => row.input_tokens + row.output_tokens, format: fmt.compact },
  errors: { label: "errors", value: (row) => row.errors, format: fmt.compact },
  // The provider prompt cache's share of input tokens: what sticky sessions keep high.
  cached_share: { label: "cached input share", value: (row) => share(row.cached_input_tokens, row.input_tokens), format: percent },
};
const DAY_MS = 86400000;
const HIT_TRACES = 1000; // the most GET /admin/v1/traces gives the dashboard
const settings = { since: "30d", metric: "cost_usd" };

function share(part, whole) {
  return whole > 0 ? part / whole : 0;
}

function percent(value) {
  return `${(value * 100).toFixed(1)}%`;
}

/** Response cache hits among the traces of the window: {hits, traced, partial}. */
function cacheHits(traces) {
  const days = settings.since ? Number.parseInt(settings.since, 10) : 0;
  const start = days ? Date.now() - days * DAY_MS : -Infinity;
  const inWindow = traces.filter((t) => Date.parse(t.time) >= start);
  // Every trace read lies inside the window: older ones in it may not have been read.
  const partial = traces.length >= HIT_TRACES && inWindow.length === traces.length;
  return { hits: inWindow.filter((t) => t.cache === "hit").length, traced: inWindow.length, partial };
}

function cacheTile(counted) {
  const { hits, traced, partial } = counted;
  const newest = partial ? `the newest ${fmt.int(traced)} traced requests` : `${fmt.int(traced)} traced requests`;
  return h(
    "div",
    {
      class: "tile",
      "data-testid": "tile-cache-hits",
      title: `Requests answered from the response cache (no upstream call, nothing billed), counted from ${newest} of this period: the usage report counts a hit as a request with no tokens and does not count hits apart. Traces are lossy under pressure; the ledger is not.`,
    },
    h("div", { class: "tile-value" }, fmt.int(hits)),
    h("div", { class: "tile-label" }, `from the response cache (of ${newest})`),
  );
}

function utcDay(ms) {
  return new Date(ms).toISOString().slice(0, 10);
}

/** One point per UTC day from the window's start (or the first day seen) to today. */
function dayPoints(rows, metric) {
  const values = new Map(rows.filter((r) => r.day).map((r) => [r.day, metric.value(r)]));
  const today = Date.parse(`${utcDay(Date.now())}T00:00:00Z`);
  const days = settings.since ? Number.parseInt(settings.since, 10) : 0;
  let start = today - Math.max(0, days - 1) * DAY_MS;
  if (!days) start = values.size ? Math.min(...[...values.keys()].map((d) => Date.parse(`${d}T00:00:00Z`))) : today;
  const points = [];
  for (let t = start; t <= today; t += DAY_MS) {
    const day = utcDay(t);
    points.push({ label: day.slice(5), value: values.get(day) || 0 });
  }
  return points;
}

function ranked(rows, key, metric) {
  return rows
    .map((row) => ({ label: row[key] === null ? "(none)" : row[key], value: metric.value(row) }))
    .sort((a, b) => b.value - a.value);
}

export function usageView() {
  const since = select({ "aria-label": "period", "data-testid": "usage-since" }, SINCE, settings.since);
  const metric = select({ "aria-label": "measure", "data-testid": "usage-metric" }, Object.entries(METRICS).map(([k, m]) => [k, m.label]), settings.metric);
  const tiles = h("div", { class: "tiles" });
  const byDay = h("div", { class: "chart-wrap", "data-testid": "chart-day" });
  const byRoute = h("div", { class: "chart-wrap", "data-testid": "chart-route" });
  const byModel = h("div", { class: "chart-wrap", "data-testid": "chart-model" });
  const root = h(
    "section",
    { class: "view", "data-testid": "view-usage" },
    h("div", { class: "view-head" }, h("h1", null, "Usage and cost"), h("div", { class: "filters" }, since, metric)),
    tiles,
    h("div", { class: "card" }, h("h2", null, "By day (UTC)"), byDay),
    h("div", { class: "columns" }, h("div", { class: "card" }, h("h2", null, "By route"), byRoute), h("div", { class: "card" }, h("h2", null, "By model"), byModel)),
  );
  let data = null;

  function render() {
    const chosen = METRICS[settings.metric];
    const total = (field) => data.day.reduce((sum, row) => sum + row[field], 0);
    replace(
      tiles,
      [
        ["requests", fmt.int(total("requests"))],
        ["errors", fmt.int(total("errors"))],
        ["input tokens", fmt.compact(total("input_tokens"))],
        ["cached input", percent(share(total("cached_input_tokens"), total("input_tokens")))],
        ["output tokens", fmt.compact(total("output_tokens"))],
        ["cost", fmt.usd(total("cost_usd"))],
      ].map(([label, value]) => h("div", { class: "tile" }, h("div", { class: "tile-value" }, value), h("div", { class: "tile-label" }, label))),
      cacheTile(data.cache),
    );
    const options = (by, container, fallback) => ({ label: `${chosen.label} by ${by}`, format: chosen.format, width: widthOf(container, fallback) });
    replace(byDay, columnChart(dayPoints(data.day, chosen), options("day", byDay, 1000)));
    replace(byRoute, barList(ranked(data.route, "route", chosen), options("route", byRoute, 520)));
    replace(byModel, barList(ranked(data.model, "model", chosen), options("model", byModel, 520)));
  }

  async function refresh() {
    const [day, route, model, traces] = await Promise.all([
      ...["day", "route", "model"].map((by) => api.usage(by, settings.since)),
      api.traces(HIT_TRACES),
    ]);
    data = { day, route, model, cache: cacheHits(traces) };
    render();
  }

  since.addEventListener("change", () => {
    settings.since = since.value;
    refresh().catch(() => {});
  });
  metric.addEventListener("change", () => {
    settings.metric = metric.value;
    if (data) render();
  });

  return { root, refresh, auto: false, title: "Usage" };
}

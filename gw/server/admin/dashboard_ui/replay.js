// The Config tab's preview of a config change: `gw replay` of a candidate config over the
// recorded requests of a period (POST /admin/v1/config/replay, which changes nothing: no
// upstream call, nothing applied). The report's shape: docs/reference/cli.md#gw-replay.
// The dashboard applies nothing: the candidate is applied by saving it as gw's config file.

import { api } from "./api.js";
import { badge, facts, h, replace, select, table } from "./dom.js";
import * as fmt from "./format.js";

// Kept while the page lives: the candidate being edited survives refreshes and other tabs.
const kept = { candidate: null, since: "24h", running: null };
const PERIODS = [["1h", "last hour"], ["24h", "last 24 hours"], ["7d", "last 7 days"], ["30d", "last 30 days"]];

function delta(value) {
  if (!value) return "±$0";
  return `${value > 0 ? "+" : "−"}${fmt.usd(Math.abs(value))}`;
}

function requests(n) {
  return `${fmt.int(n)} ${n === 1 ? "request" : "requests"}`;
}

function countsText(counts) {
  return Object.entries(counts || {})
    .map(([code, n]) => `${code} ${fmt.int(n)}`)
    .join(", ");
}

function section(title, testid, rows, head, empty) {
  return h(
    "div",
    { "data-testid": testid },
    h("h3", null, title),
    rows.length ? table(head, rows, { class: "grid-table" }) : h("p", { class: "muted" }, empty),
  );
}

function costRows(groups, key) {
  return groups.map((g) => [
    g[key] === null ? "(none)" : g[key],
    [{ class: "num" }, fmt.int(g.requests)],
    [{ class: "num" }, fmt.usd(g.before_usd)],
    [{ class: "num" }, fmt.usd(g.after_usd)],
    [{ class: "num" }, delta(g.delta_usd)],
  ]);
}

/** The report, as `gw replay` prints it: what would change, then what it assumed. */
export function reportView(report) {
  const req = report.requests;
  const cost = report.cost;
  const notRouted = countsText(req.not_routed);
  const moved = report.moved.map((m) => [
    h("span", { class: "mono" }, m.route),
    h("span", { class: "mono" }, m.from),
    h("span", { class: "mono" }, m.to),
    [{ class: "num" }, fmt.int(m.requests)],
  ]);
  const refused = report.refused.map((r) => [
    h("span", { class: "mono" }, r.route),
    h("span", { class: "code" }, r.code),
    r.reason,
    [{ class: "num" }, fmt.int(r.requests)],
    countsText(r.before),
  ]);
  const served = report.served.map((s) => [
    h("span", { class: "mono" }, s.route),
    h("span", { class: "code" }, s.before_code),
    h("span", { class: "mono" }, s.to),
    [{ class: "num" }, fmt.int(s.requests)],
  ]);
  const degraded = report.degraded.map((d) => [h("span", { class: "mono" }, d.route), d.reasons.join("; "), [{ class: "num" }, fmt.int(d.requests)]]);
  const changed = req.changed
    ? badge(`${fmt.int(req.changed)} would change`, "warn")
    : badge("nothing would change", "ok");
  return h(
    "div",
    { class: "replay-report" },
    h("div", { class: "explain-status", "data-testid": "replay-summary" }, changed, h("span", null, `of ${requests(req.replayed)} replayed`)),
    facts([
      ["period", `${fmt.time(report.since)} – ${fmt.time(report.until)}`],
      ["candidate", report.candidate.config_hash ? `config hash ${report.candidate.config_hash.slice(0, 12)}` : null],
      ["read", `${fmt.int(req.read)} traced requests${req.truncated ? " (the period holds more: the newest were read)" : ""}`],
      ["unchanged", fmt.int(req.unchanged)],
      ["not routed", notRouted ? `${notRouted} (refused before routing, or response cache hits: not replayed)` : null],
      ["without routing inputs", req.without_inputs ? `${fmt.int(req.without_inputs)} (replayed from the decision's estimate)` : null],
      ["shaped by a breaker", req.breaker_shaped ? `${fmt.int(req.breaker_shaped)} (recorded while a target was unhealthy)` : null],
      [
        "cost",
        h(
          "span",
          { "data-testid": "replay-cost" },
          `${fmt.usd(cost.before_usd)} before → ${fmt.usd(cost.after_usd)} after (${delta(cost.delta_usd)}) on ${requests(cost.requests)}${cost.unpriced ? `, ${fmt.int(cost.unpriced)} unpriced` : ""}`,
        ),
      ],
    ]),
    section("Moved", "replay-moved", moved, ["route", "from", "to", "requests"], "No traffic would move to another first choice."),
    section("Refused", "replay-refused", refused, ["route", "code", "reason", "requests", "before"], "No request would be refused."),
    served.length ? section("Served now (refused before)", "replay-served", served, ["route", "was", "to", "requests"], "") : null,
    degraded.length ? section("Newly degraded", "replay-degraded", degraded, ["route", "reasons", "requests"], "") : null,
    h(
      "div",
      { class: "columns" },
      section("Cost by route", "replay-cost-route", costRows(cost.by_route, "route"), ["route", "requests", "before", "after", "change"], "No priced requests."),
      section("Cost by tenant", "replay-cost-tenant", costRows(cost.by_tenant, "tenant"), ["tenant", "requests", "before", "after", "change"], "No priced requests."),
    ),
    h("h3", null, "Assumptions"),
    h("ul", { class: "notes", "data-testid": "replay-assumptions" }, report.assumptions.map((a) => h("li", null, a))),
  );
}

/** The card: a candidate's text, a period, the button, and the report or the error. */
export function replayCard() {
  const candidate = h("textarea", {
    class: "candidate",
    rows: "18",
    spellcheck: "false",
    "aria-label": "candidate config (YAML)",
    "data-testid": "replay-candidate",
  });
  const period = select({ "aria-label": "recorded period", "data-testid": "replay-since" }, PERIODS, kept.since);
  const run = h("button", { type: "button", class: "primary", "data-testid": "replay-run" }, "Preview with gw replay");
  const reset = h("button", { type: "button", "data-testid": "replay-reset" }, "Start again from the running config");
  const result = h("div", { "data-testid": "replay-result", "aria-live": "polite" });
  if (kept.candidate !== null) candidate.value = kept.candidate;

  /** The running config (redacted); it fills the text area until the user edits it. */
  function offer(config) {
    kept.running = JSON.stringify(config, null, 2);
    if (kept.candidate === null) candidate.value = kept.running;
  }

  candidate.addEventListener("input", () => {
    kept.candidate = candidate.value;
  });
  period.addEventListener("change", () => {
    kept.since = period.value;
  });
  reset.addEventListener("click", () => {
    kept.candidate = null;
    if (kept.running !== null) candidate.value = kept.running;
  });
  run.addEventListener("click", async () => {
    run.disabled = true;
    replace(result, h("p", { class: "muted", "data-testid": "replay-busy" }, "Replaying…"));
    try {
      replace(result, reportView(await api.replay(candidate.value, period.value)));
    } catch (error) {
      const text = error.code ? `${error.code}: ${error.message}` : error.message;
      replace(result, h("p", { class: "error-text", "data-testid": "replay-error" }, text));
    } finally {
      run.disabled = false;
    }
  });

  const root = h(
    "div",
    { class: "card", "data-testid": "replay" },
    h("h2", null, "Preview a change with gw replay"),
    h(
      "p",
      { class: "muted" },
      "Paste a candidate config (the whole file, YAML), or edit the running one below (JSON is YAML; header values show as ***, which routing never reads). gw routes the recorded requests of the period again under it, with no upstream call, and shows what would change; it is the report of ",
      h("code", null, "gw replay --config candidate.yaml"),
      ". Nothing is applied here: to apply the candidate, save it as gw's config file, which gw reloads.",
    ),
    candidate,
    h("div", { class: "filters replay-actions" }, run, period, reset),
    result,
  );
  return { root, offer };
}

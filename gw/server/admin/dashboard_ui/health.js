// Provider health (GET /admin/v1/health): each target's status and circuit breaker, and
// the accounts gw has locked.

import { api } from "./api.js";
import { badge, facts, h, replace, table } from "./dom.js";
import * as fmt from "./format.js";

function targetRow(target) {
  const latency = target.latency
    ? [target.latency.total_ms === null ? null : `${fmt.ms(target.latency.total_ms)} total`, target.latency.ttft_ms === null ? null : `${fmt.ms(target.latency.ttft_ms)} first token`]
        .filter(Boolean)
        .join(", ") || "–"
    : "–";
  const probe = target.last_probe_ok === null ? "–" : target.last_probe_ok ? "ok" : "failed";
  return h(
    "tr",
    { "data-testid": "health-row", "data-target": `${target.provider}/${target.model}`, "data-breaker": target.breaker },
    h("td", { class: "mono nowrap" }, `${target.provider}/${target.model}`),
    h("td", null, target.routes.length ? target.routes.join(", ") : h("span", { class: "muted" }, "direct")),
    h("td", null, badge(target.status, fmt.HEALTH_TONES[target.status])),
    h("td", { "data-testid": "breaker" }, badge(target.breaker.replace("_", "-"), fmt.BREAKER_TONES[target.breaker]), target.trial_in_flight ? h("span", { class: "tag" }, "trial") : null),
    h("td", { class: "num" }, String(target.consecutive_failures)),
    h("td", { class: "num" }, `${target.window_failures} / ${target.window_calls}`),
    h("td", { class: "num" }, String(target.openings)),
    h("td", { class: "num" }, target.cooldown_remaining_s === null ? "–" : fmt.duration(target.cooldown_remaining_s)),
    h("td", { class: "nowrap" }, latency),
    h("td", null, probe),
    h(
      "td",
      { class: "reason" },
      target.switched ? h("span", { class: "tag", "data-testid": "switched" }, "switch") : null,
      target.switched ? `${target.switched}; ` : null,
      target.reason || "–",
    ),
  );
}

export function healthView() {
  const overview = h("div", { class: "tiles" });
  const targets = h("div", { class: "table-wrap" });
  const locks = h("div", { class: "table-wrap" });
  const switches = h("div", { "data-testid": "switches" });
  const stamp = h("span", { class: "muted" });
  const root = h(
    "section",
    { class: "view", "data-testid": "view-health" },
    h("div", { class: "view-head" }, h("h1", null, "Provider health"), stamp),
    overview,
    switches,
    h("h2", null, "Targets"),
    targets,
    h("h2", null, "Account locks"),
    locks,
  );

  async function refresh() {
    const report = await api.health();
    const count = (field, value) => report.targets.filter((t) => t[field] === value).length;
    replace(stamp, `config revision ${report.revision} · as of ${fmt.time(report.now, false)}`);
    replace(
      overview,
      [
        ["targets", report.targets.length, ""],
        ["healthy", count("status", "healthy"), "ok"],
        ["degraded", count("status", "degraded"), count("status", "degraded") ? "warn" : ""],
        ["unhealthy", count("status", "unhealthy"), count("status", "unhealthy") ? "bad" : ""],
        ["breakers open", count("breaker", "open"), count("breaker", "open") ? "bad" : ""],
      ].map(([label, value, tone]) => h("div", { class: `tile ${tone}`, "data-testid": `tile-${label.replace(" ", "-")}` }, h("div", { class: "tile-value" }, String(value)), h("div", { class: "tile-label" }, label))),
    );
    replace(
      switches,
      (report.switches || []).length
        ? [h("h2", null, "Switches in force"), h("ul", { class: "switches" }, report.switches.map((line) => h("li", null, line)))]
        : [],
    );
    replace(
      targets,
      report.targets.length
        ? table(
            ["target", "routes", "status", "breaker", "failures in a row", "window failures / calls", "openings", "cooldown left", "latency", "last probe", "reason"],
            report.targets.map(targetRow),
            { class: "grid-table", "data-testid": "health-table" },
          )
        : h("p", { class: "muted" }, "No targets configured."),
    );
    const locked = report.accounts.flatMap((account) =>
      account.locks.map((lock) => [
        account.provider,
        account.account,
        lock.model,
        [{ class: "num" }, fmt.duration(lock.remaining_s)],
        fmt.time(lock.locked_until),
        lock.reason,
      ]),
    );
    replace(
      locks,
      locked.length
        ? table(["provider", "account", "model", "left", "until", "reason"], locked, { class: "grid-table", "data-testid": "locks-table" })
        : h(
            "div",
            { class: "pad" },
            h("p", { class: "muted", "data-testid": "no-locks" }, "No account is locked."),
            report.accounts.length
              ? facts([["accounts", report.accounts.map((a) => `${a.provider}/${a.account}`).join(", ")]])
              : null,
          ),
    );
  }

  return { root, refresh, auto: true, title: "Health" };
}

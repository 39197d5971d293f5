// The running config: revision, reload status (GET /admin/v1/status) and the config
// itself, redacted by gw (GET /admin/v1/config); and a candidate's preview with
// `gw replay` (replay.js).

import { api } from "./api.js";
import { badge, facts, h, replace, table } from "./dom.js";
import * as fmt from "./format.js";
import { replayCard } from "./replay.js";

export function configView() {
  const state = h("div", { class: "card", "data-testid": "reload-status" });
  const routes = h("div", { class: "card" });
  const raw = h("pre", { class: "code-block", "data-testid": "config-json" });
  const replay = replayCard();
  const root = h(
    "section",
    { class: "view", "data-testid": "view-config" },
    h("div", { class: "view-head" }, h("h1", null, "Config")),
    state,
    routes,
    h("details", { class: "card" }, h("summary", null, "The running config (secrets shown as references or ***)"), raw),
    replay.root,
  );

  async function refresh() {
    const [status, config] = await Promise.all([api.status(), api.config()]);
    const file = status.config;
    const failed = Boolean(file.error);
    replace(
      state,
      h("h2", null, "Revision ", h("span", { "data-testid": "revision" }, String(status.revision)), " ", failed ? badge("last edit not applied", "bad") : badge("applied", "ok")),
      failed ? h("p", { class: "error-text", "data-testid": "reload-error" }, `${fmt.time(file.error_at)}: ${file.error}`) : null,
      facts([
        ["source", file.source],
        ["file", file.path === undefined ? null : `${file.path}${file.exists === false ? " (none: the built-in default)" : ""}`],
        ["applied", file.applied_at === undefined ? null : fmt.time(file.applied_at)],
        ["reloads", file.reloads === undefined ? null : `${file.reloads} applied, ${file.failures} refused`],
        ["server", `gw ${status.server.version} at ${status.server.url}, pid ${status.server.pid}, up ${fmt.duration(status.server.uptime_s)}`],
        ["auth", status.server.auth_mode],
        ["requests", `${fmt.int(status.requests.total)} since start (${Object.entries(status.requests.by_class).map(([k, v]) => `${k} ${v}`).join(", ")})`],
      ]),
    );
    const rows = (config.config.routes || []).map((route) => [
      h("span", { class: "mono" }, route.name),
      route.strategy || "priority",
      route.targets.map((t) => `${t.provider}/${t.model}`).join(", "),
    ]);
    replace(
      routes,
      h("h2", null, "Routes"),
      rows.length ? table(["route", "strategy", "targets"], rows, { class: "grid-table" }) : h("p", { class: "muted" }, "No routes configured."),
    );
    raw.textContent = JSON.stringify(config.config, null, 2);
    replay.offer(config.config);
  }

  return { root, refresh, auto: true, title: "Config" };
}

// The dashboard's shell: routing between views (#/requests, #/requests/<id>, #/health,
// #/usage, #/config), auto-refresh, and the login notice.

import { api } from "./api.js";
import { configView } from "./config.js";
import { h, replace } from "./dom.js";
import { explainView } from "./explain.js";
import * as fmt from "./format.js";
import { healthView } from "./health.js";
import { requestsView } from "./requests.js";
import { usageView } from "./usage.js";

const REFRESH_MS = 5000;
const main = document.getElementById("main");
const autoRefresh = document.getElementById("auto-refresh");
const serverLine = document.getElementById("server-line");
const logout = document.getElementById("logout");
let current = null; // {root, refresh, auto, title}
let loggedOut = false; // then nothing polls: the login link loads the page afresh

function navigate(hash) {
  window.location.hash = hash;
}

function viewFor(hash) {
  const [name, ...rest] = hash.replace(/^#\/?/, "").split("/");
  const ctx = { navigate };
  if (name === "requests" && rest.length) return ["requests", explainView(ctx, decodeURIComponent(rest.join("/")))];
  if (name === "health") return ["health", healthView(ctx)];
  if (name === "usage") return ["usage", usageView(ctx)];
  if (name === "config") return ["config", configView(ctx)];
  return ["requests", requestsView(ctx)];
}

function loginNotice() {
  return h(
    "section",
    { class: "notice card", "data-testid": "login-needed" },
    h("h1", null, "Log in to the gw dashboard"),
    h("p", null, "The dashboard shows gw's traces, usage and config, so it needs a login in every auth mode, and it never asks for a key. Run ", h("code", null, "gw dashboard"), " to log in:"),
    h("pre", { class: "code-block" }, "gw dashboard            # prints a one-time login link\ngw dashboard --open     # ... and opens it in your browser"),
    h("p", null, "in a terminal on the machine that runs gw, as the user that runs it (the CLI finds gw's local admin token by itself; elsewhere, with an admin key in its environment, as for ", h("code", null, "gw status"), "). The link works once, within a minute; the session it opens lasts 8 hours or until gw restarts, and may only read."),
  );
}

function showError(error) {
  if (error.needsLogin) {
    loggedOut = true;
    logout.hidden = true;
    replace(serverLine, "not logged in");
    replace(main, loginNotice());
    return;
  }
  let banner = main.querySelector(".error-banner");
  if (!banner) {
    banner = h("div", { class: "error-banner", role: "alert", "data-testid": "error-banner" });
    main.prepend(banner);
  }
  replace(banner, error.code ? `${error.code}: ${error.message}` : error.message);
}

function clearError() {
  const banner = main.querySelector(".error-banner");
  if (banner) banner.remove();
}

async function refreshServerLine() {
  const status = await api.status();
  const config = status.config;
  replace(
    serverLine,
    h("span", { "data-testid": "header-revision" }, `revision ${status.revision}`),
    config.error ? h("span", { class: "badge bad", title: config.error }, "reload failed") : null,
    ` · ${status.server.auth_mode} mode · up ${fmt.duration(status.server.uptime_s)}`,
  );
  logout.hidden = status.server.auth_mode !== "keys";
}

async function refresh(view) {
  // The header line is a nicety: only a lost login there stops the view.
  const line = refreshServerLine().catch((error) => {
    if (error.needsLogin) throw error;
  });
  try {
    await Promise.all([view.refresh(), line]);
    if (view !== current) return;
    loggedOut = false;
    clearError();
    if (!main.contains(view.root)) replace(main, view.root);
  } catch (error) {
    if (view === current) showError(error);
  }
}

function route() {
  const [name, view] = viewFor(window.location.hash || "#/requests");
  current = view;
  document.title = `${view.title} · gw dashboard`;
  for (const link of document.querySelectorAll("#nav a")) {
    link.classList.toggle("active", link.dataset.view === name);
  }
  replace(main, view.root);
  refresh(view);
}

setInterval(() => {
  if (!autoRefresh.checked || document.hidden || !current) return;
  // Logged out, nothing polls (each try would be a refused, traced request).
  if (!loggedOut && current.auto) refresh(current);
}, REFRESH_MS);

window.addEventListener("hashchange", route);
route();

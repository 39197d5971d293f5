// How numbers, times and statuses read on the page.

export function ms(value) {
  if (value === null || value === undefined) return "–";
  if (value >= 10000) return `${(value / 1000).toFixed(1)} s`;
  return `${Math.round(value)} ms`;
}

export function usd(value) {
  if (value === null || value === undefined) return "–";
  if (value === 0) return "$0";
  if (value < 0.01) return `$${value.toPrecision(2)}`;
  return `$${value.toFixed(2)}`;
}

export function int(value) {
  if (value === null || value === undefined) return "–";
  return Math.round(value).toLocaleString("en-US");
}

/** Compact: 1.2k, 3.4M. */
export function compact(value) {
  const abs = Math.abs(value);
  if (abs >= 1e6) return `${(value / 1e6).toFixed(abs >= 1e7 ? 0 : 1)}M`;
  if (abs >= 1e3) return `${(value / 1e3).toFixed(abs >= 1e4 ? 0 : 1)}k`;
  if (Number.isInteger(value)) return String(value);
  return value.toPrecision(2);
}

function pad(n, width = 2) {
  return String(n).padStart(width, "0");
}

/** An ISO time or epoch seconds as local "YYYY-MM-DD HH:MM:SS". */
export function time(value, withDate = true) {
  if (value === null || value === undefined) return "–";
  const d = typeof value === "number" ? new Date(value * 1000) : new Date(value);
  if (Number.isNaN(d.getTime())) return String(value);
  const clock = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  if (!withDate) return clock;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${clock}`;
}

export function duration(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (h) return `${h}h${pad(m)}m`;
  if (m) return `${m}m${pad(s % 60)}s`;
  return `${s}s`;
}

/** The tone of an HTTP status: ok, warn (4xx), bad (5xx). */
export function statusTone(status) {
  if (status < 400) return "ok";
  if (status < 500) return "warn";
  return "bad";
}

export const OUTCOME_TONES = {
  answered: "ok",
  retried: "warn",
  next_account: "warn",
  fell_back: "warn",
  failed: "bad",
  aborted: "muted",
  hedge_lost: "muted",
};

export const BREAKER_TONES = { closed: "ok", half_open: "warn", open: "bad" };
export const HEALTH_TONES = { healthy: "ok", degraded: "warn", unhealthy: "bad" };

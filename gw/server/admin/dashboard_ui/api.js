// The admin API, read with the browser's own credentials: the HttpOnly session cookie
// that `gw dashboard`'s login link opened. The page never sees or stores a key. Its one
// POST, the replay preview, changes nothing (gw/server/admin/dashboard_sessions.py).

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }

  /** Not logged in (no session, or an expired one). */
  get needsLogin() {
    return this.status === 401;
  }
}

export async function getJSON(path) {
  return request(path, { headers: { accept: "application/json" } });
}

/** POST ``text`` (the browser adds the page's Origin, which gw checks for a session). */
export async function postText(path, text, type) {
  return request(path, { method: "POST", body: text, headers: { accept: "application/json", "content-type": type } });
}

async function request(path, options) {
  let answer;
  try {
    answer = await fetch(path, { credentials: "same-origin", cache: "no-store", ...options });
  } catch (error) {
    throw new ApiError(0, "unreachable", `gw does not answer (${error.message})`);
  }
  if (!answer.ok) {
    let code = null;
    let message = `HTTP ${answer.status}`;
    try {
      const body = await answer.json();
      code = body.error.code;
      message = body.error.message;
    } catch {
      // not gw's error shape: keep the status
    }
    throw new ApiError(answer.status, code, message);
  }
  return answer.json();
}

export const api = {
  traces: (limit) => getJSON(`/admin/v1/traces?limit=${encodeURIComponent(limit)}`),
  trace: (id) => getJSON(`/admin/v1/traces/${encodeURIComponent(id)}`),
  health: () => getJSON("/admin/v1/health"),
  usage: (by, since) =>
    getJSON(`/admin/v1/usage?by=${encodeURIComponent(by)}${since ? `&since=${encodeURIComponent(since)}` : ""}`),
  status: () => getJSON("/admin/v1/status"),
  config: () => getJSON("/admin/v1/config"),
  /** `gw replay` of a candidate config's text over the recorded requests since ``since``. */
  replay: (candidate, since) =>
    postText(`/admin/v1/config/replay?since=${encodeURIComponent(since)}`, candidate, "application/yaml"),
};

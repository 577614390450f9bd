// The inspector's API as the page calls it: the token (from the address's fragment),
// fetch with the token header and errors as ApiError, and the JSON Lines reader of a
// run's feed.

const hash = new URLSearchParams(location.hash.replace(/^#/, ""));
export const TOKEN = hash.get("token") || "";
export const HASH_URL = hash.get("url") || "";
export const FALLBACK_URL = "http://127.0.0.1:8000/agentic_chat";

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** Calls the inspector's API with the token header; throws ApiError on a 4xx/5xx. */
export async function api(path, { method = "GET", json, body, headers = {}, signal } = {}) {
  const h2 = { "X-Agui-Token": TOKEN, ...headers };
  if (json !== undefined) {
    h2["Content-Type"] = "application/json";
    body = JSON.stringify(json);
  }
  const res = await fetch(path, { method, headers: h2, body, signal, cache: "no-store", credentials: "omit" });
  if (!res.ok) {
    let err = null;
    try {
      err = await res.json();
    } catch {
      /* not JSON */
    }
    const code = err?.error || `http_${res.status}`;
    let msg = err?.message || res.statusText || `HTTP ${res.status}`;
    if (res.status === 401) msg = `${msg} — open the exact address agui inspect printed (it carries #token=…)`;
    throw new ApiError(res.status, code, `${code}: ${msg}`);
  }
  return res;
}

/**
 * Reads a JSON Lines body as it arrives, calling `onLine` with each line that is not
 * blank. Resolves true at the body's end, or false as soon as `keepGoing()` is false
 * after a read.
 */
export async function readLines(res, onLine, keepGoing) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let pending = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    if (!keepGoing()) return false;
    const text = decoder.decode(value, { stream: true });
    let start = 0;
    let nl;
    while ((nl = text.indexOf("\n", start)) !== -1) {
      let line = text.slice(start, nl);
      start = nl + 1;
      if (pending.length) {
        pending.push(line);
        line = pending.join("");
        pending = [];
      }
      if (line.trim()) onLine(line);
    }
    if (start < text.length) pending.push(text.slice(start));
  }
  const tail = pending.join("") + decoder.decode();
  if (tail.trim()) onLine(tail);
  return true;
}

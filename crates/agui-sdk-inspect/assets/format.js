// How figures read on the page (counts, milliseconds, durations, sizes, clock times,
// short ids), and random uuids for threads, runs and messages.

export const nf0 = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const nf1 = new Intl.NumberFormat("en-US", { maximumFractionDigits: 1, minimumFractionDigits: 1 });
const nf2 = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2, minimumFractionDigits: 2 });

export function fmtMs(ms) {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "–";
  if (ms < 10) return nf2.format(ms);
  if (ms < 1000) return nf1.format(ms);
  return nf0.format(ms);
}
export function fmtDuration(ms) {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "–";
  if (ms < 1000) return `${fmtMs(ms)} ms`;
  if (ms < 60_000) return `${nf2.format(ms / 1000)} s`;
  const m = Math.floor(ms / 60_000);
  return `${m} min ${Math.round((ms % 60_000) / 1000)} s`;
}
export function fmtBytes(n) {
  if (n === null || n === undefined || !Number.isFinite(n)) return "–";
  if (n < 1000) return `${n} B`;
  if (n < 1e6) return `${nf1.format(n / 1e3)} kB`;
  if (n < 1e9) return `${nf1.format(n / 1e6)} MB`;
  return `${nf2.format(n / 1e9)} GB`;
}
export function fmtClock(ms) {
  if (!ms) return "";
  const d = new Date(ms);
  return d.toLocaleTimeString([], { hour12: false });
}
export const shortId = (s) => (s && s.length > 12 ? `${s.slice(0, 8)}…` : s || "");

export function uuid() {
  if (globalThis.crypto?.randomUUID) return crypto.randomUUID();
  // Pages served on a non-loopback address are not a secure context: build a v4 uuid.
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const x = [...b].map((v) => v.toString(16).padStart(2, "0")).join("");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

// Pieces every page uses: the html template tag, live streams as hooks, a ticking clock,
// state badges, progress bars and the notes of what the dashboard cannot show.
import { h } from "preact";
import { useEffect, useState } from "preact/hooks";
import htm from "htm";

import { stream } from "./api.js";
import { human } from "./time.js";

export const html = htm.bind(h);

// The connection status of every open stream, shown in the header.
const statusListeners = new Set();
let lastStatus = "connecting";
export function reportStatus(status) {
  lastStatus = status;
  statusListeners.forEach((listener) => listener(status));
}
export function useStatus() {
  const [status, setStatus] = useState(lastStatus);
  useEffect(() => {
    statusListeners.add(setStatus);
    return () => statusListeners.delete(setStatus);
  }, []);
  return status;
}

// Subscribe to a stream for as long as the component is shown; `deps` reopen it.
export function useStream(path, params, handlers, deps) {
  useEffect(() => stream(path, params, handlers, reportStatus), deps);
}

export function useNow(interval = 1000) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), interval);
    return () => clearInterval(timer);
  }, [interval]);
  return now;
}

export function jobHref(row) {
  return `#/job/${encodeURIComponent(row.namespace)}/${encodeURIComponent(row.kind)}/${encodeURIComponent(row.name)}`;
}

export function StateBadge({ state, title }) {
  return html`<span class=${`state state-${String(state).toLowerCase()}`} title=${title || ""}
    >${state}</span
  >`;
}

export function Progress({ progress, eta }) {
  if (progress === null || progress === undefined) return html`<span class="muted">-</span>`;
  const left = eta === null || eta === undefined ? "" : ` ETA ${human(eta)}`;
  return html`<span class="progress" title=${`${progress}%${left}`}>
    <span class="bar"><span class="fill" style=${{ width: `${Math.min(100, progress)}%` }}></span></span>
    <span class="progress-text">${progress}%${left}</span>
  </span>`;
}

export function Notes({ notes }) {
  if (!notes || !notes.length) return null;
  return html`<ul class="notes">
    ${notes.map((note) => html`<li>${note}</li>`)}
  </ul>`;
}

export function Loading({ what }) {
  return html`<p class="muted">Loading ${what}…</p>`;
}

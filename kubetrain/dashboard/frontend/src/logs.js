// A job's merged logs, live: every replica's lines as they are written, each with its
// replica; filter by replica, search, follow (keep the newest in view), download the whole
// text, and read the previous containers' logs after a restart.
import { useEffect, useRef, useState } from "preact/hooks";

import { getJSON, jobParams, url } from "./api.js";
import { html, useStream } from "./common.js";

const KEEP = 50000; // lines kept in the page; the download has them all
const SHOWN = 5000; // lines drawn at most (the newest that match)

export function Logs({ target, replicas }) {
  const lines = useRef([]);
  const [version, setVersion] = useState(0);
  const [notes, setNotes] = useState([]);
  const [hidden, setHidden] = useState(new Set());
  const [search, setSearch] = useState("");
  const [follow, setFollow] = useState(true);
  const [previous, setPrevious] = useState(null);
  const box = useRef(null);
  const frame = useRef(0);
  const redraw = () => {
    if (!frame.current) {
      frame.current = requestAnimationFrame(() => {
        frame.current = 0;
        setVersion((v) => v + 1);
      });
    }
  };
  useStream(
    "/api/stream/logs",
    jobParams(target),
    {
      snapshot: () => {
        lines.current = [];
        setNotes([]);
        redraw();
      },
      lines: (batch) => {
        for (const [replica, text] of batch) lines.current.push({ replica, text });
        if (lines.current.length > KEEP) lines.current.splice(0, lines.current.length - KEEP);
        redraw();
      },
      note: (text) => setNotes((n) => [...n, text]),
    },
    [target.namespace, target.kind, target.name],
  );
  useEffect(() => {
    if (follow && box.current) box.current.scrollTop = box.current.scrollHeight;
  });
  const seen = [...new Set([...replicas, ...lines.current.map((l) => l.replica)])];
  const needle = search.toLowerCase();
  const matching = lines.current.filter(
    (l) => !hidden.has(l.replica) && (!needle || l.text.toLowerCase().includes(needle)),
  );
  const shown = matching.slice(-SHOWN);
  const toggle = (replica) => {
    const next = new Set(hidden);
    if (next.has(replica)) next.delete(replica);
    else next.add(replica);
    setHidden(next);
  };
  const readPrevious = async () => {
    try {
      setPrevious(await getJSON("/api/logs", { ...jobParams(target), previous: "1" }));
    } catch (error) {
      setPrevious({ lines: [], notes: [String(error.message || error)] });
    }
  };
  return html`<div class="logs" data-version=${version}>
    <div class="log-tools">
      <span class="replica-filter">
        ${seen.map((replica) => html`<label class="chip">
          <input type="checkbox" checked=${!hidden.has(replica)} onChange=${() => toggle(replica)} />
          ${replica}
        </label>`)}
      </span>
      <input type="search" placeholder="Search the logs" value=${search} aria-label="search logs"
        onInput=${(e) => setSearch(e.currentTarget.value)} />
      <label><input type="checkbox" checked=${follow} onChange=${() => setFollow(!follow)} /> follow</label>
      <a class="button" href=${url("/api/logs", { ...jobParams(target), download: "1" })}
        download>Download</a>
      <button onClick=${readPrevious}>Previous containers</button>
    </div>
    ${notes.length ? html`<ul class="notes">${notes.map((n) => html`<li>${n}</li>`)}</ul>` : null}
    ${matching.length > SHOWN
      ? html`<p class="muted">Showing the last ${SHOWN} of ${matching.length} lines; Download has them all.</p>`
      : null}
    <div class="log-lines" ref=${box} data-testid="log-lines">
      ${shown.map((l) => html`<div class="log-line"><span class="replica">[${l.replica}]</span> ${l.text}</div>`)}
      ${!lines.current.length ? html`<p class="muted">No log lines yet.</p>` : null}
    </div>
    ${previous
      ? html`<div class="previous">
          <h3>Previous containers <button onClick=${() => setPrevious(null)}>Close</button></h3>
          ${previous.notes.length ? html`<ul class="notes">${previous.notes.map((n) => html`<li>${n}</li>`)}</ul>` : null}
          <div class="log-lines">
            ${previous.lines.map(([replica, text]) => html`<div class="log-line"><span class="replica">[${replica}]</span> ${text}</div>`)}
          </div>
        </div>`
      : null}
  </div>`;
}

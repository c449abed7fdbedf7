// The Jobs page: every job of every kind, filterable, updated as the server pushes changes.
import { useMemo, useRef, useState } from "preact/hooks";

import { Loading, Notes, Progress, StateBadge, html, jobHref, useNow, useStream } from "./common.js";
import { between, human, since } from "./time.js";

const STATES = ["Pending", "Created", "Running", "Restarting", "Suspended", "Succeeded", "Complete", "Failed"];

// Every job's row by key, kept current from the jobs stream; shared by the Jobs and the
// Training curves pages.
export function useJobRows() {
  const rows = useRef(new Map());
  const [version, setVersion] = useState(0);
  const [notes, setNotes] = useState([]);
  const [loaded, setLoaded] = useState(false);
  useStream(
    "/api/stream/jobs",
    {},
    {
      snapshot: (doc) => {
        rows.current = new Map(doc.rows.map((row) => [row.key, row]));
        setNotes(doc.notes || []);
        setLoaded(true);
        setVersion((v) => v + 1);
      },
      change: (doc) => {
        for (const row of doc.rows) rows.current.set(row.key, row);
        for (const key of doc.removed) rows.current.delete(key);
        setVersion((v) => v + 1);
      },
      notes: (doc) => setNotes(doc),
    },
    [],
  );
  return { rows: rows.current, version, notes, loaded };
}

function matches(row, filter) {
  if (filter.kind && row.kind !== filter.kind) return false;
  if (filter.namespace && row.namespace !== filter.namespace) return false;
  if (filter.state) {
    const same = (s) => (s === "Complete" ? "Succeeded" : s);
    if (same(row.state) !== same(filter.state)) return false;
  }
  if (filter.text) {
    const text = filter.text.toLowerCase();
    const hay = `${row.namespace}/${row.kind}/${row.name} ${row.reason} ${row.message}`.toLowerCase();
    if (!hay.includes(text)) return false;
  }
  return true;
}

const SORTS = {
  name: (a, b) => a.namespace.localeCompare(b.namespace) || a.kind.localeCompare(b.kind) || a.name.localeCompare(b.name),
  age: (a, b) => String(b.created || "").localeCompare(String(a.created || "")),
  state: (a, b) => a.state.localeCompare(b.state) || SORTS.name(a, b),
};

export function JobsPage() {
  const { rows, version, notes, loaded } = useJobRows();
  const [filter, setFilter] = useState({ text: "", kind: "", state: "", namespace: "" });
  const [sort, setSort] = useState("name");
  const now = useNow(rows.size > 300 ? 5000 : 1000);
  const all = useMemo(() => [...rows.values()], [version]);
  const kinds = useMemo(() => [...new Set(all.map((r) => r.kind))].sort(), [all]);
  const namespaces = useMemo(() => [...new Set(all.map((r) => r.namespace))].sort(), [all]);
  const shown = useMemo(() => all.filter((r) => matches(r, filter)).sort(SORTS[sort]), [all, filter, sort]);
  const set = (field) => (event) => setFilter({ ...filter, [field]: event.currentTarget.value });
  const header = (label, key) =>
    html`<th class=${SORTS[key] ? "sortable" : ""} onClick=${() => SORTS[key] && setSort(key)}>
      ${label}${sort === key ? " ▾" : ""}
    </th>`;
  return html`<section>
    <h1>Jobs</h1>
    <${Notes} notes=${notes} />
    <div class="filters">
      <input type="search" placeholder="Filter by name, namespace, reason…" value=${filter.text}
        onInput=${set("text")} aria-label="filter" />
      <select onChange=${set("kind")} value=${filter.kind} aria-label="kind">
        <option value="">every kind</option>
        ${kinds.map((k) => html`<option value=${k}>${k}</option>`)}
      </select>
      <select onChange=${set("state")} value=${filter.state} aria-label="state">
        <option value="">every state</option>
        ${STATES.map((s) => html`<option value=${s}>${s}</option>`)}
      </select>
      <select onChange=${set("namespace")} value=${filter.namespace} aria-label="namespace">
        <option value="">every namespace</option>
        ${namespaces.map((n) => html`<option value=${n}>${n}</option>`)}
      </select>
      <span class="count" data-testid="job-count">${shown.length} of ${all.length} jobs</span>
    </div>
    ${!loaded
      ? html`<${Loading} what="jobs" />`
      : html`<table class="jobs">
          <thead>
            <tr>
              ${header("Namespace", "")}${header("Kind", "")}${header("Name", "name")}
              ${header("State", "state")}${header("Age", "age")}<th>Duration</th><th>Replicas</th>
              <th>Progress</th><th>Failure</th>
            </tr>
          </thead>
          <tbody>
            ${shown.map((row) => html`<${JobRow} key=${row.key} row=${row} now=${now} />`)}
          </tbody>
        </table>`}
    ${loaded && !all.length ? html`<p class="muted">No jobs yet.</p>` : null}
  </section>`;
}

function JobRow({ row, now }) {
  const replicas = `${row.running}/${row.replicas === null ? "?" : row.replicas}`;
  return html`<tr data-job=${row.key}>
    <td>${row.namespace}</td>
    <td>${row.kind}</td>
    <td><a href=${jobHref(row)}>${row.name}</a></td>
    <td><${StateBadge} state=${row.state} title=${[row.reason, row.message].filter(Boolean).join(": ")} /></td>
    <td>${human(since(row.created, now))}</td>
    <td>${row.started ? human(between(row.started, row.finished, now)) : "-"}</td>
    <td>${replicas}</td>
    <td><${Progress} progress=${row.progress} eta=${row.finishedState ? null : row.eta} /></td>
    <td class="failure">${row.failure ? row.failure.text : row.state === "Failed" ? row.reason : ""}</td>
  </tr>`;
}

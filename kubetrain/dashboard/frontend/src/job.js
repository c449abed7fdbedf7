// The page of one job: its state and actions, conditions as a timeline, replicas with their
// resources, a Gantt chart of its pods, live logs, events, YAML, its runtime and curves.
import { useState } from "preact/hooks";

import { act } from "./api.js";
import { Curves } from "./curves.js";
import { Gantt } from "./gantt.js";
import { Loading, Notes, Progress, StateBadge, html, jobHref, useNow, useStream } from "./common.js";
import { Logs } from "./logs.js";
import { between, human, since, stamp } from "./time.js";

const TAB_NAMES = {
  overview: "Overview",
  logs: "Logs",
  curves: "Curves",
  events: "Events",
  yaml: "YAML",
  runtime: "Runtime",
};

function tabs(detail) {
  const found = ["overview", "logs", "events", "yaml"];
  if (detail.job.kind === "TrainJob") {
    found.splice(2, 0, "curves");
    found.push("runtime");
  }
  return found;
}

export function JobPage({ target }) {
  const [detail, setDetail] = useState(null);
  const [gone, setGone] = useState(false);
  const [flash, setFlash] = useState(null);
  useStream(
    "/api/stream/job",
    { namespace: target.namespace, kind: target.kind, name: target.name },
    {
      snapshot: (d) => {
        setDetail(d);
        setGone(false);
      },
      gone: () => setGone(true),
    },
    [target.namespace, target.kind, target.name],
  );
  const title = html`<h1><span class="muted">${target.kind}</span> ${target.name}
    <span class="muted"> in ${target.namespace}</span></h1>`;
  if (gone) {
    return html`<section>${title}
      ${flash ? html`<p class="flash">${flash}</p>` : null}
      <p>This job does not exist (any more). <a href="#/">All jobs</a></p></section>`;
  }
  if (!detail) return html`<section>${title}<${Loading} what="the job" /></section>`;
  const tab = tabs(detail).includes(target.tab) ? target.tab : "overview";
  const run = async (action) => {
    if (action === "delete" && !window.confirm(`Delete ${target.kind} ${target.namespace}/${target.name}?`)) return;
    try {
      setFlash((await act(target, action)).message);
    } catch (error) {
      setFlash(String(error.message || error));
    }
  };
  const job = detail.job;
  return html`<section class="job">
    ${title}
    <div class="job-head">
      <${StateBadge} state=${job.state} />
      ${job.reason ? html`<span class="reason">${job.reason}${job.message ? `: ${job.message}` : ""}</span>` : null}
      <span class="actions">
        ${job.suspended
          ? html`<button onClick=${() => run("resume")}>Resume</button>`
          : html`<button onClick=${() => run("suspend")} disabled=${job.finishedState}>Suspend</button>`}
        <button class="danger" onClick=${() => run("delete")}>Delete</button>
      </span>
    </div>
    ${flash ? html`<p class="flash" role="status">${flash}</p>` : null}
    <nav class="tabs">
      ${tabs(detail).map((t) => html`<a class=${t === tab ? "active" : ""} href=${`${jobHref(target)}/${t}`}>${TAB_NAMES[t]}</a>`)}
    </nav>
    ${tab === "overview" ? html`<${Overview} detail=${detail} />` : null}
    ${tab === "logs" ? html`<${Logs} target=${target} replicas=${detail.replicas.map((r) => r.id)} />` : null}
    ${tab === "curves" ? html`<${Curves} series=${detail.curves} row=${job} note=${detail.curvesNote} />` : null}
    ${tab === "events" ? html`<${Events} events=${detail.events} />` : null}
    ${tab === "yaml" ? html`<pre class="yaml">${detail.yaml}</pre>` : null}
    ${tab === "runtime" ? html`<${Runtime} runtime=${detail.runtime} />` : null}
  </section>`;
}

// Ages and durations tick here, not in the page: the logs beside them need no redraw.
function Overview({ detail }) {
  const now = useNow();
  const job = detail.job;
  const facts = [
    ["Created", `${stamp(job.created)} (${human(since(job.created, now))} ago)`],
    ["Started", job.started ? stamp(job.started) : "-"],
    ["Finished", job.finished ? stamp(job.finished) : "-"],
    ["Duration", job.started ? human(between(job.started, job.finished, now)) : "-"],
    ["Replicas", `${job.running}/${job.replicas === null ? "?" : job.replicas} running`],
  ];
  return html`<div class="overview">
    <dl class="facts">
      ${facts.map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}
      <dt>Progress</dt><dd><${Progress} progress=${job.progress} eta=${job.finishedState ? null : job.eta} /></dd>
      ${job.failure ? html`<dt>Failed replica</dt><dd class="failure">${job.failure.text}</dd>` : null}
    </dl>
    <h2>Conditions</h2>
    <${Timeline} conditions=${detail.conditions} now=${now} />
    <h2>Replicas</h2>
    <${Notes} notes=${detail.usageNote ? [detail.usageNote] : []} />
    <${Replicas} rows=${detail.replicas} />
    <h2>Pods over time</h2>
    <${Gantt} bars=${detail.gantt} now=${now} />
  </div>`;
}

function Timeline({ conditions, now }) {
  if (!conditions.length) return html`<p class="muted">None yet: the controller has not reported on this job.</p>`;
  return html`<ol class="timeline">
    ${conditions.map((c) => html`<li class=${`cond-${c.status === "True" ? "true" : "false"}`}>
      <span class="when" title=${stamp(c.time)}>${human(since(c.time, now))} ago</span>
      <strong>${c.type}</strong> <span class="muted">${c.status}</span>
      ${c.reason ? html` <span class="reason">${c.reason}</span>` : null}
      ${c.message ? html`<div class="message">${c.message}</div>` : null}
    </li>`)}
  </ol>`;
}

function Amount({ value }) {
  if (!value) return html`<span class="muted">-</span>`;
  const { used, request, limit } = value;
  const top = limit?.value || request?.value || 0;
  const share = used && top ? Math.min(100, (100 * used.value) / top) : 0;
  return html`<span class="amount" title="used / request / limit">
    ${used ? html`<span class="bar small"><span class="fill" style=${{ width: `${share}%` }}></span></span>` : null}
    ${used ? used.text : "-"} / ${request ? request.text : "-"} / ${limit ? limit.text : "-"}
  </span>`;
}

function Replicas({ rows }) {
  if (!rows.length) return html`<p class="muted">None.</p>`;
  return html`<table class="replicas">
    <thead><tr><th>Replica</th><th>Pod</th><th>Phase</th><th>Node</th><th>Restarts</th>
      <th>Exit code</th><th>CPU used / req / limit</th><th>Memory used / req / limit</th><th>GPUs</th></tr></thead>
    <tbody>
      ${rows.map((r) => html`<tr>
        <td>${r.id}</td>
        <td>${r.pod || "-"}</td>
        <td><${StateBadge} state=${r.phase} />${r.waiting ? html` <span class="reason">${r.waiting}</span>` : null}</td>
        <td>${r.node || "-"}</td>
        <td>${r.restarts ?? "-"}</td>
        <td class=${r.exitCode ? "failure" : ""}>${r.exit ?? "-"}</td>
        <td><${Amount} value=${r.resources?.cpu} /></td>
        <td><${Amount} value=${r.resources?.memory} /></td>
        <td>${r.resources?.gpu?.request ? r.resources.gpu.request.text : "-"}</td>
      </tr>`)}
    </tbody>
  </table>`;
}

function Events({ events }) {
  const now = useNow();
  if (!events.length) return html`<p class="muted">No events.</p>`;
  return html`<table class="events">
    <thead><tr><th>Last seen</th><th>Type</th><th>Reason</th><th>Object</th><th>Message</th></tr></thead>
    <tbody>
      ${[...events].reverse().map((e) => html`<tr class=${e.type === "Warning" ? "warning" : ""}>
        <td title=${stamp(e.time)}>${human(since(e.time, now))}</td>
        <td>${e.type}</td><td>${e.reason}</td><td>${e.object}</td>
        <td>${e.message}${e.count > 1 ? ` (x${e.count})` : ""}</td>
      </tr>`)}
    </tbody>
  </table>`;
}

function Runtime({ runtime }) {
  if (!runtime) return html`<p class="muted">This TrainJob names no runtime.</p>`;
  return html`<div class="runtime">
    <p><strong>${runtime.kind}</strong> ${runtime.namespace ? `${runtime.namespace}/` : ""}${runtime.name}
      ${runtime.nodes !== null ? html` <span class="muted">(${runtime.nodes} node${runtime.nodes === 1 ? "" : "s"} by default)</span>` : null}</p>
    ${runtime.yaml ? html`<pre class="yaml">${runtime.yaml}</pre>` : html`<p class="muted">The runtime cannot be read.</p>`}
  </div>`;
}

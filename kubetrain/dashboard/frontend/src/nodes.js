// The Nodes page: per node, what its live pods request of the CPU, memory and GPUs it
// offers, and what it uses, as `kubetrain top node` (and `arena top node`) show it.
import { useState } from "preact/hooks";

import { Loading, Notes, StateBadge, html, useStream } from "./common.js";

function Share({ bar, text, used }) {
  const share = bar.allocatable ? Math.min(100, (100 * bar.request) / bar.allocatable) : 0;
  const usedShare = bar.allocatable && bar.used !== null ? Math.min(100, (100 * bar.used) / bar.allocatable) : null;
  return html`<span class="share" title=${`requested ${text}${used ? `, used ${used}` : ""}`}>
    <span class="bar"><span class="fill" style=${{ width: `${share}%` }}></span>
      ${usedShare !== null ? html`<span class="used" style=${{ width: `${usedShare}%` }}></span>` : null}</span>
    <span>${text}</span>${used ? html` <span class="muted">(${used} used)</span>` : null}
  </span>`;
}

export function NodesPage() {
  const [doc, setDoc] = useState(null);
  useStream("/api/stream/nodes", {}, { snapshot: setDoc }, []);
  if (!doc) return html`<section><h1>Nodes</h1><${Loading} what="nodes" /></section>`;
  return html`<section>
    <h1>Nodes</h1>
    <${Notes} notes=${doc.notes} />
    ${!doc.nodes.length ? html`<p class="muted">No nodes have registered yet.</p>` : html`<table class="nodes">
      <thead><tr><th>Node</th><th>Status</th><th>CPU requested / allocatable</th>
        <th>Memory requested / allocatable</th><th>GPUs requested / allocatable</th><th>Pods</th><th>Jobs</th></tr></thead>
      <tbody>
        ${doc.nodes.map((n) => html`<tr key=${n.name}>
          <td>${n.name}</td>
          <td><${StateBadge} state=${n.status.split(",")[0]} title=${n.status} /></td>
          <td><${Share} bar=${n.bars.cpu} text=${n.cpu} used=${n.cpuUsed} /></td>
          <td><${Share} bar=${n.bars.memory} text=${n.memory} used=${n.memoryUsed} /></td>
          <td><${Share} bar=${n.bars.gpu} text=${n.gpu} used=${null} /></td>
          <td>${n.pods}</td>
          <td>${n.jobs.map((key) => {
            const [namespace, kind, name] = key.split("/");
            return html`<a class="chip" href=${`#/job/${encodeURIComponent(namespace)}/${encodeURIComponent(kind)}/${encodeURIComponent(name)}`}>${namespace}/${name}</a> `;
          })}</td>
        </tr>`)}
      </tbody>
    </table>`}
  </section>`;
}

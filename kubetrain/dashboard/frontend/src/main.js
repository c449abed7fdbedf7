// The dashboard's page: a header with the views and the stream status, and the view the
// address names (#/, #/job/NS/KIND/NAME[/TAB], #/curves[/NS/NAME], #/nodes). The views are
// fragments, so the ?token=... of the address stays as it is on every link.
import "./app.css";

import { render } from "preact";
import { useEffect, useState } from "preact/hooks";

import { html, useStatus } from "./common.js";
import { CurvesPage } from "./curves.js";
import { JobPage } from "./job.js";
import { JobsPage } from "./jobs.js";
import { NodesPage } from "./nodes.js";

function route(hash) {
  const parts = hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "job" && parts.length >= 4) {
    return { page: "job", target: { namespace: parts[1], kind: parts[2], name: parts[3], tab: parts[4] } };
  }
  if (parts[0] === "curves") {
    return { page: "curves", chosen: parts.length >= 3 ? { namespace: parts[1], name: parts[2] } : null };
  }
  if (parts[0] === "nodes") return { page: "nodes" };
  return { page: "jobs" };
}

function App() {
  const [where, setWhere] = useState(route(location.hash));
  const status = useStatus();
  useEffect(() => {
    const moved = () => setWhere(route(location.hash));
    window.addEventListener("hashchange", moved);
    return () => window.removeEventListener("hashchange", moved);
  }, []);
  const link = (page, href, label) =>
    html`<a class=${where.page === page ? "active" : ""} href=${href}>${label}</a>`;
  return html`<div>
    <header>
      <span class="brand">kubetrain</span>
      <nav>
        ${link("jobs", "#/", "Jobs")}${link("curves", "#/curves", "Training curves")}${link("nodes", "#/nodes", "Nodes")}
      </nav>
      <span class=${`status status-${status}`} data-testid="status">${status}</span>
    </header>
    <main>
      ${where.page === "jobs" ? html`<${JobsPage} />` : null}
      ${where.page === "job"
        ? html`<${JobPage} key=${`${where.target.namespace}/${where.target.kind}/${where.target.name}`}
            target=${where.target} />`
        : null}
      ${where.page === "curves" ? html`<${CurvesPage} chosen=${where.chosen} />` : null}
      ${where.page === "nodes" ? html`<${NodesPage} />` : null}
    </main>
  </div>`;
}

render(html`<${App} />`, document.getElementById("app"));

// Training curves: a chart per metric a TrainJob reported through kubetrain.report (and one
// of its progress), over time, with the latest progress and ETA, and the values as a table.
import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";

import { Loading, Notes, Progress, StateBadge, html, useStream } from "./common.js";
import { useJobRows } from "./jobs.js";
import { clock } from "./time.js";

function Chart({ title, times, values, unit }) {
  const box = useRef(null);
  const plot = useRef(null);
  useEffect(() => {
    const width = Math.max(300, (box.current?.clientWidth || 600) - 10);
    plot.current = new uPlot(
      {
        width,
        height: 200,
        legend: { show: false },
        scales: { x: { time: true } },
        axes: [{}, { size: 60, values: (u, ticks) => ticks.map((t) => `${t}${unit || ""}`) }],
        series: [{}, { label: title, stroke: "#2f6fdf", width: 2, points: { show: true, size: 6 } }],
      },
      [times, values],
      box.current,
    );
    return () => plot.current?.destroy();
  }, []);
  useEffect(() => {
    plot.current?.setData([times, values]);
  }, [times, values]);
  return html`<div class="chart" data-metric=${title}>
    <h3>${title}</h3>
    <div ref=${box}></div>
  </div>`;
}

export function Curves({ series, row, note }) {
  const [table, setTable] = useState(false);
  if (!series || !series.time.length) {
    return html`<div>
      <${Notes} notes=${note ? [note] : []} />
      <p class="muted">
        No reports yet: a training script reports with
        <code>kubetrain.report(progress=..., metrics={...})</code>.
      </p>
    </div>`;
  }
  const names = Object.keys(series.metrics);
  const last = series.time.length - 1;
  return html`<div class="curves">
    <${Notes} notes=${note ? [note] : []} />
    <p class="curves-summary">
      <${Progress} progress=${series.progress[last]}
        eta=${row?.finishedState ? null : series.eta[last]} />
      <span class="muted"> ${series.time.length} reports, the last at ${clock(series.time[last] * 1000)}</span>
    </p>
    <div class="charts">
      ${series.progress.some((p) => p !== null)
        ? html`<${Chart} key="progress" title="progress" unit="%" times=${series.time}
            values=${series.progress} />`
        : null}
      ${names.map((name) => html`<${Chart} key=${name} title=${name} times=${series.time}
        values=${series.metrics[name]} />`)}
    </div>
    <button onClick=${() => setTable(!table)}>${table ? "Hide values" : "Show values"}</button>
    ${table
      ? html`<table class="values">
          <thead><tr><th>time</th><th>progress</th><th>ETA (s)</th>
            ${names.map((n) => html`<th>${n}</th>`)}</tr></thead>
          <tbody>
            ${series.time.map((t, i) => html`<tr>
              <td>${clock(t * 1000)}</td>
              <td>${series.progress[i] ?? "-"}</td>
              <td>${series.eta[i] ?? "-"}</td>
              ${names.map((n) => html`<td>${series.metrics[n][i] ?? "-"}</td>`)}
            </tr>`)}
          </tbody>
        </table>`
      : null}
  </div>`;
}

// The Training curves page: the TrainJobs, and the curves of the one chosen.
export function CurvesPage({ chosen }) {
  const { rows, version, loaded } = useJobRows();
  const trainjobs = [...rows.values()].filter((r) => r.kind === "TrainJob");
  return html`<section class="curves-page">
    <h1>Training curves</h1>
    <div class="split">
      <nav class="picker">
        ${!loaded ? html`<${Loading} what="TrainJobs" />` : null}
        ${loaded && !trainjobs.length ? html`<p class="muted">No TrainJobs.</p>` : null}
        <ul>
          ${trainjobs.map((row) => html`<li key=${row.key} class=${chosen && chosen.name === row.name && chosen.namespace === row.namespace ? "chosen" : ""}>
            <a href=${`#/curves/${encodeURIComponent(row.namespace)}/${encodeURIComponent(row.name)}`}>
              ${row.namespace}/${row.name}</a>
            <${StateBadge} state=${row.state} />
            <${Progress} progress=${row.progress} eta=${row.finishedState ? null : row.eta} />
          </li>`)}
        </ul>
      </nav>
      <div class="chosen-curves">
        ${chosen ? html`<${JobCurves} key=${`${chosen.namespace}/${chosen.name}`} target=${chosen} />`
          : html`<p class="muted">Choose a TrainJob.</p>`}
      </div>
    </div>
  </section>`;
}

function JobCurves({ target }) {
  const [detail, setDetail] = useState(null);
  const [gone, setGone] = useState(false);
  const params = { namespace: target.namespace, kind: "TrainJob", name: target.name };
  useStream(
    "/api/stream/job",
    params,
    { snapshot: (d) => { setDetail(d); setGone(false); }, gone: () => setGone(true) },
    [target.namespace, target.name],
  );
  if (gone) return html`<p class="muted">TrainJob ${target.namespace}/${target.name} does not exist.</p>`;
  if (!detail) return html`<${Loading} what="curves" />`;
  const href = `#/job/${encodeURIComponent(target.namespace)}/TrainJob/${encodeURIComponent(target.name)}`;
  return html`<div>
    <h2><a href=${href}>${target.namespace}/${target.name}</a> <${StateBadge} state=${detail.job.state} /></h2>
    <${Curves} series=${detail.curves} row=${detail.job} note=${detail.curvesNote} />
  </div>`;
}

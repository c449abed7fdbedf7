// The Gantt chart of a job's pods: a bar per pod from its creation to its end (or now), pale
// while it waited to be scheduled and for its container, coloured by how its container ran;
// the run before the last restart, and deleted pods, as the dashboard saw them.
import { html } from "./common.js";
import { clock, parse } from "./time.js";

const WIDTH = 1000;
const ROW = 22;
const LABEL = 190;

function color(bar) {
  if (bar.exitCode === 0) return "ok";
  if (bar.exitCode !== null && bar.exitCode !== undefined) return "bad";
  if (bar.deleted) return "gone";
  if (bar.phase === "Running") return "run";
  return "wait";
}

export function Gantt({ bars, now }) {
  if (!bars.length) return html`<p class="muted">No pods yet.</p>`;
  const times = bars.flatMap((b) => [b.created, b.ended, b.deleted, b.previous?.started].map(parse));
  const start = Math.min(...times.filter((t) => t !== null));
  const end = Math.max(now, ...times.filter((t) => t !== null));
  const span = Math.max(1000, end - start);
  const x = (ms) => LABEL + ((ms - start) / span) * (WIDTH - LABEL - 10);
  const height = bars.length * ROW + 24;
  return html`<svg class="gantt" viewBox=${`0 0 ${WIDTH} ${height}`} role="img"
      aria-label="pod lifetimes">
    ${bars.map((bar, i) => {
      const y = i * ROW + 4;
      const created = parse(bar.created) ?? start;
      const began = parse(bar.started);
      const finished = parse(bar.ended) ?? parse(bar.deleted) ?? now;
      const previous = bar.previous && parse(bar.previous.started) !== null ? bar.previous : null;
      const title = [
        `${bar.pod} (${bar.replica}): ${bar.phase}`,
        bar.restarts ? `${bar.restarts} restart(s)` : "",
        bar.exitCode !== null && bar.exitCode !== undefined ? `exit code ${bar.exitCode}` : "",
        bar.deleted ? "deleted" : "",
      ].filter(Boolean).join(", ");
      return html`<g class="gantt-row" data-pod=${bar.pod}>
        <text x="4" y=${y + 14} class="gantt-label">${bar.replica} · ${bar.pod}</text>
        <rect x=${x(created)} y=${y} width=${Math.max(2, x(finished) - x(created))} height="16"
          class="gantt-wait"><title>${title}</title></rect>
        ${began !== null
          ? html`<rect x=${x(began)} y=${y} width=${Math.max(2, x(finished) - x(began))}
              height="16" class=${`gantt-${color(bar)}`}><title>${title}</title></rect>`
          : null}
        ${previous
          ? html`<rect x=${x(parse(previous.started))} y=${y + 3}
              width=${Math.max(2, x(parse(previous.ended) ?? finished) - x(parse(previous.started)))}
              height="10" class="gantt-previous"
              ><title>run before the restart: exit code ${previous.exitCode}</title></rect>`
          : null}
        ${bar.restarts
          ? html`<text x=${Math.min(WIDTH - 30, x(finished) + 4)} y=${y + 13} class="gantt-restarts"
              >↻${bar.restarts}</text>`
          : null}
      </g>`;
    })}
    <text x=${LABEL} y=${height - 4} class="gantt-axis">${clock(start)}</text>
    <text x=${WIDTH - 10} y=${height - 4} class="gantt-axis" text-anchor="end">${clock(end)}</text>
  </svg>`;
}

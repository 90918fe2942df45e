/**
 * The overview's history (read from Redis by the reader, see ../history.ts): processed and failed
 * runs per minute over the last hour and per day over 90 days, and per task: processed, rate,
 * failure rate and p50/p95 run time.
 */
import type { QueueHistory, TaskRow } from '../history.js';
import { count, duration, type Html, html } from '../html.js';

/** A run time read from the histogram: `< 1 ms` for the first bucket, else its upper bound. */
function runTime(ms: number | undefined): string {
  if (ms === undefined) return '–';
  return ms <= 1 ? '≤ 1 ms' : `≤ ${duration(ms)}`;
}

function taskTable(rows: readonly TaskRow[], per: string): Html {
  if (rows.length === 0) return html`<p class="empty">No runs.</p>`;
  return html`<table class="tasks"><thead><tr><th>task</th><th>processed</th><th>rate</th><th>failed</th><th>failure rate</th><th>p50</th><th>p95</th></tr></thead>
<tbody>${rows.map(
    (r) =>
      html`<tr data-task="${r.task}"><td>${r.task}</td><td class="num">${count(r.processed)}</td><td class="num">${r.rate.toFixed(r.rate < 10 ? 2 : 0)}/${per}</td><td class="num">${count(r.failed)}</td><td class="num">${(100 * r.failureRate).toFixed(1)} %</td><td class="num">${runTime(r.p50)}</td><td class="num">${runTime(r.p95)}</td></tr>`,
  )}</tbody></table>`;
}

/** The history sections of the overview. */
export function historySections(h: QueueHistory): Html {
  return html`<section>
<h2>Processed, last hour <small>per minute</small></h2>
<div id="rate-chart" class="chart" data-series="${JSON.stringify(h.hourSeries())}"></div>
<h3>Per task, last hour</h3>
${taskTable(h.hourTasks(), 'min')}
</section>
<section>
<h2>Processed, last 90 days <small>per day (UTC)</small></h2>
<div id="day-chart" class="chart" data-series="${JSON.stringify(h.daySeries())}"></div>
<h3>Per task, last 90 days</h3>
${taskTable(h.dayTasks(), 'day')}
</section>`;
}

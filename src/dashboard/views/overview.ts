/**
 * The overview: jobs per state, throughput now, the history (per minute over the last hour, per
 * day over 90 days, per task), executors, Redis memory and ops/s.
 */
import { JOB_STATES } from '../../queue/job.js';
import type { Tick } from '../../redis/dashboard-store.js';
import type { Page, PageContext } from '../context.js';
import { bytes, count, html } from '../html.js';
import { stateHelp, stateLegend } from '../state-help.js';
import { historySections } from './history.js';

/**
 * A queue's counts per state in lifecycle order, every known state (delayed first) with 0 when
 * the queue counts none yet, then any other state the counts hold.
 */
export function stateCounts(counts: Record<string, number>): Array<[string, number]> {
  const out: Array<[string, number]> = JOB_STATES.map((s) => [s, counts[s] ?? 0]);
  for (const [s, n] of Object.entries(counts)) if (!(JOB_STATES as readonly string[]).includes(s)) out.push([s, n]);
  return out;
}

/** The overview of the context's queue, from the shared reader's last tick (no Redis command). */
export function overview(ctx: PageContext): Page {
  const live = ctx.q.live;
  const t = live.tick;
  const counts = t?.counts ?? {};
  const last = live.point;
  return {
    title: 'Overview',
    nav: 'overview',
    main: html`<h1>Overview <small>${ctx.q.name}</small></h1>
<section class="cards" id="state-cards" data-jobs="${ctx.base}/jobs">${stateCounts(counts).map(
      ([state, n]) =>
        html`<a class="card state-${state}" href="${ctx.base}/jobs?state=${encodeURIComponent(state)}" title="${stateHelp(state)}"><span>${state}</span><b data-count="${state}">${count(n)}</b></a>`,
    )}</section>
${stateLegend()}
<section>
<h2>Throughput now</h2>
<p class="rates">submitted <b id="rate-submitted">${last ? last[1].toFixed(1) : '–'}</b>/s · finished <b id="rate-finished">${last ? last[2].toFixed(1) : '–'}</b>/s</p>
</section>
${historySections(live.history)}
<section class="cards">
<a class="card" href="${ctx.base}/executors"><span>executors</span><b id="executors">${t ? count(t.liveExecutors) : '–'}</b></a>
<a class="card" href="${ctx.base}/executors"><span>slots busy</span><b id="slots">${t ? slotsBusy(t) : '–'}</b></a>
<div class="card"><span>Redis memory</span><b id="redis-memory">${t?.server ? bytes(t.server.usedMemory) : '–'}</b></div>
<div class="card"><span>Redis ops/s</span><b id="redis-ops">${t?.server ? count(t.server.opsPerSec) : '–'}</b></div>
</section>`,
  };
}

/**
 * Busy slots of the live executors, as `busy / slots`: the jobs taken and not finished (scheduled
 * or running, from the counts: an executor's own count is as of its last heartbeat) over the
 * executors' concurrency.
 */
export function slotsBusy(t: Tick): string {
  let slots = 0;
  for (const e of t.executors) slots += Number(e.info.concurrency) || 0;
  return `${count((t.counts.scheduled ?? 0) + (t.counts.running ?? 0))} / ${count(slots)}`;
}

/** The root of a dashboard of several queues: each queue's counts (from the reader's ticks). */
export function queueIndex(root: string, handles: Array<{ name: string; counts: Record<string, number> }>): Page {
  return {
    title: 'Queues',
    nav: 'overview',
    main: html`<h1>Queues</h1>
<table><thead><tr><th>queue</th><th>jobs per state</th></tr></thead><tbody>${handles.map(
      (h) =>
        html`<tr><td><a href="${root}/q/${encodeURIComponent(h.name)}/">${h.name}</a></td><td>${stateCounts(h.counts).map(
          ([s, n]) => html`<span class="state state-${s}">${s} ${count(n)}</span> `,
        )}</td></tr>`,
    )}</tbody></table>`,
  };
}

/**
 * The executors page: the live executors from the shared reader's last tick, each with its Rota
 * version, its tasks (the handler names it registered), its concurrency and the jobs it runs
 * (read from the runs in progress, at most MAX_RUNS a shard, so a request's work is bounded).
 */
import type { ExecutorRun } from '../../redis/dashboard-detail-store.js';
import { unpackDescription } from '../../redis/job-codec.js';
import type { Page, PageContext } from '../context.js';
import { ago, count, html } from '../html.js';

/** Runs in progress read at most per shard. */
export const MAX_RUNS = 2000;
/** Jobs listed at most per executor. */
const RUNS_SHOWN = 25;

function taskOf(run: ExecutorRun): string {
  try {
    return String(unpackDescription(run.d).task ?? '');
  } catch {
    return '?';
  }
}

export async function executors(ctx: PageContext): Promise<Page> {
  const t = ctx.q.live.tick;
  const list = t?.executors ?? [];
  const reads = await Promise.all(ctx.q.live.stores.map((s) => s.detail.executorRuns(MAX_RUNS)));
  // (the server's time of this read: a run may have started after the last tick)
  const now = Math.max(t?.now ?? 0, ...reads.map((r) => r.now));
  const byWorker = new Map<string, ExecutorRun[]>();
  let total = 0;
  let read = 0;
  for (const r of reads) {
    total += r.total;
    read += r.runs.length;
    for (const run of r.runs) {
      const mine = byWorker.get(run.worker);
      if (mine) mine.push(run);
      else byWorker.set(run.worker, [run]);
    }
  }
  const text = (v: unknown) => (v === undefined || v === null ? '' : String(v));
  return {
    title: 'Executors',
    nav: 'executors',
    main: html`<h1>Executors <small>${t ? t.liveExecutors : 0} live · ${count(total)} runs in progress</small></h1>
<table class="executors"><thead><tr><th>id</th><th>host</th><th>pid</th><th>version</th><th>tasks</th><th title="concurrency: the runs it takes at most at once">slots</th><th title="runs in progress, as of its last heartbeat">running</th><th>started</th><th>last heartbeat</th></tr></thead>
<tbody>${list.map((e) => {
      const ttl = Number(e.info.ttlMs);
      const tasks = Array.isArray(e.info.tasks) ? e.info.tasks.map(text) : [];
      const more = Number(e.info.moreTasks) || 0;
      const runs = byWorker.get(e.id) ?? [];
      return html`<tr data-executor="${e.id}"><td class="mono">${e.id}</td><td>${text(e.info.host)}</td><td>${text(e.info.pid)}</td><td class="version">${text(e.info.version) || '–'}</td>
<td class="tasks">${tasks.length ? tasks.map((name, i) => html`${i ? ', ' : ''}<span class="task">${name}</span>`) : '–'}${more ? html` <small>and ${count(more)} more</small>` : ''}</td>
<td class="num">${text(e.info.concurrency)}</td><td class="num">${text(e.info.running)}</td><td>${ago(Number(e.info.started) || undefined, now)}</td><td>${Number.isFinite(ttl) ? ago(e.expiry - ttl, now) : html`registration expires ${ago(e.expiry, now)}`}</td></tr>
<tr class="executor-runs"><td colspan="9">${
        runs.length
          ? html`<ul class="runs">${runs
              .slice(0, RUNS_SHOWN)
              .map(
                (r) =>
                  html`<li><a class="mono" href="${ctx.base}/jobs/${encodeURIComponent(r.id)}">${r.id}</a> <span class="task">${taskOf(r)}</span> · ${r.group} · <span class="state state-${r.state}">${r.state}</span>${r.started !== undefined ? html` · started ${ago(r.started, now)}` : ''}</li>`,
              )}</ul>${runs.length > RUNS_SHOWN ? html`<small>and ${count(runs.length - RUNS_SHOWN)} more</small>` : ''}`
          : html`<span class="muted">no job running</span>`
      }</td></tr>`;
    })}</tbody></table>
${list.length === 0 ? html`<p class="empty">No live executor.</p>` : ''}
${read < total ? html`<p class="muted">The first ${count(read)} of ${count(total)} runs in progress are shown by executor.</p>` : ''}`,
  };
}

/**
 * The executors page: the live executors from the shared reader's last tick, each with its Rota
 * version, its tasks (the handler names it registered), its concurrency and the jobs it runs
 * (read from the runs in progress, at most MAX_RUNS a shard, so a request's work is bounded);
 * then the scheduler replicas, each with its host, pid, start, last beat, claims and lateness (at
 * most MAX_REPLICAS of them, PeriodicTasks.replicas).
 */
import type { SchedulerReplica } from '../../periodic/tasks.js';
import type { ExecutorRun } from '../../redis/dashboard-detail-store.js';
import { unpackDescription } from '../../redis/job-codec.js';
import type { Page, PageContext } from '../context.js';
import { ago, count, html, name } from '../html.js';

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

const late = (v: number | null) => (v === null ? '–' : `${v} ms`);
const shown = (v: number | null) => (v === null ? '–' : count(v));

/** The scheduler replicas' section. */
function replicasSection(r: { now: number; total: number; replicas: SchedulerReplica[] }) {
  return html`<h2 id="schedulers">Scheduler replicas <small>${count(r.total)} live</small></h2>
<table class="replicas"><thead><tr><th>id</th><th>host</th><th>pid</th><th>version</th><th>started</th><th>last beat</th><th title="tasks claimed and not committed yet, at its last beat">claims held</th><th title="tasks it claimed since it started">claimed</th><th title="occurrences its releases submitted since it started">released</th><th title="how long after the occurrence its last release ran">lateness</th><th title="the largest lateness within the last minute">max 1 min</th></tr></thead>
<tbody>${r.replicas.map(
    (p) =>
      html`<tr data-replica="${p.id}"><td class="mono">${name(p.id)}</td><td>${p.host === null ? '–' : name(p.host)}</td><td>${p.pid ?? '–'}</td><td class="version">${p.version ?? '–'}</td><td>${ago(p.started ?? undefined, r.now)}</td><td>${ago(p.lastBeat ?? undefined, r.now)}</td><td class="num">${shown(p.claims)}</td><td class="num">${shown(p.claimed)}</td><td class="num">${shown(p.released)}</td><td class="num">${late(p.lateMs)}</td><td class="num">${late(p.maxLateMs)}</td></tr>`,
  )}</tbody></table>
${r.total === 0 ? html`<p class="empty">No live scheduler replica: nothing submits the periodic tasks' runs.</p>` : ''}
${r.replicas.length < r.total ? html`<p class="muted">${count(r.replicas.length)} of ${count(r.total)} replicas are shown.</p>` : ''}`;
}

export async function executors(ctx: PageContext): Promise<Page> {
  const t = ctx.q.live.tick;
  const list = t?.executors ?? [];
  const [reads, replicas] = await Promise.all([
    Promise.all(ctx.q.live.stores.map((s) => s.detail.executorRuns(MAX_RUNS))),
    ctx.q.periodic.replicas(),
  ]);
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
<table class="executors"><thead><tr><th>id</th><th>host</th><th>pid</th><th>version</th><th>tasks</th><th title="concurrency: the runs it takes at most at once">slots</th><th title="runs it holds now (from the leases)">running</th><th>started</th><th>last heartbeat</th></tr></thead>
<tbody>${list.map((e) => {
      const ttl = Number(e.info.ttlMs);
      const tasks = Array.isArray(e.info.tasks) ? e.info.tasks.map(text) : [];
      const more = Number(e.info.moreTasks) || 0;
      const runs = byWorker.get(e.id) ?? [];
      return html`<tr data-executor="${e.id}"><td class="mono">${name(e.id)}</td><td>${name(text(e.info.host))}</td><td>${text(e.info.pid)}</td><td class="version">${text(e.info.version) || '–'}</td>
<td class="tasks">${tasks.length ? tasks.map((task, i) => html`${i ? ', ' : ''}<span class="task">${name(task)}</span>`) : '–'}${more ? html` <small>and ${count(more)} more</small>` : ''}</td>
<td class="num">${text(e.info.concurrency)}</td><td class="num">${read < total ? Math.max(runs.length, Number(e.info.running) || 0) : runs.length}</td><td>${ago(Number(e.info.started) || undefined, now)}</td><td>${Number.isFinite(ttl) ? ago(e.expiry - ttl, now) : html`registration expires ${ago(e.expiry, now)}`}</td></tr>
<tr class="executor-runs"><td colspan="9">${
        runs.length
          ? html`<ul class="runs">${runs
              .slice(0, RUNS_SHOWN)
              .map(
                (r) =>
                  html`<li><a class="mono" href="${ctx.base}/jobs/${encodeURIComponent(r.id)}">${r.id}</a> <span class="task">${name(taskOf(r))}</span> · ${name(r.group)} · <span class="state state-${r.state}">${r.state}</span>${r.started !== undefined ? html` · started ${ago(r.started, now)}` : ''}</li>`,
              )}</ul>${runs.length > RUNS_SHOWN ? html`<small>and ${count(runs.length - RUNS_SHOWN)} more</small>` : ''}`
          : html`<span class="muted">no job running</span>`
      }</td></tr>`;
    })}</tbody></table>
${list.length === 0 ? html`<p class="empty">No live executor.</p>` : ''}
${read < total ? html`<p class="muted">The first ${count(read)} of ${count(total)} runs in progress are shown by executor.</p>` : ''}
${replicasSection(replicas)}`,
  };
}

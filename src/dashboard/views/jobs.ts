/**
 * The jobs pages: the list (filter by state, group and task; find by id; paged) and a job's
 * detail (args, result, error with stack, log lines, progress, retries, timeline, executor),
 * its attempts, with the job actions (./job-actions.ts) and retry of every failed job matching the filter.
 */
import { type BatchStatus, batchOfJob } from '../../queue/batch.js';
import { JOB_STATES } from '../../queue/job.js';
import type { JobTreeNode } from '../../queue/queue.js';
import { type ChildCounts, type Job, unpackDescription } from '../../redis/job-codec.js';
import type { Page, PageContext } from '../context.js';
import { ago, count, counted, type Html, html, name, pretty, time } from '../html.js';
import { isFirstPage, readJobs } from '../shards.js';
import { stateHelp, stateLegend } from '../state-help.js';
import { attemptsTable } from './attempts.js';
import { childrenWaitSection } from './children-wait.js';
import { bulkForm, cleanForm, jobButtons, rowBox, selectable } from './job-actions.js';
import { jobWaitSection } from './job-wait.js';
import { actionButton } from './layout.js';
import { pageOf } from './paging.js';

/** Candidates a list page reads at most (a filter that matches few jobs shows "more may exist"). */
export const MAX_READ = 2000;

/** The states the list offers: those the queue counts (a new state shows without code), then the known ones. */
function states(ctx: PageContext): string[] {
  const counted = Object.keys(ctx.q.live.tick?.counts ?? {});
  return [...new Set([...JOB_STATES, ...counted])];
}

export async function jobList(ctx: PageContext): Promise<Page> {
  const q = ctx.query;
  const state = q.get('state') || 'waiting';
  const group = q.get('group') ?? '';
  const task = q.get('task') ?? '';
  const { limit } = pageOf(q);
  const start = q.get('start') ?? '';
  const read = await readJobs(ctx.q.live, {
    state,
    group: group || undefined,
    task: task || undefined,
    start,
    limit,
    maxRead: MAX_READ,
  });
  const counts = ctx.q.live.tick?.counts ?? {};
  const now = ctx.q.live.tick?.now ?? Date.now();
  const tab = (s: string) => {
    const p = new URLSearchParams(q);
    p.set('state', s);
    p.delete('start');
    return html`<a href="${ctx.base}/jobs?${p}" class="tab state-${s}${s === state ? ' current' : ''}" title="${stateHelp(s)}">${s} <b data-count="${s}">${count(counts[s] ?? 0)}</b></a>`;
  };
  const filtered = group !== '' || task !== '';
  // Delayed and stuck jobs wait for a time: the list shows it (runAt, or the retry's due time).
  const dueColumn = state === 'delayed' || state === 'stuck';
  const boxes = selectable(ctx, state);
  return {
    title: 'Jobs',
    nav: 'jobs',
    main: html`<h1>Jobs</h1>
<nav class="tabs">${states(ctx).map(tab)}</nav>
${stateLegend()}
<div class="toolbar">
<form method="get" action="${ctx.base}/jobs" class="filters"><input type="hidden" name="state" value="${state}">
<label>group <input name="group" value="${group}"></label><label>task <input name="task" value="${task}"></label><button type="submit">Filter</button>${filtered ? html` <a href="${ctx.base}/jobs?state=${encodeURIComponent(state)}">clear</a>` : ''}</form>
<form method="get" action="${ctx.base}/jobs" class="filters find"><label>job id <input name="id" required></label><button type="submit">Find</button></form>
${state === 'failed' && !ctx.readOnly ? actionButton(ctx, 'jobs/retry-failed', filtered ? 'Retry all failed jobs matching the filter' : 'Retry all failed jobs', { group, task }, 'Retry every failed job that matches the filter?') : ''}
${cleanForm(ctx, state, group)}
</div>
${
  read.listable
    ? bulkForm(
        ctx,
        { state, group, task },
        read.jobs.map((j) => j.id),
        filtered ? undefined : counts[state],
      )
    : ''
}
${
  read.listable
    ? html`<table class="jobs"><thead><tr><th>id</th><th>task</th><th>group</th><th>state</th><th>submitted</th><th>started</th><th>finished</th>${dueColumn ? html`<th>due</th>` : ''}<th>progress</th><th>retries</th><th>error</th>${boxes ? html`<th class="select">select</th>` : ''}</tr></thead>
<tbody>${read.jobs.map((j) => {
        let taskName = '';
        try {
          taskName = String(unpackDescription(j.d).task ?? '');
        } catch {
          taskName = '?';
        }
        return html`<tr><td class="mono"><a href="${ctx.base}/jobs/${encodeURIComponent(j.id)}">${j.id}</a></td><td>${name(taskName)}</td><td>${name(j.group)}</td><td><span class="state state-${j.state}" title="${stateHelp(j.state)}">${j.state}</span></td>
<td>${ago(j.submitted, now)}</td><td>${ago(j.started, now)}</td><td>${ago(j.finished, now)}</td>${dueColumn ? html`<td class="due">${ago(j.runAt ?? j.due, now)}</td>` : ''}<td class="num">${j.progress ?? '–'}</td><td class="num">${j.retries}</td><td class="error">${j.error ? j.error.split('\n')[0] : ''}</td>${boxes ? rowBox(j.id) : ''}</tr>`;
      })}</tbody></table>
${read.jobs.length === 0 ? html`<p class="empty">No ${state} job${filtered ? ' matches the filter' : ''}${read.more ? ` among the ${count(read.looked)} looked at; the next page looks further` : ''}.</p>` : ''}
${pager(ctx, start, read.next, read.more)}`
    : html`<p class="empty">Jobs in state “${state}” cannot be listed here; find one by its id.</p>`
}`,
  };
}

/** A job's dedup key, what it holds for, and until when (see docs/jobs.md, Deduplication). */
function dedupLine(job: Job, now: number): Html {
  const holds = job.dedupUntil === 'start' ? 'until it starts' : job.dedupUntil === 'ttl' ? 'for its TTL' : 'until it ends';
  return html`<span class="mono dedup-key">${job.dedupKey ?? ''}</span> (held ${holds}${job.dedupExpires !== undefined ? html`, at most until ${time(job.dedupExpires)} (${ago(job.dedupExpires, now)})` : ''})`;
}

/**
 * A fan-out parent's children by state, each count linking to the jobs list of that state (its
 * children's ids are `<parent>/<index>`, so they are found by id from the parent's page).
 */
function childCounts(ctx: PageContext, parent: string, c: ChildCounts): Html {
  const part = (label: string, n: number) => html`<span class="child-count">${label} <b>${count(n)}</b></span> `;
  return html`<span class="children" data-children="${parent}">${part('total', c.total)}${part('waiting', c.waiting)}${part('running', c.running)}${part('success', c.success)}${part('failed', c.failed)}${part('cancelled', c.cancelled)}${c.ended !== undefined ? html`<span class="child-count">all ended ${time(c.ended)}</span>` : ''}</span>${c.total > 0 ? html` <a href="${ctx.base}/jobs/${encodeURIComponent(`${parent}/0`)}">first child</a>` : ''}`;
}

/** A batch's id, state and counts (its job page row); the id alone when the batch is gone. */
function batchLine(id: string, b: BatchStatus | null): Html {
  if (!b) return html`<span class="mono">${id}</span> <span class="muted">(gone)</span>`;
  return html`<span class="mono" data-batch="${id}">${id}</span> ${b.state}: ${count(b.total)} jobs, ${count(b.pending)} pending, ${count(b.success)} success, ${count(b.failed)} failed, ${count(b.cancelled)} cancelled`;
}

/** Children a job page lists (its flow section). */
const FLOW_ROWS = 50;

/**
 * A child's id, linking to its job page: this queue's, or, for a flow's child in another queue,
 * that queue's when the dashboard shows it (the id and the queue's name alone when not).
 */
function childLink(ctx: PageContext, c: JobTreeNode): Html {
  const id = encodeURIComponent(c.job.id);
  if (c.queue === undefined) return html`<a href="${ctx.base}/jobs/${id}">${c.job.id}</a>`;
  const queue = html` <span class="muted child-queue">in queue ${c.queue}</span>`;
  if (!ctx.queues.includes(c.queue)) return html`${c.job.id}${queue}`;
  return html`<a href="${ctx.root}/q/${encodeURIComponent(c.queue)}/jobs/${id}">${c.job.id}</a>${queue}`;
}

/** A job's children (the first {@link FLOW_ROWS}) and its continuation: id (a link), task, state. */
function flowSection(ctx: PageContext, tree: JobTreeNode): Html {
  const rows = (tree.children ?? [])
    .slice(0, FLOW_ROWS)
    .map(
      (c) =>
        html`<tr><td class="mono">${childLink(ctx, c)}</td><td>${c.job.task}</td><td><span class="state state-${c.job.state}" title="${stateHelp(c.job.state)}">${c.job.state}</span></td></tr>`,
    );
  const more = (tree.children?.length ?? 0) > FLOW_ROWS || tree.more;
  return html`<h2>Flow</h2><table class="flow"><thead><tr><th>child</th><th>task</th><th>state</th></tr></thead><tbody>${rows}</tbody></table>${more ? html`<p class="muted">Only the first ${count(FLOW_ROWS)} are listed; the CLI's <code>rota job &lt;id&gt; --tree</code> prints more.</p>` : ''}`;
}

/** Links to the first and the next page of a job list (a page starts at a candidate position, one per shard). */
function pager(ctx: PageContext, start: string, next: string, more: boolean): Html {
  const link = (to: string, label: string) => {
    const p = new URLSearchParams(ctx.query);
    if (!isFirstPage(to)) p.set('start', to);
    else p.delete('start');
    return html`<a href="${ctx.base}/jobs?${p}">${label}</a>`;
  };
  return html`<nav class="pager">${!isFirstPage(start) ? link('', '« first page') : ''}${more ? link(next, 'next →') : ''}</nav>`;
}

export async function jobDetail(ctx: PageContext, id: string): Promise<Page> {
  const [job, logs] = await Promise.all([ctx.q.queue.getJob(id), ctx.q.queue.jobLogs(id)]);
  const now = ctx.q.live.tick?.now ?? Date.now();
  if (!job) {
    return {
      title: 'Job',
      nav: 'jobs',
      main: html`<h1>Job <span class="mono">${id}</span></h1><p class="empty">No such job (never submitted, or removed by retention).</p>`,
    };
  }
  const error = job.error ?? '';
  const row = (label: string, value: unknown) => html`<tr><th>${label}</th><td>${value as string}</td></tr>`;
  const waits = job.state === 'waiting' ? await jobWaitSection(ctx, job.id, job.group, job.priority) : '';
  // (a flow's parent, a fan-out: its first children, one pipelined read of at most FLOW_ROWS jobs)
  const tree = job.children || job.continuation ? await ctx.q.queue.jobTree(job.id, FLOW_ROWS + 1) : null;
  const waitsForChildren = job.state === 'waiting-children' ? await childrenWaitSection(ctx, job, tree) : '';
  // (a batch's job or callback: its batch's counts, one HMGET)
  const batchId = batchOfJob(job);
  const batch = batchId === undefined ? null : await ctx.q.queue.batch(batchId).catch(() => null);
  return {
    title: `Job ${id}`,
    nav: 'jobs',
    main: html`<h1>Job <span class="mono">${job.id}</span> <span class="state state-${job.state}" title="${stateHelp(job.state)}">${job.state}</span></h1>
<div class="toolbar">${jobButtons(ctx, job)}</div>
<table class="fields">
${row('task', job.task)}
${row('group', html`<a href="${ctx.base}/groups?group=${encodeURIComponent(job.group)}">${job.group}</a>`)}
${row('priority', job.priority)}
${row('retries', `${job.retries} of ${job.maxRetries}`)}
${row('progress', job.progress === undefined ? '–' : `${job.progress}`)}
${job.parent ? row('parent', html`<a href="${ctx.base}/jobs/${encodeURIComponent(job.parent)}">${job.parent}</a>`) : ''}
${job.children ? row('children', childCounts(ctx, job.id, job.children)) : ''}
${job.continuation ? row('continuation', html`<a href="${ctx.base}/jobs/${encodeURIComponent(job.continuation)}">${job.continuation}</a>`) : ''}
${job.failedBy ? row('failed by child', html`<a href="${ctx.base}/jobs/${encodeURIComponent(job.failedBy)}">${job.failedBy}</a>`) : ''}
${job.onFailure ? row('on failure', job.onFailure) : ''}
${batchId !== undefined ? row('batch', batchLine(batchId, batch)) : ''}
${row('executor', job.worker ?? '–')}
${job.subject ? row('subject', job.subject) : ''}${job.submitter ? row('submitter', job.submitter) : ''}
${job.tracker ? row('periodic task', html`<a href="${ctx.base}/periodic/${encodeURIComponent(job.tracker)}">${job.tracker}</a>`) : ''}
${job.maxRuntime ? row('max runtime', `${job.maxRuntime} ms`) : ''}
${job.dedupKey !== undefined ? row('dedup key', dedupLine(job, now)) : ''}
</table>
<h2>Timeline</h2>
<ol class="timeline">
${job.occurrence !== undefined ? html`<li><b>planned</b> ${time(job.occurrence)}</li>` : ''}
<li><b>submitted</b> ${time(job.submitted)} (${ago(job.submitted, now)})</li>
${job.runAt !== undefined ? html`<li class="run-at"><b>${job.state === 'delayed' ? 'delayed until' : 'due'}</b> ${time(job.runAt)} (${ago(job.runAt, now)})</li>` : ''}
${job.started !== undefined ? html`<li><b>started</b> ${time(job.started)} (waited ${String(job.started - Math.max(job.submitted, job.runAt ?? 0))} ms)</li>` : ''}
${job.due !== undefined ? html`<li><b>retry due</b> ${time(job.due)}</li>` : ''}
${job.finished !== undefined ? html`<li><b>finished</b> ${time(job.finished)}${job.started !== undefined ? ` (ran ${job.finished - job.started} ms)` : ''}</li>` : ''}
</ol>
${waits}
${waitsForChildren}
${tree?.children?.length ? flowSection(ctx, tree) : ''}
<h2>Args</h2><pre class="args">${pretty(job.args)}</pre>
${job.result !== undefined ? html`<h2>Result</h2><pre class="result">${pretty(job.result)}</pre>` : ''}
${error ? html`<h2>Error</h2><pre class="error">${error}</pre>` : ''}
<h2>Attempts <small>${counted(job.attempts?.length ?? 0, 'run')}</small></h2>
${attemptsTable(job.attempts ?? [])}
<h2>Log <small>${counted(logs.length, 'line')}</small></h2>
${logs.length ? html`<pre class="logs">${logs.join('\n')}</pre>` : html`<p class="empty">No log lines.</p>`}`,
  };
}

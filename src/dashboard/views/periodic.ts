/**
 * The periodic pages: the tasks a page at a time (paged through the task index by SSCAN, so a
 * page costs the same at any number of tasks), each with its timer as written and normalized,
 * its next 5 runs in its zone and the status of its last run; enable, disable and trigger; the
 * upcoming runs of all tasks on a timeline; the event rules (the first MOST_RULES); and a task's
 * page with its whole run history.
 */
import type { PeriodicTask } from '../../periodic/definition.js';
import { ruleOwner } from '../../periodic/rules.js';
import { describeControls, nextRuns, scheduleOf, scheduleTimer } from '../../periodic/schedule.js';
import type { RunRecord } from '../../periodic/tasks.js';
import type { Timer } from '../../timers/index.js';
import { zoneOffset } from '../../timers/zone.js';
import type { Page, PageContext } from '../context.js';
import { ago, count, counted, duration, type Html, html, name, pretty, time } from '../html.js';
import { actionButton } from './layout.js';
import { scanPage } from './scan-page.js';

/**
 * Runs shown on a task's page at first; "more" doubles it, up to the most (each run shown costs
 * two reads: its job and its log lines).
 */
const RUNS_PAGE = 100;
const MOST_RUNS = 1000;
/** Upcoming runs on the timeline. */
const UPCOMING = 40;
/** Tasks read by next run for the event rules' soonest pending runs. */
const SOONEST = 200;
/**
 * Tasks a page shows by default, and at most (`limit`). Reading a task costs up to some 26
 * commands (its hash, last job and held run; for a task without a recorded last job, its newest
 * 20 runs' states), so a page of 100 stays within the per-request budget.
 */
export const TASKS_PAGE = 50;
export const MOST_TASKS_PAGE = 100;
/** Event rules shown at most (each costs two reads). */
export const MOST_RULES = 100;

/** Timers parsed, by spec and zone (parsing a calendar timer is not free; tasks keep theirs). */
const parsed = new Map<string, Timer | string>();

/** The timer parsed, or the reason it does not parse. */
function timerOf(t: PeriodicTask): Timer | string {
  const schedule = scheduleOf(t);
  const key = `${t.timezone ?? ''}\n${JSON.stringify(schedule)}`;
  let timer = parsed.get(key);
  if (timer === undefined) {
    try {
      timer = scheduleTimer(schedule, t.timezone);
    } catch (err) {
      timer = (err as Error).message;
    }
    if (parsed.size >= 1000) parsed.clear();
    parsed.set(key, timer);
  }
  return timer;
}

/** A time in a zone, as `YYYY-MM-DD HH:MM:SS zone`. */
export function zoned(ms: number, zone: string | undefined): string {
  const tz = zone ?? 'UTC';
  try {
    const wall = new Date(ms + zoneOffset(tz, Math.floor(ms / 1000)) * 1000).toISOString();
    return `${wall.slice(0, 10)} ${wall.slice(11, 19)} ${tz}`;
  } catch {
    return time(ms);
  }
}

/** The next `n` runs of a task from its planned next occurrence (excluded stretches jumped over, within its limit). */
function nextRunsOf(t: PeriodicTask, timer: Timer, n: number): number[] {
  return t.nextrun === undefined ? [] : nextRuns(timer, t.nextrun, n, t.runs ?? 0);
}

/** A task's timer spec (or specs) as written. */
function specs(t: PeriodicTask): string {
  return Array.isArray(t.timer) ? t.timer.join(' | ') : t.timer;
}

/** A task's schedule controls (exclusions, bounds, limit, jitter, immediately), one line, or ''. */
function controls(t: PeriodicTask): Html | string {
  const c = describeControls(t);
  return c.length ? html`<br><small class="controls">${c.join('; ')}</small>` : '';
}

/** Whether a task is enabled, disabled, or ended (no occurrence left). */
function enabledCell(t: PeriodicTask): Html | string {
  if (t.ended) return html`<span class="status status-ended">ended</span>`;
  return t.enabled ? 'yes' : html`<span class="paused">no</span>${t.note ? html`<br><small class="note">${t.note}</small>` : ''}`;
}

/**
 * What a run's history says of an event rule's newer event: a run it replaced before release
 * (status `replaced`), or one released before the newer event came, which ran all the same.
 */
function replaced(r: RunRecord): Html | string {
  if (r.replacedBy === undefined) return '';
  return r.status === 'replaced'
    ? html`<br><small class="replaced-by">by the run planned for ${time(r.replacedBy)}</small>`
    : html`<br><small class="replaced-by">a newer event planned ${time(r.replacedBy)}; this run was released already</small>`;
}

/** The event rule of a pending run's task id (`r:<rule>:<hash of the subject>`, see pendingId), or undefined. */
function ruleOf(id: string): string | undefined {
  return /^r:(.+):[0-9a-f]{20}$/.exec(id)?.[1];
}

function status(s: string | undefined): Html {
  return s ? html`<span class="status status-${s}">${s}</span>` : html`<span class="status">never ran</span>`;
}

/** The first MOST_RULES event rules by a scan of their index, sorted by id. */
async function someRules(p: PageContext['q']['periodic']) {
  const { ids } = await scanPage((cursor, n) => p.reads.scanRuleIds(cursor, n), null, MOST_RULES);
  const rules = await Promise.all(ids.sort().map((id) => p.getRule(id)));
  return rules.filter((r) => r !== null);
}

export async function periodicList(ctx: PageContext): Promise<Page> {
  const p = ctx.q.periodic;
  const asked = Math.floor(Number(ctx.query.get('limit') ?? TASKS_PAGE)) || TASKS_PAGE;
  const limit = Math.min(MOST_TASKS_PAGE, Math.max(1, asked));
  const start = ctx.query.get('start');
  // (a page of the task index; the soonest tasks by next run, one entry each, for the event
  // rules' pending runs; the upcoming runs of every task, as PeriodicTasks.upcoming reads them)
  const [page, total, rules, ruleTotal, soonest, upcoming] = await Promise.all([
    scanPage((cursor, n) => p.reads.scanTaskIds(cursor, n), start, limit),
    p.reads.taskCount(),
    someRules(p),
    p.reads.ruleCount(),
    p.reads.soonest(SOONEST),
    p.upcoming({ limit: UPCOMING }),
  ]);
  const tasks = await p.byIds(page.ids);
  // (a task's runs are in the home shard, which the periodic reads read; an event rule's pending
  // runs are counted, never read all: there is one per subject)
  const lastIds = tasks.map((t) => t.lastJobId);
  const [states, pending] = await Promise.all([
    p.reads.jobStates(lastIds.filter((id): id is string => !!id)),
    p.reads.ownerSizes(rules.map((r) => ruleOwner(r.id))),
  ]);
  let k = 0;
  const lastState = lastIds.map((id) => (id ? (states[k++] ?? 'expired') : undefined));
  const now = ctx.q.live.tick?.now ?? Date.now();
  const next = tasks.map((t) => {
    const timer = timerOf(t);
    return typeof timer === 'string' ? [] : nextRunsOf(t, timer, 5);
  });
  // The event rules' soonest pending runs (due time: their score).
  const ruleById = new Map(rules.map((r) => [r.id, r]));
  const pendingRuns: Array<{ id: string; task: string; group: string; occurrence: number; rule: string }> = [];
  for (const { id, score } of soonest) {
    const rule = ruleById.get(ruleOf(id) ?? '');
    if (rule) pendingRuns.push({ id, task: rule.task, group: rule.group ?? '', occurrence: score, rule: rule.id });
  }
  const timelineRuns = upcoming.map((u) => ({ ...u, rule: ruleOf(u.id) }));
  const more =
    page.next === undefined
      ? ''
      : html`<nav class="pager"><a href="${ctx.base}/periodic?${new URLSearchParams({ start: page.next, limit: String(limit) })}">next →</a></nav>`;
  return {
    title: 'Periodic',
    nav: 'periodic',
    main: html`<h1>Periodic tasks <small>${count(total)}</small></h1>
<form method="get" action="${ctx.base}/periodic" class="filters find"><label>task id <input name="id" required></label><button type="submit">Find</button></form>
${total > tasks.length ? html`<p class="muted page-of">${count(tasks.length)} tasks on this page (in the order of the task index, each page sorted by id).</p>` : ''}
<table class="periodic"><thead><tr><th>id</th><th>task</th><th>timer</th><th>normalized</th><th>zone</th><th>next 5 runs</th><th>last run</th><th>enabled</th><th></th></tr></thead>
<tbody>${tasks.map((t, i) => {
      const timer = timerOf(t);
      const zone = typeof timer === 'string' ? t.timezone : (timer.timezone ?? t.timezone);
      return html`<tr data-task="${t.id}"><td><a href="${ctx.base}/periodic/${encodeURIComponent(t.id)}">${name(t.id)}</a></td><td>${name(t.task)}</td>
<td class="mono">${specs(t)}${controls(t)}</td><td class="mono">${typeof timer === 'string' ? html`<span class="error">${timer}</span>` : timer.normalized}</td><td>${zone ?? 'UTC'}</td>
<td><ol class="next">${next[i].map((at) => html`<li>${zoned(at, zone)}</li>`)}</ol>${t.enabled ? '' : html`<span class="muted">disabled</span>`}</td>
<td>${status(lastState[i])}${t.lastrun !== undefined ? html`<br>${ago(t.lastrun, now)}` : ''}</td>
<td>${enabledCell(t)}</td>
<td class="actions">${t.enabled ? actionButton(ctx, 'periodic/disable', 'Disable', { id: t.id }) : actionButton(ctx, 'periodic/enable', 'Enable', { id: t.id })}${actionButton(ctx, 'periodic/trigger', 'Trigger', { id: t.id })}</td></tr>`;
    })}</tbody></table>
${tasks.length === 0 ? html`<p class="empty">No periodic task${start ? ' on this page' : ''}.</p>` : ''}
${more}
<h2>Upcoming</h2>
${timeline(ctx, timelineRuns, now)}
<h2>Event rules <small>${count(ruleTotal)}</small></h2>
${ruleTotal > rules.length ? html`<p class="muted">The first ${count(rules.length)} of ${count(ruleTotal)} are shown.</p>` : ''}
${
  rules.length
    ? html`<table class="rules"><thead><tr><th>id</th><th>after event</th><th>delay</th><th>task</th><th>group</th><th>args</th><th>pending runs</th></tr></thead><tbody>${rules.map(
        (r, i) => {
          const soon = pendingRuns.filter((u) => u.rule === r.id).slice(0, 3);
          return html`<tr data-rule="${r.id}"><td>${r.id}</td><td class="mono">${r.after}</td><td>${String(r.delay)} (${duration(r.delayMs)})</td><td>${name(r.task)}</td><td>${name(r.group ?? '')}</td><td><pre class="inline">${pretty(r.args)}</pre></td>
<td><span class="status status-pending" data-pending="${pending[i]}">${count(pending[i])} pending</span>${
            soon.length
              ? html`<ol class="next">${soon.map((u) => html`<li><a href="${ctx.base}/periodic/${encodeURIComponent(u.id)}">${time(u.occurrence)}</a> (${ago(u.occurrence, now)})</li>`)}</ol>`
              : ''
          }</td></tr>`;
        },
      )}</tbody></table>
<p class="muted">A pending run is planned per rule and subject; a newer event for the subject replaces it.</p>`
    : html`<p class="empty">No event rule.</p>`
}`,
  };
}

/** The upcoming runs as a list and on an SVG time axis (no inline style: the CSP forbids it). */
function timeline(
  ctx: PageContext,
  runs: Array<{ id: string; task: string; group: string; occurrence: number; rule?: string }>,
  now: number,
): Html {
  if (runs.length === 0) return html`<p class="empty">Nothing planned.</p>`;
  const end = Math.max(now + 60_000, runs.at(-1)!.occurrence);
  const span = end - now;
  const x = (at: number) => (10 + (980 * Math.max(0, at - now)) / span).toFixed(1);
  return html`<svg class="timeline" viewBox="0 0 1000 60" role="img" aria-label="upcoming runs">
<line x1="10" y1="40" x2="990" y2="40" class="axis"></line>
${runs.map((r) => html`<circle cx="${x(r.occurrence)}" cy="40" r="5" class="run"><title>${r.id} ${time(r.occurrence)}</title></circle>`)}
<text x="10" y="58" class="tick">now</text><text x="990" y="58" text-anchor="end" class="tick">in ${duration(span)}</text>
</svg>
<table class="upcoming"><thead><tr><th>when</th><th>task id</th><th>task</th><th>group</th></tr></thead><tbody>${runs.map(
    (r) =>
      html`<tr><td>${time(r.occurrence)} (${ago(r.occurrence, now)})</td><td><a href="${ctx.base}/periodic/${encodeURIComponent(r.id)}">${r.id}</a>${r.rule ? html` <small class="muted">pending run of rule ${r.rule}</small>` : ''}</td><td>${r.task}</td><td>${r.group}</td></tr>`,
  )}</tbody></table>`;
}

export async function periodicTask(ctx: PageContext, id: string): Promise<Page> {
  const p = ctx.q.periodic;
  const limit = Math.min(MOST_RUNS, Math.max(1, Number(ctx.query.get('runs')) || RUNS_PAGE));
  const [task, runs] = await Promise.all([p.get(id), p.runs(id, { limit: limit + 1 })]);
  if (!task) {
    // An event rule's run, once released, leaves its history behind its task.
    return {
      title: 'Periodic task',
      nav: 'periodic',
      main: runs.length
        ? html`<h1>Periodic task <span class="mono">${id}</span> <span class="muted">gone</span></h1>
<p class="empty">This task is gone (an event rule's run once released, or a removed task); its run history stays until it expires.</p>
${runHistory(ctx, id, runs, limit)}`
        : html`<h1>Periodic task ${id}</h1><p class="empty">No such task.</p>`,
    };
  }
  const timer = timerOf(task);
  const zone = typeof timer === 'string' ? task.timezone : (timer.timezone ?? task.timezone);
  const next = typeof timer === 'string' ? [] : nextRunsOf(task, timer, 5);
  return {
    title: `Periodic ${id}`,
    nav: 'periodic',
    main: html`<h1>Periodic task <span class="mono">${task.id}</span> ${task.enabled ? '' : html`<span class="paused">disabled</span>`}${task.ended ? html`<span class="status status-ended">ended</span>` : ''}</h1>
<div class="toolbar">${task.enabled ? actionButton(ctx, 'periodic/disable', 'Disable', { id }) : actionButton(ctx, 'periodic/enable', 'Enable', { id })}${actionButton(ctx, 'periodic/trigger', 'Trigger', { id })}</div>
<table class="fields">
<tr><th>task</th><td>${task.task}</td></tr><tr><th>group</th><td>${task.group}</td></tr>
<tr><th>timer</th><td class="mono">${specs(task)}</td></tr>
${describeControls(task).length ? html`<tr><th>schedule controls</th><td class="controls">${describeControls(task).join('; ')}</td></tr>` : ''}
<tr><th>normalized</th><td class="mono">${typeof timer === 'string' ? timer : timer.normalized}</td></tr>
<tr><th>zone</th><td>${zone ?? 'UTC'}</td></tr>
<tr><th>next runs</th><td><ol class="next">${next.map((at) => html`<li>${zoned(at, zone)}</li>`)}</ol></td></tr>
${task.subject ? html`<tr><th>subject</th><td>${task.subject}</td></tr>` : ''}
${task.rule ? html`<tr><th>event rule</th><td>${task.rule} <small class="muted">(its pending run for this subject; a newer event replaces it)</small></td></tr>` : ''}
${task.note ? html`<tr><th>note</th><td class="note">${task.note}</td></tr>` : ''}
<tr><th>overlap / catch-up</th><td>${task.overlap} / ${task.catchup}</td></tr>
${task.pauseOnFailure ? html`<tr><th>on failure</th><td>pause (disable the task)</td></tr>` : ''}
<tr><th>args</th><td><pre class="inline">${pretty(task.args)}</pre></td></tr>
</table>
${runHistory(ctx, id, runs, limit, zone)}`,
  };
}

/**
 * A task's run history table (`runs`: up to limit + 1, the one past the limit says more exist),
 * its times in the task's zone (as its next runs are; UTC for a task that is gone).
 */
function runHistory(ctx: PageContext, id: string, runs: RunRecord[], limit: number, zone?: string): Html {
  // (the zone is said once, in the heading)
  const at = (ms: number | undefined) => (ms === undefined || !Number.isFinite(ms) ? '–' : zoned(ms, zone).slice(0, 19));
  const more = runs.length > limit;
  const q = new URLSearchParams(ctx.query);
  q.set('runs', String(Math.min(MOST_RUNS, limit * 2)));
  return html`<h2>Run history <small>${runs.length > limit ? `newest ${limit}` : `${runs.length}`} · times in ${zone ?? 'UTC'}</small></h2>
<table class="runs"><thead><tr><th>planned</th><th>due</th><th>started</th><th>finished</th><th>status</th><th>worker</th><th>host</th><th>pid</th><th>log</th><th>error</th></tr></thead>
<tbody>${runs.slice(0, limit).map(
    (r) =>
      html`<tr><td>${at(r.occurrence)}${r.status === 'missed' && r.count ? html`<br><small>${r.count} missed until ${at(r.until)}</small>` : ''}</td><td>${r.due === undefined ? '' : at(r.due)}</td><td>${at(r.started)}</td><td>${at(r.finished)}</td>
<td>${r.jobId && r.status !== 'expired' ? html`<a href="${ctx.base}/jobs/${encodeURIComponent(r.jobId)}">${status(r.status)}</a>` : status(r.status)}${replaced(r)}${r.backfill ? html` <small class="backfill">backfill</small>` : ''}</td>
<td class="mono">${r.worker ?? ''}</td><td>${r.host ?? ''}</td><td>${r.pid ?? ''}</td>
<td>${r.logs?.length ? html`<details><summary>${counted(r.logs.length, 'line')}</summary><pre class="logs">${r.logs.join('\n')}</pre></details>` : ''}</td>
<td>${r.error ? html`<details><summary class="error">${r.error.split('\n')[0]}</summary><pre class="error">${r.error}</pre></details>` : ''}</td></tr>`,
  )}</tbody></table>
${runs.length === 0 ? html`<p class="empty">No run yet.</p>` : ''}
${more ? html`<p><a href="${ctx.base}/periodic/${encodeURIComponent(id)}?${q}">show more runs</a></p>` : ''}`;
}

/**
 * The dashboard's job actions beyond cancel and retry: delete and run now (promote) of one job;
 * retry, cancel, run now and delete of the jobs selected on a list, of the list's page, or of
 * every job matching its filter; and clean of a finished state. The actions that reach every job
 * of a filter, and clean, first answer a page asking to confirm (a form that posts again with
 * `confirm=yes`), so that they never rest on the page script's confirm() alone. Each answers what
 * it did, in a sentence.
 */
import { TimerSyntaxError, ValidationError } from '../errors.js';
import type { JobState } from '../queue/job.js';
import { summarize } from '../queue/job-action-summary.js';
import { ACTION_STATES, type JobAction, type JobTarget } from '../queue/job-actions.js';
import { looksLikeIsoDuration, parseHumanDuration, parseIsoDuration } from '../timers/duration.js';
import type { QueueHandle } from './context.js';
import { count, type Html, html } from './html.js';

/** Where the dashboard is mounted, for the pages an action answers. */
export interface Where {
  root: string;
  base: string;
}

/** An action's answer: its message, or a page to show instead (a confirmation). */
export type Answer = string | { page: Html };

/** An action: a POST of a form. */
export type Action = (q: QueueHandle, form: URLSearchParams, where: Where) => Promise<Answer>;

/** Most jobs one "all matching the filter" request acts on (a larger set takes several). */
export const MAX_BULK = 100_000;
/** Most ids one request names. */
const MAX_IDS = 1000;
const OPS: readonly JobAction[] = ['retry', 'cancel', 'promote', 'delete'];
/** The operator's word for each action. */
export const OP_LABELS: Readonly<Record<JobAction, string>> = {
  retry: 'Retry',
  cancel: 'Cancel',
  promote: 'Run now',
  delete: 'Delete',
};
const FINAL = ['success', 'failed', 'cancelled'] as const;

function field(form: URLSearchParams, name: string): string {
  const v = form.get(name);
  if (v === null || v === '') throw new ValidationError(name, 'is missing');
  return v;
}

function opOf(form: URLSearchParams): JobAction {
  const op = field(form, 'op');
  if (!(OPS as readonly string[]).includes(op)) throw new ValidationError('op', `must be one of ${OPS.join(', ')}`);
  return op as JobAction;
}

/** The page asking to confirm `question`: a form posting the same fields again, with `confirm=yes`. */
function confirmation(form: URLSearchParams, where: Where, title: string, question: string, yes: string): { page: Html } {
  const back = form.get('return') ?? '';
  const safeBack = back.startsWith(`${where.base}/`) && !back.startsWith('//') ? back : `${where.base}/jobs`;
  const fields = [...form].filter(([k]) => k !== 'confirm');
  return {
    page: html`<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>${title} · Rota</title><link rel="stylesheet" href="${where.root}/assets/style.css"></head>
<body><main class="confirm"><h1>${title}</h1><p class="question">${question}</p>
<form method="post" action="" class="inline">${fields.map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`)}<input type="hidden" name="confirm" value="yes"><button type="submit" class="danger" data-action="confirm">${yes}</button></form>
<a href="${safeBack}" class="cancel-confirm">No, go back</a></main></body></html>`,
  };
}

/** The filter a list's form carries: its state, and its group and task when given. */
function filterOf(form: URLSearchParams): { state: JobState; group?: string; task?: string } {
  return {
    state: field(form, 'state') as JobState,
    group: form.get('group') || undefined,
    task: form.get('task') || undefined,
  };
}

function describeFilter(f: { state: string; group?: string; task?: string }): string {
  return `${f.state} jobs${f.group !== undefined ? ` of group “${f.group}”` : ''}${f.task !== undefined ? ` of task “${f.task}”` : ''}`;
}

/** Runs `op` on `target` through the queue. */
function run(q: QueueHandle, op: JobAction, target: JobTarget) {
  if (op === 'delete') return q.queue.deleteJobs(target);
  if (op === 'promote') return q.queue.promoteJobs(target);
  if (op === 'cancel') return q.queue.cancelJobs(target);
  return q.queue.retryJobs(target);
}

/** A duration field (`30m`, `7d`, `P1D`) in ms; absent or empty: undefined. */
function durationField(form: URLSearchParams, name: string): number | undefined {
  const v = (form.get(name) ?? '').trim();
  if (v === '') return undefined;
  try {
    return looksLikeIsoDuration(v) ? parseIsoDuration(v, v, 0) : parseHumanDuration(v, v, 0);
  } catch (err) {
    if (err instanceof TimerSyntaxError) throw new ValidationError(name, `"${v}" is no duration such as 30m, 12h or 7d`);
    throw err;
  }
}

/** The job actions by path below `/actions/`. */
export const JOB_ACTIONS: Readonly<Record<string, Action>> = {
  'job/delete': async (q, f) => {
    const id = field(f, 'id');
    const r = await q.queue.deleteJob(id);
    if (r === null) return `No job ${id}.`;
    if (r === 'deleted') return `Job ${id} deleted.`;
    return `Job ${id} is ${r} and was left (cancel it, then delete it once it ended).`;
  },
  'job/promote': async (q, f) => {
    const id = field(f, 'id');
    const before = await q.queue.getJob(id);
    const r = await q.queue.promote(id);
    if (r === null) return `No job ${id}.`;
    if (r === 'waiting' && (before?.state === 'delayed' || before?.state === 'stuck'))
      return `Job ${id} runs now: it is first in line in its group.`;
    return `Job ${id} is ${r}: only delayed and stuck jobs can be run now.`;
  },
  /**
   * `op` (retry, cancel, promote, delete) on `scope`: `selected` (the `id` fields), `page` (the
   * `page` fields: the ids the list showed) or `all` (every job of the filter `state`, `group`,
   * `task`, at most MAX_BULK, after a confirmation).
   */
  'jobs/bulk': async (q, f, where) => {
    const op = opOf(f);
    const filter = filterOf(f);
    if (!ACTION_STATES[op].includes(filter.state)) {
      throw new ValidationError('op', `${OP_LABELS[op]} does not apply to ${filter.state} jobs`);
    }
    const scope = f.get('scope') ?? 'selected';
    if (scope === 'all') {
      if (f.get('confirm') !== 'yes') {
        const n = f.get('total');
        const how = n && /^\d+$/.test(n) ? `all ${count(Number(n))}` : 'all the';
        return confirmation(
          f,
          where,
          `${OP_LABELS[op]} ${describeFilter(filter)}?`,
          `${OP_LABELS[op]} ${how} ${describeFilter(filter)} (at most ${count(MAX_BULK)} in one go)? This cannot be undone.`,
          `Yes, ${OP_LABELS[op].toLowerCase()} them`,
        );
      }
      return summarize(op, await run(q, op, { ...filter, limit: MAX_BULK }));
    }
    if (scope !== 'selected' && scope !== 'page') throw new ValidationError('scope', 'must be selected, page or all');
    const ids = f.getAll(scope === 'page' ? 'page' : 'id').filter((id) => id !== '');
    if (ids.length === 0) return 'No job was selected: tick the jobs to act on, or choose this page or all matching.';
    if (ids.length > MAX_IDS) throw new ValidationError('id', `names more than ${MAX_IDS} jobs`);
    return summarize(op, await run(q, op, { ids, state: filter.state }));
  },
  /** Clean: removes the jobs of a final `state` (of `group`, finished `olderThan` ago when given), after a confirmation. */
  'jobs/clean': async (q, f, where) => {
    const state = field(f, 'state');
    if (!(FINAL as readonly string[]).includes(state)) throw new ValidationError('state', 'must be success, failed or cancelled');
    const group = f.get('group') || undefined;
    const olderThan = durationField(f, 'olderThan');
    const what = `${describeFilter({ state, group })}${olderThan !== undefined ? ` finished more than ${f.get('olderThan')} ago` : ''}`;
    if (f.get('confirm') !== 'yes') {
      return confirmation(
        f,
        where,
        `Clean ${state} jobs?`,
        `Remove every one of the ${what}, with its logs? This cannot be undone.`,
        'Yes, clean',
      );
    }
    const n = await q.queue.clean({ state: state as (typeof FINAL)[number], group, olderThan });
    return `Cleaned ${count(n)} ${state} job${n === 1 ? '' : 's'}.`;
  },
};

/**
 * The job actions' controls: a job's buttons on its page, and on the jobs list a checkbox per row,
 * the bulk form (the selected jobs, the page, or every job matching the filter) and the clean
 * form of a finished state. The actions themselves are in ../bulk.ts.
 */
import type { Job, JobState } from '../../queue/job.js';
import { ACTION_STATES, type JobAction } from '../../queue/job-actions.js';
import { MAX_BULK, OP_LABELS } from '../bulk.js';
import type { PageContext } from '../context.js';
import { count, type Html, html } from '../html.js';
import { actionButton, csrfField } from './layout.js';

const FINAL: ReadonlySet<string> = new Set(['success', 'failed', 'cancelled']);
const OPS: readonly JobAction[] = ['retry', 'cancel', 'promote', 'delete'];

/** The actions that apply to jobs in `state`. */
function opsFor(state: string): JobAction[] {
  return OPS.filter((op) => ACTION_STATES[op].includes(state as JobState));
}

/** The return path of a form: the page it is on. */
function here(ctx: PageContext): string {
  return `${ctx.base}${ctx.path}${ctx.query.size ? `?${ctx.query}` : ''}`;
}

/** A job's action buttons on its page: those its state allows. */
export function jobButtons(ctx: PageContext, job: Job): Html {
  if (ctx.readOnly) return html``;
  const id = { id: job.id };
  const list = `${ctx.base}/jobs?state=${encodeURIComponent(job.state)}`;
  return html`${!FINAL.has(job.state) ? actionButton(ctx, 'job/cancel', 'Cancel', id) : ''}${job.state === 'failed' || job.state === 'cancelled' ? actionButton(ctx, 'job/retry', 'Retry', id) : ''}${job.state === 'delayed' || job.state === 'stuck' ? actionButton(ctx, 'job/promote', 'Run now', id) : ''}${job.state !== 'scheduled' && job.state !== 'running' ? actionButton(ctx, 'job/delete', 'Delete', { ...id, return: list }, 'Delete this job and its logs?') : ''}`;
}

/** Whether the list of `state` has a checkbox per row (some action applies to its jobs). */
export function selectable(ctx: PageContext, state: string): boolean {
  return !ctx.readOnly && opsFor(state).length > 0;
}

/** A row's checkbox, part of the bulk form. */
export function rowBox(id: string): Html {
  return html`<td class="select"><input type="checkbox" name="id" value="${id}" form="bulk" aria-label="select job ${id}"></td>`;
}

/**
 * The bulk form of the list of `state`: the actions that apply to it, on the selected jobs, the
 * page's (`ids`), or all matching the filter (`total` of them, when known).
 */
export function bulkForm(
  ctx: PageContext,
  filter: { state: string; group: string; task: string },
  ids: readonly string[],
  total: number | undefined,
): Html {
  if (!selectable(ctx, filter.state)) return html``;
  const all = total === undefined ? 'all matching the filter' : `all ${count(Math.min(total, MAX_BULK))} matching the filter`;
  return html`<form id="bulk" method="post" action="${ctx.base}/actions/jobs/bulk" class="bulk inline">${csrfField(ctx)}
<input type="hidden" name="state" value="${filter.state}"><input type="hidden" name="group" value="${filter.group}"><input type="hidden" name="task" value="${filter.task}"><input type="hidden" name="return" value="${here(ctx)}">${total !== undefined ? html`<input type="hidden" name="total" value="${String(total)}">` : ''}
${ids.map((id) => html`<input type="hidden" name="page" value="${id}">`)}
<label class="select-page"><input type="checkbox" data-select-page> select page</label>
<label>on <select name="scope"><option value="selected">the selected jobs</option><option value="page">this page (${count(ids.length)})</option><option value="all">${all}</option></select></label>
${opsFor(filter.state).map((op) => html`<button type="submit" name="op" value="${op}" data-bulk="${op}">${OP_LABELS[op]}</button>`)}</form>`;
}

/** The clean form of a finished state's list: its jobs (of the filter's group), optionally finished a while ago. */
export function cleanForm(ctx: PageContext, state: string, group: string): Html {
  if (ctx.readOnly || !FINAL.has(state)) return html``;
  return html`<form method="post" action="${ctx.base}/actions/jobs/clean" class="clean inline">${csrfField(ctx)}<input type="hidden" name="state" value="${state}"><input type="hidden" name="group" value="${group}"><input type="hidden" name="return" value="${here(ctx)}">
<label>older than <input name="olderThan" placeholder="7d" size="5"></label><button type="submit" data-action="jobs/clean">Clean ${state}${group ? ' of this group' : ''}</button></form>`;
}

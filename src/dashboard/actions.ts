/**
 * The dashboard's actions, each a POST of a form: pause, resume and set a group's limit, weight
 * and rate limit; cancel and retry a job; retry every failed job matching a filter; enable, disable and
 * trigger a periodic task; and the job actions of ./bulk.ts. Each answers what it did, in a sentence.
 */
import { TimerSyntaxError, ValidationError } from '../errors.js';
import { looksLikeIsoDuration, parseHumanDuration, parseIsoDuration } from '../timers/duration.js';
import { type Action, JOB_ACTIONS } from './bulk.js';

/** Failed jobs one "retry all" retries at most. */
const MAX_RETRY_ALL = 10_000;

function field(form: URLSearchParams, name: string): string {
  const v = form.get(name);
  if (v === null || v === '') throw new ValidationError(name, 'is missing');
  return v;
}

function whole(form: URLSearchParams, name: string): number | undefined {
  const v = form.get(name);
  if (v === null || v === '') return undefined;
  if (!/^\d+$/.test(v)) throw new ValidationError(name, `must be a whole number (got "${v}")`);
  return Number(v);
}

/**
 * A rate limit field: `max/per` (`10/1s`, `600/1h`, `5/PT1M`) sets one; empty or `none` lifts it;
 * absent leaves it as it is.
 */
function rate(form: URLSearchParams): { max: number; perMs: number } | null | undefined {
  const v = form.get('rate');
  if (v === null) return undefined;
  const text = v.trim();
  if (text === '' || text === 'none') return null;
  const m = /^(\d+)\s*\/\s*(\S+)$/.exec(text);
  if (!m) throw new ValidationError('rate', `must be max/per, such as 10/1s or 600/1h, or empty for none (got "${v}")`);
  try {
    const perMs = looksLikeIsoDuration(m[2]) ? parseIsoDuration(m[2], m[2], 0) : parseHumanDuration(m[2], m[2], 0);
    return { max: Number(m[1]), perMs };
  } catch (err) {
    if (err instanceof TimerSyntaxError)
      throw new ValidationError('rate', `"${v}": the window ${m[2]} is no duration such as 1s or 5m`);
    throw err;
  }
}

/** The actions by path below `/actions/` (a Map: a path such as `constructor` or `__proto__` is no action). */
export const ACTIONS: ReadonlyMap<string, Action> = new Map(
  Object.entries({
    'group/pause': async (q, f) => {
      const g = field(f, 'group');
      await q.queue.pauseGroup(g);
      return `Group ${g} paused.`;
    },
    'group/resume': async (q, f) => {
      const g = field(f, 'group');
      await q.queue.resumeGroup(g);
      return `Group ${g} resumed.`;
    },
    'group/settings': async (q, f) => {
      const g = field(f, 'group');
      await q.queue.setGroupLimit(g, { concurrency: whole(f, 'limit'), weight: whole(f, 'weight'), rate: rate(f) });
      return `Group ${g} updated.`;
    },
    'job/cancel': async (q, f) => {
      const id = field(f, 'id');
      const r = await q.queue.cancel(id);
      return r === null ? `No job ${id}.` : `Job ${id}: ${r}.`;
    },
    'job/retry': async (q, f) => {
      const id = field(f, 'id');
      const r = await q.queue.retry(id);
      return r === null ? `No job ${id}.` : `Job ${id}: ${r}.`;
    },
    'jobs/retry-failed': async (q, f) => {
      const group = f.get('group') || undefined;
      const task = f.get('task') || undefined;
      // (in atomic steps of 500 jobs, over the shards of the group when given: see Queue.retryJobs)
      const { done: retried } = await q.queue.retryJobs({ state: 'failed', group, task, limit: MAX_RETRY_ALL });
      return `${retried} failed job${retried === 1 ? '' : 's'} retried.`;
    },
    'periodic/enable': async (q, f) => {
      const id = field(f, 'id');
      return (await q.periodic.enable(id)) ? `Task ${id} enabled.` : `No task ${id}.`;
    },
    'periodic/disable': async (q, f) => {
      const id = field(f, 'id');
      return (await q.periodic.disable(id)) ? `Task ${id} disabled.` : `No task ${id}.`;
    },
    'periodic/trigger': async (q, f) => {
      const id = field(f, 'id');
      const r = await q.periodic.trigger(id);
      return r ? `Task ${id} triggered: job ${r.jobId}.` : `No task ${id}.`;
    },
    ...JOB_ACTIONS,
  } satisfies Record<string, Action>),
);

/** What an action on many jobs did, in a sentence for the operator (the dashboard's message, the CLI's output). */
import type { BulkResult, JobAction } from './job-actions.js';

/** What was done: the words before and after the count. */
const DONE: Record<JobAction, [string, string]> = {
  delete: ['Deleted', ''],
  promote: ['Promoted', ' to the front of waiting'],
  cancel: ['Cancelled', ''],
  retry: ['Put', ' back as waiting'],
};

const n = (k: number) => k.toLocaleString('en-US');
const were = (k: number) => (k === 1 ? 'was' : 'were');

/**
 * The sentence: what was done and to how many jobs, then the jobs left by their state and the ids
 * that named no job, e.g. `Deleted 4,812 jobs; 3 were running and were left.`
 */
export function summarize(action: JobAction, r: BulkResult): string {
  const [before, after] = DONE[action];
  const parts = [`${before} ${n(r.done)} job${r.done === 1 ? '' : 's'}${after}`];
  if (r.cancelling > 0) parts.push(`${n(r.cancelling)} of them ${were(r.cancelling)} running and end once their handler stops`);
  for (const [state, k] of Object.entries(r.left)) {
    if (k) parts.push(`${n(k)} ${were(k)} ${state} and ${were(k)} left`);
  }
  if (r.missing > 0) parts.push(`${n(r.missing)} named no job`);
  if (r.more) parts.push('more may match: run it again');
  return `${parts.join('; ')}.`;
}

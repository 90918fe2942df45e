/** The job record's states and their orders; the record itself and its codec are src/redis/job-codec.ts. */
import type { JobState } from '../redis/job-codec.js';

export type { Attempt, ChildCounts, FailurePolicy, Job, JobDescription, JobState, Priority } from '../redis/job-codec.js';
export { TRACE } from '../redis/job-codec.js';

/** Every state, in lifecycle order. */
export const JOB_STATES: readonly JobState[] = [
  'delayed',
  'waiting-children',
  'waiting',
  'scheduled',
  'running',
  'stuck',
  'success',
  'failed',
  'cancelled',
];

/** States a job never leaves. */
export const FINAL_STATES: ReadonlySet<JobState> = new Set(['success', 'failed', 'cancelled']);

/**
 * The sort key of a job in a list of the jobs of a state, lower first: finished jobs newest
 * first, stuck and delayed jobs by due time. The other states have no key: their lists are in
 * take order. (The lists of a sharded queue are merged by it.)
 */
export const LIST_ORDER: Partial<
  Record<JobState, (j: { finished?: number; due?: number; runAt?: number; submitted?: number }) => number>
> = {
  success: (j) => -(j.finished ?? 0),
  failed: (j) => -(j.finished ?? 0),
  cancelled: (j) => -(j.finished ?? 0),
  stuck: (j) => j.due ?? 0,
  delayed: (j) => j.runAt ?? 0,
  'waiting-children': (j) => j.submitted ?? 0,
};

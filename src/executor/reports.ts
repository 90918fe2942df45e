/**
 * How an executor tells of a run's end: the events its listeners get, and the log lines its
 * logger gets. The delivery side reports each outcome once the queue has answered for it.
 */
import type { EventEmitter } from 'node:events';
import { LeaseLostError } from '../errors.js';
import type { Job, JobState } from '../queue/job.js';
import type { ClockJump } from '../redis/server-clock.js';
import type { JobLogger } from './options.js';
import type { RecoveredJob } from './recoverer.js';
import type { Outcome } from './run.js';

export interface WorkerEvents {
  /** A run's handler was called (a job taken but handed back, or ended before its handler ran, never starts). */
  started: [job: Job];
  /** A job ended `success`. */
  completed: [job: Job, result: unknown];
  /** A job ended `failed` (retries used up, permanent error, timeout or unknown task). */
  failed: [job: Job, error: Error];
  /** A job failed and will be retried after its backoff. */
  stuck: [job: Job, error: Error];
  /** A job ended `cancelled`. */
  cancelled: [job: Job];
  /**
   * This executor's recovery pass ended these jobs' runs as failed attempts (their lease had
   * expired, or, at its start, they were still marked with its own id): each is stuck for a
   * retry, or failed when its retries are used up. Every pass of every executor is atomic, so a
   * job's recovery is told by one executor only.
   */
  recovered: [jobs: RecoveredJob[]];
  /** A running job reported progress (ctx.progress; throttled, see `progressIntervalMs`). */
  progress: [job: Job, progress: number];
  /**
   * The Redis server's clock jumped against this process's monotonic clock (by a second or more;
   * `jumpMs` positive forward) on shard `shard`: see docs/operations.md, Time.
   */
  clockJump: [jump: ClockJump & { shard: number }];
  /** Something went wrong outside a handler (Redis unreachable, a refused late completion...). */
  error: [error: Error];
}

/** The event a run's end is reported as, by the state it ended in. */
const REPORTED: Record<string, 'completed' | 'stuck' | 'failed' | 'cancelled' | undefined> = {
  success: 'completed',
  stuck: 'stuck',
  failed: 'failed',
  cancelled: 'cancelled',
};

/** Where a run's end is told: the executor's events and its logger. */
export interface ReportTo {
  events: EventEmitter<WorkerEvents>;
  logger?: JobLogger;
  workerId: string;
  onError(err: unknown): void;
}

/**
 * Reports the end of `job`'s run with `outcome`, which the queue answered with `state` ('': it
 * refused the outcome, the run's lease being lost; no loss when the job was `released` unstarted).
 */
export function reportEnd(to: ReportTo, job: Job, outcome: Outcome, state: string, released: boolean): void {
  const error = () => outcome.error ?? new Error('failed');
  if (to.logger && state) {
    const line = { job: job.id, task: job.task, group: job.group, state, worker: to.workerId };
    if (state === 'failed' || state === 'stuck')
      to.logger.warn({ ...line, err: error().message, retries: job.retries }, `job ${state}`);
    else to.logger.debug(line, `job ${state}`);
  }
  if (state === '') {
    // (a job taken but never started ran nowhere here: its refused release loses no work)
    if (!released) to.onError(new LeaseLostError(job.id));
    return;
  }
  const event = REPORTED[state];
  // the job objects are built only for someone listening
  if (!event || to.events.listenerCount(event) === 0) return;
  const ended = state as JobState;
  if (event === 'completed') to.events.emit(event, { ...job, state: ended, result: outcome.result }, outcome.result);
  else if (event === 'cancelled') to.events.emit(event, { ...job, state: ended });
  else {
    const err = error();
    to.events.emit(event, { ...job, state: ended, error: err.message }, err);
  }
}

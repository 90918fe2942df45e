/**
 * The operator's actions on jobs given by id, a batch per script call: delete (delete.lua),
 * promote (promote.lua), cancel (cancel.lua) and retry (retry.lua). Each call is one atomic step
 * over its batch; the caller bounds the batch (src/queue/job-actions.ts).
 */
import type { JobState } from './job-codec.js';
import type { QueueStore } from './queue-store.js';

/** The actions a batch can be given, by script. */
export type JobAction = 'delete' | 'promote' | 'cancel' | 'retry';

/**
 * What became of one job of a batch: `done` when the action was applied to it, `cancelling` for
 * a run whose cancel was requested, else the state it was left in, or null when there is no such job.
 */
export type JobOutcome = JobState | 'done' | 'cancelling' | null;

/** One queue shard's batch actions, on the shard's store. */
export class JobAdminStore {
  constructor(private readonly queue: QueueStore) {}

  /**
   * Applies `action` to the jobs `ids` (in one script call), only to those in state `expected`
   * when given; answers each job's outcome, in order.
   */
  async act(action: JobAction, ids: readonly string[], expected?: JobState): Promise<JobOutcome[]> {
    if (ids.length === 0) return [];
    const k = this.queue.keys;
    const raw = await this.queue.scripts.fcall<string[]>(action, k.counts, [
      k.prefix,
      this.queue.maxEvents,
      expected ?? '',
      ...ids,
    ]);
    return raw.map((r) => (r ? (r as JobOutcome) : null));
  }
}

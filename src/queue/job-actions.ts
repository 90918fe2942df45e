/**
 * The operator's actions on many jobs: delete, promote ("run now"), cancel and retry, on jobs
 * given by id or on every job matching a filter (a state, and optionally a group and a task).
 * Each script call is one atomic step over a batch of at most {@link ACTION_BATCH} jobs, so that
 * no call holds Redis for long however many jobs an action reaches. A filter is walked a page at
 * a time (dashboard-jobs.lua, the job list's read: at most {@link WALK_READ} candidates a call),
 * and each page's jobs are acted on only while they are still in the filter's state.
 */
import { z } from 'zod';
import { ValidationError } from '../errors.js';
import { checkOptions, checkValue, text, whole } from '../options.js';
import { DashboardStore } from '../redis/dashboard-store.js';
import { type JobAction, JobAdminStore, type JobOutcome } from '../redis/job-admin-store.js';
import type { QueueStore } from '../redis/queue-store.js';
import { shardsOfGroup } from '../redis/shards.js';
import { JOB_STATES, type JobState } from './job.js';
import { checkJobId, shardsOfJob } from './reader.js';

export type { JobAction, JobOutcome } from '../redis/job-admin-store.js';

/** Most jobs one script call acts on (a retry, the dearest, costs some 13 µs a job: docs/decisions/0027). */
export const ACTION_BATCH = 500;
/** Most candidates one page of a filter's walk looks at. */
export const WALK_READ = 2000;
/** Most passes over the waiting jobs of every group (see {@link JobActions.walk}). */
const WAITING_PASSES = 5;

/** The jobs an action reaches: by id, or every job matching a filter. */
export type JobTarget =
  | {
      /** Job ids (any number: they are acted on in batches). */
      ids: readonly string[];
      /** Only the jobs in this state (the others are left as they are). */
      state?: JobState;
    }
  | {
      /** The jobs in this state. */
      state: JobState;
      /** Only this group's jobs. */
      group?: string;
      /** Only jobs of this task. */
      task?: string;
      /** Most jobs acted on (default: all). */
      limit?: number;
    };

/** What an action on many jobs did. */
export interface BulkResult {
  /** Jobs it was applied to (for a cancel, those cancelled and those whose run is being aborted). */
  done: number;
  /** Of `done`, running jobs whose cancel was requested (their run ends `cancelled`). */
  cancelling: number;
  /** Jobs left as they were, by their state (a delete leaves scheduled and running jobs). */
  left: Partial<Record<JobState, number>>;
  /** Ids that name no job. */
  missing: number;
  /** The walk over a filter stopped at its `limit`: more jobs may match. */
  more: boolean;
}

/** The states whose jobs each action can change (a filter on another state is refused). */
export const ACTION_STATES: Readonly<Record<JobAction, readonly JobState[]>> = {
  delete: ['waiting', 'delayed', 'stuck', 'success', 'failed', 'cancelled'],
  promote: ['delayed', 'stuck'],
  cancel: ['waiting', 'delayed', 'stuck', 'scheduled', 'running'],
  retry: ['failed', 'cancelled'],
};

const STATE = z.enum(JOB_STATES as [JobState, ...JobState[]], { error: `must be one of ${JOB_STATES.join(', ')}` });
const IDS_TARGET = { ids: z.array(z.unknown(), { error: 'must be an array of job ids' }), state: STATE.optional() };
const FILTER_TARGET = {
  state: STATE,
  group: text(200).optional(),
  task: text(200).optional(),
  limit: whole(1, Number.MAX_SAFE_INTEGER).optional(),
};

/**
 * The position after `next` once the jobs at `removed` left the source a page was read from:
 * each removed job before it, in the same list (positions `…-n` share what precedes their last
 * number), moves it one back.
 */
export function shiftPosition(next: string, removed: readonly string[]): string {
  const cut = next.lastIndexOf('-') + 1;
  const head = next.slice(0, cut);
  const n = Number(next.slice(cut));
  if (!/^\d+$/.test(next.slice(cut)) || !Number.isSafeInteger(n)) return next;
  let before = 0;
  for (const p of removed) {
    const c = p.lastIndexOf('-') + 1;
    if (p.slice(0, c) === head && Number(p.slice(c)) < n) before++;
  }
  return `${head}${n - before}`;
}

function emptyResult(): BulkResult {
  return { done: 0, cancelling: 0, left: {}, missing: 0, more: false };
}

/** Adds the outcomes of a batch to `r`. */
function tally(r: BulkResult, outcomes: readonly JobOutcome[]): void {
  for (const o of outcomes) {
    if (o === null) r.missing++;
    else if (isDone(o)) {
      r.done++;
      if (o === 'cancelling') r.cancelling++;
    } else {
      const state = o as JobState;
      r.left[state] = (r.left[state] ?? 0) + 1;
    }
  }
}

/** Whether outcome `o` says the action was applied. */
function isDone(o: JobOutcome): boolean {
  return o === 'done' || o === 'cancelling';
}

/** A queue's batch actions over its shards' stores (by shard number, the home shard's last). */
export class JobActions {
  private readonly admin: JobAdminStore[];

  constructor(
    private readonly stores: readonly QueueStore[],
    /** The queue's shard count (a sharded queue has one store more: its home shard's). */
    private readonly shards: number,
  ) {
    this.admin = stores.map((s) => new JobAdminStore(s));
  }

  /**
   * Applies `action` to the jobs of `target`.
   * @throws {ValidationError} for a bad target (an id that is no job id, a state the action
   * cannot change); nothing is changed then.
   */
  async run(action: JobAction, target: JobTarget): Promise<BulkResult> {
    if (typeof target === 'object' && target !== null && 'ids' in target) {
      const { ids, state } = checkOptions(IDS_TARGET, target);
      for (const [i, id] of ids.entries()) checkValue(text(1000), id, `ids[${i}]`);
      return this.byIds(action, ids as string[], state);
    }
    const f = checkOptions(FILTER_TARGET, target);
    if (!ACTION_STATES[action].includes(f.state)) {
      throw new ValidationError(
        'state',
        `${action} acts on jobs that are ${ACTION_STATES[action].join(', ')}; "${f.state}" is none of them`,
      );
    }
    return this.walk(action, f);
  }

  /** Applies `action` to job `id`: its outcome. */
  async one(action: JobAction, id: string): Promise<JobOutcome> {
    checkJobId(id);
    const outcomes = await Promise.all(shardsOfJob(id, this.shards).map((s) => this.admin[s].act(action, [id])));
    return outcomes.map((o) => o[0]).find((o) => o !== null) ?? null;
  }

  private async byIds(action: JobAction, ids: readonly string[], state?: JobState): Promise<BulkResult> {
    const result = emptyResult();
    const unique = [...new Set(ids)];
    for (let i = 0; i < unique.length; i += ACTION_BATCH) {
      const batch = unique.slice(i, i + ACTION_BATCH);
      // Each id goes to the shard it names, or to every shard (an id a caller gave): its outcome
      // is the one shard's that holds it.
      const byShard = new Map<number, string[]>();
      for (const id of batch) {
        for (const s of shardsOfJob(id, this.shards)) {
          const list = byShard.get(s) ?? [];
          list.push(id);
          byShard.set(s, list);
        }
      }
      const found = new Map<string, JobOutcome>();
      await Promise.all(
        [...byShard].map(async ([s, list]) => {
          const outcomes = await this.admin[s].act(action, list, state);
          list.forEach((id, k) => {
            if (outcomes[k] !== null) found.set(id, outcomes[k]);
          });
        }),
      );
      tally(
        result,
        batch.map((id) => found.get(id) ?? null),
      );
    }
    return result;
  }

  /**
   * Applies `action` to every job matching the filter, shard by shard, a page at a time. The
   * jobs a page acted on leave the list it was read from, so the next page starts that many
   * places earlier. The waiting jobs of every group are walked again while a pass acted on any
   * (at most WAITING_PASSES passes): a group whose last jobs left may leave the groups hash, and
   * the walk's place in it may then pass over a group.
   */
  private async walk(
    action: JobAction,
    f: { state: JobState; group?: string; task?: string; limit?: number },
  ): Promise<BulkResult> {
    const result = emptyResult();
    const limit = f.limit ?? Number.POSITIVE_INFINITY;
    const shards = f.group !== undefined ? shardsOfGroup(f.group, this.shards) : this.stores.map((_, i) => i);
    const passes = f.state === 'waiting' && f.group === undefined ? WAITING_PASSES : 1;
    for (const s of shards) {
      const reads = new DashboardStore(this.stores[s]);
      for (let pass = 0; pass < passes; pass++) {
        let start = '';
        let acted = 0;
        for (;;) {
          const room = limit - result.done;
          if (room <= 0) {
            result.more = true;
            return result;
          }
          const page = await reads.jobs({
            state: f.state,
            group: f.group,
            task: f.task,
            start,
            limit: Math.min(ACTION_BATCH, room),
            maxRead: WALK_READ,
          });
          if (!page.listable) return result;
          const outcomes = await this.admin[s].act(
            action,
            page.jobs.map((j) => j.id),
            f.state,
          );
          tally(result, outcomes);
          // (a job that left the state left the list; one cancelled while running stays in `leases`)
          const removed = page.jobs.filter((_, k) => outcomes[k] !== f.state && outcomes[k] !== 'cancelling');
          acted += removed.length;
          if (!page.more) break;
          start = shiftPosition(
            page.next,
            removed.map((j) => j.pos),
          );
        }
        if (acted === 0) break;
      }
    }
    return result;
  }
}

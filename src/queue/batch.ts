/**
 * Batches (Sidekiq Pro's): jobs added over time to a batch a producer opens and closes; its
 * onComplete callback job runs once every job has ended after the close, its onSuccess callback
 * once every job has succeeded (docs/jobs.md#batches). Checked and packed here, written by
 * lua/batch.lua, counted by the scripts that end jobs (lua/includes/batches.lua).
 */
import { z } from 'zod';
import { BatchClosedError, BulkSubmitError, ValidationError } from '../errors.js';
import { checkOptions, checkValue, text, whole } from '../options.js';
import type { BatchRecord, BatchStore } from '../redis/batch-store.js';
import type { JobReadStore } from '../redis/job-read-store.js';
import type { SubmitJob } from '../redis/queue-store.js';
import { BATCH } from '../redis/wire.js';
import type { Job, JobState, Priority } from './job.js';
import { newJobIdIn, submittedJob } from './submitter.js';
import type { JobOf, SubmitOf, TaskName, UntypedTasks } from './task-map.js';
import { type CheckedSpec, checkSpec, type SubmitSpec } from './validate.js';

/** A batch id: a Rota-made job id (it names the batch's shard by its bucket). */
const BATCH_ID = /^[0-9a-z]{18,19}\.[0-9a-z]{3}$/;
/** A callback's id: `<batch id>/complete` or `<batch id>/success`. */
const CALLBACK_ID = /^([0-9a-z]{18,19}\.[0-9a-z]{3})\/(?:complete|success)$/;

/** Most jobs, and bytes of packed args, one add call carries (one batch.lua call, a few ms of Redis). */
const CHUNK = { jobs: 1000, bytes: 1 << 20 };

/** Most job ids one {@link Batch.jobs} page reads. */
export const MAX_BATCH_PAGE = 1000;

/** A batch's callback: a job submitted when the batch completes (or succeeds). Its group and priority default to the batch's. */
export type BatchCallback<T extends object = UntypedTasks, K extends TaskName<T> = TaskName<T>> =
  K extends TaskName<T>
    ? Pick<SubmitOf<T, K, unknown>, 'task' | 'args'> & {
        group?: string;
        priority?: Priority;
        maxRetries?: number;
        maxRuntime?: number;
        subject?: string;
      }
    : never;

/** What {@link Queue.openBatch} opens. */
export interface BatchOptions<T extends object = UntypedTasks> {
  /** Submitted once, when every job of the batch has ended (any final state) after its close; id `<batch id>/complete`. */
  onComplete?: BatchCallback<T>;
  /** Submitted once, when every job of the batch has succeeded after its close; id `<batch id>/success`. */
  onSuccess?: BatchCallback<T>;
  /**
   * The batch's group (default `default`): its jobs' and callbacks' group when they name none, and
   * on a sharded queue the shard every job of the batch lives in, whatever its group.
   */
  group?: string;
  /** A note shown with the batch (at most 1,000 bytes). */
  description?: string;
}

/** Where a batch stands. */
export interface BatchStatus extends BatchRecord {
  /** `open` (jobs may be added), `closed` (jobs pending), `completed` (every job ended; `succeeded` when every one succeeded). */
  state: 'open' | 'closed' | 'completed' | 'succeeded';
}

/** A page of a batch's jobs ({@link Batch.jobs}). */
export interface BatchPage<R = unknown> {
  /** The jobs of the page, in the order they were added; one removed by retention has state `null`. */
  items: Array<{ id: string; state: JobState | null; result?: R; error?: string }>;
}

const CALLBACK_FIELDS = ['task', 'args', 'group', 'priority', 'maxRetries', 'maxRuntime', 'subject'];
const OPTIONS = {
  onComplete: z.unknown().optional(),
  onSuccess: z.unknown().optional(),
  group: text(200).optional(),
  description: z.string({ error: 'must be a string' }).max(1000, 'must be at most 1000 characters').optional(),
};
const PAGE = { offset: whole(0, Number.MAX_SAFE_INTEGER).optional(), limit: whole(1, MAX_BATCH_PAGE).optional() };

/** Checks a batch id (a Rota-made id, as {@link Queue.openBatch} answers). @throws {@link ValidationError} on `id`. */
export function checkBatchId(id: unknown): asserts id is string {
  checkValue(text(40), id, 'id');
  if (!BATCH_ID.test(id as string)) throw new ValidationError('id', 'is not a batch id (Rota makes them: Queue.openBatch)');
}

/** The batch of job `job`: the one it belongs to, or the one it is a callback of; undefined for neither. */
export function batchOfJob(job: Pick<Job, 'id' | 'batch'>): string | undefined {
  return job.batch ?? CALLBACK_ID.exec(job.id)?.[1];
}

/** The status of a batch's record. */
export function batchStatus(r: BatchRecord): BatchStatus {
  const state =
    r.succeeded !== undefined
      ? 'succeeded'
      : r.completed !== undefined
        ? 'completed'
        : r.closed !== undefined
          ? 'closed'
          : 'open';
  return { ...r, state };
}

/**
 * Checks a batch's options and packs its callbacks, writing nothing; `id` is the batch's.
 * @throws {@link ValidationError} naming the bad option (`onComplete.task`).
 */
export function packBatch(
  id: string,
  options: unknown,
  maxArgsBytes: number,
): { group: string; description: string; onComplete?: SubmitJob; onSuccess?: SubmitJob } {
  const o = checkOptions(OPTIONS, options, { optional: true });
  const group = o.group ?? 'default';
  const callback = (given: unknown, field: 'onComplete' | 'onSuccess', suffix: string): SubmitJob | undefined => {
    if (given === undefined) return undefined;
    if (typeof given !== 'object' || given === null) throw new ValidationError(field, 'must be an object with a task');
    for (const k of Object.keys(given)) {
      if (!CALLBACK_FIELDS.includes(k))
        throw new ValidationError(`${field}.${k}`, `is not an option of a callback (${CALLBACK_FIELDS.join(', ')})`);
    }
    const c = given as SubmitSpec;
    const checked = checkSpec({ ...c, group: c.group ?? group }, maxArgsBytes, field);
    return { ...checked, id: `${id}${suffix}` };
  };
  return {
    group,
    description: o.description ?? '',
    onComplete: callback(o.onComplete, 'onComplete', BATCH.complete),
    onSuccess: callback(o.onSuccess, 'onSuccess', BATCH.succeed),
  };
}

/** What a {@link Batch} handle works with: its shard's batch calls and reads, and the job limits. */
export interface BatchHost {
  store: BatchStore;
  reads: JobReadStore;
  maxArgsBytes: number;
  /** Told of the jobs each add wrote (Queue.onSubmitted). */
  onAdded?: (jobs: readonly Job[]) => void;
}

/**
 * A batch: add jobs with {@link Batch.submit} and {@link Batch.submitBulk} (typed with the queue's task map),
 * then {@link Batch.close} it. A handle from {@link Queue.openBatch}, {@link Queue.reopenBatch} (another
 * process, by id), or `ctx.batch` (a running job of the batch adds to it, closed or not).
 */
export class Batch<T extends object = UntypedTasks> {
  constructor(
    /** The batch's id: `<18-19 base-36 digits>.<bucket>`, a Rota-made id. */
    readonly id: string,
    private readonly host: BatchHost,
    /** The running job of the batch this handle adds for (ctx.batch), and its lease token. */
    private readonly member?: { id: string; token: string },
  ) {}

  /**
   * Adds one job to the batch, as {@link Queue.submit} would (an existing id answers that job, not
   * added to the batch). Its id, when Rota makes it, names the batch's shard.
   * @throws {@link ValidationError} for a bad field (a `dedup` included: a batch job has none); nothing is written.
   * @throws {@link BatchClosedError} when the batch takes no more jobs; nothing is written.
   */
  async submit<K extends TaskName<T>, A = unknown>(spec: SubmitOf<T, K, A>): Promise<JobOf<T, K, A>> {
    const [job] = await this.add([spec as SubmitSpec], false);
    return job as JobOf<T, K, A>;
  }

  /**
   * Adds many jobs, all checked before any is written, in calls of at most 1,000 jobs (and 1 MiB
   * of args), each all or none.
   * @throws {@link ValidationError} naming the bad spec (`specs[3].task`); nothing is written.
   * @throws {@link BatchClosedError} when the batch takes no more jobs (nothing of that call written).
   * @throws {@link BulkSubmitError} when a call failed after others were written: the jobs written.
   */
  async submitBulk<K extends TaskName<T>, A = unknown>(specs: SubmitOf<T, K, A>[]): Promise<JobOf<T, K, A>[]> {
    if (!Array.isArray(specs)) throw new ValidationError('specs', 'must be an array');
    return (await this.add(
      Array.from(specs, (s) => s as SubmitSpec),
      specs.length > 1,
    )) as JobOf<T, K, A>[];
  }

  private async add(specs: SubmitSpec[], many: boolean): Promise<Job[]> {
    const bucket = this.id.slice(-3);
    const checked = specs.map((s, i): CheckedSpec & SubmitJob => {
      const where = many ? `specs[${i}]` : '';
      if (typeof s === 'object' && s !== null && 'dedup' in s) {
        throw new ValidationError(where ? `${where}.dedup` : 'dedup', 'is not an option of a batch job');
      }
      const c = checkSpec(s, this.host.maxArgsBytes, where);
      c.id ??= newJobIdIn(bucket);
      return Object.assign(c, { batch: this.id });
    });
    const out: Job[] = [];
    for (const chunk of chunks(checked)) {
      let r: Awaited<ReturnType<BatchStore['add']>>;
      try {
        r = await this.host.store.add(this.id, chunk, this.member);
        if (r.refused) throw new BatchClosedError(this.id, r.refused);
        if (r.reserved !== undefined) {
          const at = checked.indexOf(chunk[r.reserved]);
          throw new ValidationError(
            many ? `specs[${at}].id` : 'id',
            'is the id of a periodic occurrence staged ahead and not submitted yet (reserved for it); nothing was written',
          );
        }
      } catch (err) {
        if (out.length === 0) throw err;
        throw new BulkSubmitError(out, err);
      }
      const existing = chunk.filter((_, k) => !r.added![k]);
      const known = new Map((await this.host.reads.jobs(existing.map((c) => c.id!))).flatMap((j) => (j ? [[j.id, j]] : [])));
      const added: Job[] = [];
      chunk.forEach((c, k) => {
        if (!r.added![k] && known.has(c.id!)) {
          out.push(known.get(c.id!)!);
          return;
        }
        const job: Job = { ...submittedJob(c, r.submitted!), batch: this.id };
        out.push(job);
        if (r.added![k]) added.push(job);
      });
      if (added.length > 0) {
        try {
          this.host.onAdded?.(added);
        } catch {}
      }
    }
    return out;
  }

  /**
   * Closes the batch: no job is added to it after this but by its own running jobs. When every
   * job has ended already, its callbacks are submitted by this call. Closing twice is harmless.
   * Resolves its status.
   * @throws {@link BatchClosedError} (`gone`) when there is no such batch.
   */
  async close(): Promise<BatchStatus> {
    if ((await this.host.store.close(this.id)) === null) throw new BatchClosedError(this.id, 'gone');
    const s = await this.status();
    if (!s) throw new BatchClosedError(this.id, 'gone');
    return s;
  }

  /** The batch's counts and times, or null when it is gone (never opened, or 30 days past its last write). */
  async status(): Promise<BatchStatus | null> {
    const r = await this.host.store.read(this.id);
    return r && batchStatus(r);
  }

  /**
   * A page of the batch's jobs (`offset` from 0, `limit` 1 to 1,000, default 100), in the order they
   * were added, with their states and results.
   * @throws {@link ValidationError} naming a bad option.
   */
  async jobs<R = unknown>(page?: { offset?: number; limit?: number }): Promise<BatchPage<R>> {
    const { offset = 0, limit = 100 } = checkOptions(PAGE, page, { optional: true });
    const ids = await this.host.store.jobIds(this.id, offset, limit);
    const jobs = await this.host.reads.jobs(ids);
    return {
      items: ids.map((id, i) => {
        const j = jobs[i];
        if (!j) return { id, state: null };
        const item: BatchPage<R>['items'][number] = { id, state: j.state };
        if (j.result !== undefined) item.result = j.result as R;
        if (j.error !== undefined) item.error = j.error;
        return item;
      }),
    };
  }
}

/** Checked jobs in add calls of at most CHUNK each. */
function chunks<C extends { packedArgs: Buffer }>(items: C[]): C[][] {
  const out: C[][] = [];
  let chunk: C[] = [];
  let bytes = 0;
  for (const c of items) {
    if (chunk.length === CHUNK.jobs || (chunk.length > 0 && bytes + c.packedArgs.length > CHUNK.bytes)) {
      out.push(chunk);
      chunk = [];
      bytes = 0;
    }
    chunk.push(c);
    bytes += c.packedArgs.length;
  }
  if (chunk.length > 0) out.push(chunk);
  return out;
}

/** The client side of a queue: submit jobs, read them back, cancel them, steer groups. */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { BulkSubmitError, ValidationError } from '../errors.js';
import { startSubmitSpan } from '../observability/tracing.js';
import { checkOptions, checkValue, QUEUE_OPTIONS, text, whole } from '../options.js';
import { type ConnectionOption, connect } from '../redis/connection.js';
import { EMPTY_GROUP, readGroupStates } from '../redis/group-state.js';
import { checkQueueName, leaseJobId, type QueueKeys } from '../redis/keys.js';
import { type FinishedCursor, type GroupChange, QueueStore, type SubmitReply } from '../redis/queue-store.js';
import { checkReadLayout } from '../redis/schema.js';
import {
  bucketSuffix,
  byShard,
  checkShards,
  groupBucket,
  shardNumbers,
  shardOfGroup,
  shardOfId,
  shardsOfGroup,
} from '../redis/shards.js';
import { GROUP_DUE_MARK } from '../redis/wire.js';
import { Batcher } from './batcher.js';
import { type QueueEvent, readShardEvents } from './events.js';
import { decodeJob, decodeJobObject, FINAL_STATES, JOB_STATES, type Job, type JobState, LIST_ORDER } from './job.js';
import type { JobOf, SubmitOf, TaskName, UntypedTasks } from './tasks.js';
import { type CheckedSpec, checkRate, checkSpec, type SubmitSpec } from './validate.js';

/** Options shared by every part that opens a queue. */
export interface QueueOptions {
  /** Where Redis is: a URL, ioredis options or an ioredis client. */
  connection: ConnectionOption;
  /** Largest packed args accepted, in bytes: 1 to 256 MiB; default 512 KiB. */
  maxArgsBytes?: number;
  /**
   * Length the events stream is capped at (approximately), in entries: 0 (events off) to
   * 100,000,000; default 10,000.
   */
  maxEvents?: number;
  /**
   * `'replicated'`: a submit resolves only once a replica has it (`WAIT 1`), and rejects with a
   * ReplicationError when none acknowledged it within `replicaTimeoutMs`; so no acknowledged
   * submit is lost when a replica takes over. Default `'primary'`: acknowledged by the primary.
   */
  durability?: Durability;
  /** How long a `'replicated'` write waits for a replica: 1 ms to an hour; default 1,000 ms. */
  replicaTimeoutMs?: number;
  /**
   * How many replicas a `'replicated'` write waits for (`WAIT n`): 1 to 100; default 1. With more replicas
   * than that, the one promoted may not be one that has the write: give the replica count.
   */
  replicaAcks?: number;
  /**
   * Shards the queue spreads over (1 to 1,024; default 1): each is a queue of its own in its own Cluster slot,
   * a group lives in one of them (by a stable hash of its name), and executors take from them in
   * turn. Every part that opens the queue must give the count the queue has (a
   * ShardCountError otherwise); `rota reshard` changes it.
   */
  shards?: number;
}

/** Where a write must be before Rota acknowledges it: the primary, or a replica too. */
export type Durability = 'primary' | 'replicated';

/**
 * What a store waits for after its writes under `durability` (options checked by checkOptions):
 * the replica timeout (0: it does not wait for replicas) and how many replicas must acknowledge.
 */
export function replication(opts: { durability?: Durability; replicaTimeoutMs?: number; replicaAcks?: number }): {
  replicaTimeoutMs: number;
  replicaAcks: number;
} {
  const replicaAcks = opts.replicaAcks ?? 1;
  if (opts.durability !== 'replicated') return { replicaTimeoutMs: 0, replicaAcks };
  return { replicaTimeoutMs: opts.replicaTimeoutMs ?? 1000, replicaAcks };
}

/** Per-group view, as {@link Queue.groups} gives it. */
export interface GroupInfo {
  group: string;
  waiting: number;
  running: number;
  stuck: number;
  paused: boolean;
  /** Concurrency limit across all executors; 0 means none. */
  limit: number;
  /** Turns per round-robin round. */
  weight: number;
  /** Rate limit across all executors (at most `max` starts in any `perMs` ms), or null: none. */
  rate: { max: number; perMs: number } | null;
}

/** What {@link Queue.stats} gives. */
export interface QueueStats {
  windowMs: number;
  counts: Record<JobState, number>;
  /** Jobs that ended in each final state within the window. */
  finished: { success: number; failed: number; cancelled: number };
  /** Finished jobs per second over the window. */
  perSecond: number;
  /** Submit-to-start waits of jobs that succeeded in the window, in ms (from the due time for a delayed job). */
  waitMs: { p50?: number; p90?: number; p99?: number; max?: number };
}

/** A live executor, as {@link Queue.workers} gives it. */
export interface WorkerInfo {
  id: string;
  host: string;
  pid: number;
  started: number;
  concurrency: number;
  running: number;
}

export const DEFAULT_MAX_ARGS_BYTES = 512 * 1024;
export const DEFAULT_MAX_EVENTS = 10_000;
/**
 * Most bytes one submit call carries: its jobs go as one argument, and Redis refuses an argument
 * over `proto-max-bulk-len` (512 MiB unless configured otherwise) by closing the connection.
 */
const MAX_SUBMIT_BYTES = 512 * 1024 * 1024;
/** Most jobs, and bytes of packed args, that coalesced submit() calls send in one script call. */
const SUBMIT_CHUNK = { jobs: 1000, bytes: 1 << 20 };
/**
 * Submit calls a queue keeps unanswered at most per shard (group commit): submit() calls made
 * while one is unanswered wait for its answer and go together in the next. An idle queue sends at
 * once; a busy one sends fewer, larger calls, so a job costs less as the load grows. Per shard, so
 * that a shard whose primary is down holds back only its own submits.
 */
const SUBMITS_IN_FLIGHT = 1;

/** What {@link Queue.clean} removes. */
export interface CleanOptions {
  /** The final state of the jobs to remove. */
  state: 'success' | 'failed' | 'cancelled';
  /** Only jobs finished at least this many ms ago; default 0 (all). */
  olderThan?: number;
  /** Only this group's jobs. */
  group?: string;
  /** Most jobs removed; default all. */
  limit?: number;
}

/** What {@link Queue.retryFailed} puts back. */
export interface RetryFailedOptions {
  /** Only this group's jobs. */
  group?: string;
  /** Only jobs of this task. */
  task?: string;
}

/**
 * Most members of a finished-state set that one step of a clean, or of a bulk retry, visits: each
 * step is one script call, and these keep one under 5 ms of Redis CPU (a retry costs more than a
 * removal: it puts the job back in its group; benchmarks/probes/clean-cost.ts, docs/decisions/0024).
 */
export const CLEAN_BATCH = 250;
export const RETRY_BATCH = 150;

/** Most bytes of a job id a read, cancel or retry looks up (a caller's id is at most 200, a fan-out child's or periodic run's longer). */
const MAX_JOB_ID_BYTES = 1000;

/** Checks a job id given to a read, cancel or retry. @throws {ValidationError} (`id`). */
function checkJobId(id: unknown): void {
  checkValue(text(MAX_JOB_ID_BYTES), id, 'id');
}

const group = text(200).optional();
const CLEAN_OPTIONS = {
  state: z.enum(['success', 'failed', 'cancelled'], {
    error: `must be one of ${[...FINAL_STATES].join(', ')} (a final state)`,
  }),
  olderThan: whole(0, Number.MAX_SAFE_INTEGER, 'ms').optional(),
  group,
  limit: whole(1, Number.MAX_SAFE_INTEGER).optional(),
};
const RETRY_FAILED_OPTIONS = { group, task: text(200).optional() };
const JOBS_OPTIONS = {
  state: z.enum(JOB_STATES, { error: `must be one of ${JOB_STATES.join(', ')}` }),
  group,
  limit: whole(1, 10_000).optional(),
};
const STATS_WINDOW = whole(1, 30 * 86_400_000, 'ms');
const GROUP_LIMIT_OPTIONS = {
  concurrency: whole(0, 1_000_000).optional(),
  weight: whole(1, 1000).optional(),
  rate: z.unknown().optional(),
};
/** A stream id (`$`, `<ms>` or `<ms>-<seq>`) per shard, joined by `,`. */
const STREAM_PLACES = /^(\$|\d{1,20}(-\d{1,20})?)(,(\$|\d{1,20}(-\d{1,20})?))*$/;
const EVENTS_OPTIONS = {
  from: z.string({ error: 'must be a string' }).regex(STREAM_PLACES, "must be an event's streamId").optional(),
  signal: z.instanceof(AbortSignal, { error: 'must be an AbortSignal' }).optional(),
};

/** A submit() call waiting to be sent with the others of its turn. */
interface PendingSubmit {
  spec: CheckedSpec;
  resolve(job: Job): void;
  reject(err: unknown): void;
}

/** `items` in chunks of at most SUBMIT_CHUNK jobs, or bytes of packed args, each (at least one job). */
function submitChunks<T>(items: readonly T[], specOf: (item: T) => CheckedSpec): T[][] {
  const chunks: T[][] = [];
  let chunk: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = specOf(item).packedArgs.length;
    if (chunk.length === SUBMIT_CHUNK.jobs || (chunk.length > 0 && bytes + size > SUBMIT_CHUNK.bytes)) {
      chunks.push(chunk);
      chunk = [];
      bytes = 0;
    }
    chunk.push(item);
    bytes += size;
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}

function reservedIdError(field: string): ValidationError {
  return new ValidationError(
    field,
    'is the id of a periodic occurrence staged ahead and not submitted yet (reserved for it); nothing was written',
  );
}

/** Orders by group name. */
function byGroupName(a: { group: string }, b: { group: string }): number {
  return a.group < b.group ? -1 : a.group > b.group ? 1 : 0;
}

let idCounter = 0;
let idMs = 0;
let idTime = '';
/**
 * A new job id for a job of group `group`: time-ordered, unique across processes (a counter and 6
 * random base-36 digits), and ending in the group's bucket, which names its shard (../redis/shards.ts).
 */
export function newJobId(group: string): string {
  idCounter = (idCounter + 1) % 1_679_616;
  const now = Date.now();
  if (now !== idMs) {
    idMs = now;
    idTime = now.toString(36);
  }
  const random = Math.floor(Math.random() * 2_176_782_336)
    .toString(36)
    .padStart(6, '0');
  return `${idTime}${idCounter.toString(36).padStart(4, '0')}${random}.${bucketSuffix(groupBucket(group))}`;
}

/**
 * A queue as seen by producers and operators. With a task map `T` (`{ send: { to: string } }`),
 * submits are checked against it at compile time: a task it does not name, or args of another
 * type, do not compile.
 * @example
 * const queue = new Queue('mail', { connection: 'redis://127.0.0.1:6379' });
 * const job = await queue.submit({ task: 'send', group: 'tenant-42', args: { to: 'a@b.c' } });
 * @example
 * type Tasks = { send: { to: string } };
 * const typed = new Queue<Tasks>('mail', { connection });
 * await typed.submit({ task: 'send', args: { to: 'a@b.c' } });
 */
export class Queue<T extends object = UntypedTasks> {
  readonly name: string;
  /** The keys of the first shard (of the queue, when it has one shard); {@link shardKeys} has every shard's. */
  readonly keys: QueueKeys;
  /** The queue's shard count. */
  readonly shards: number;
  /**
   * The keys of each shard, by shard number; a queue of more than one shard has its home shard
   * (periodic tasks and their runs) last.
   */
  readonly shardKeys: readonly QueueKeys[];
  /** The command connection (shared with parts of Rota built on this queue). */
  readonly client: Redis;
  private readonly owned: boolean;
  private readonly maxArgsBytes: number;
  /**
   * submit() calls wait for the promise jobs queued before them, not for a timer: they go
   * together when made in one go (a loop, or replies that arrived together), and fake timers in
   * a caller's tests cannot hold them back.
   */
  private readonly submits: Batcher<PendingSubmit>[];
  readonly maxEvents: number;
  readonly connection: ConnectionOption;
  /** Each shard's script calls (see src/redis/queue-store.ts), by shard number. */
  private readonly stores: QueueStore[];

  /**
   * @throws {ValidationError} naming the first bad option (or the queue name); nothing is opened then.
   */
  constructor(name: string, options: QueueOptions) {
    checkQueueName(name);
    const opts = checkOptions(QUEUE_OPTIONS, options);
    const replicated = replication(opts);
    this.shards = checkShards(opts.shards);
    this.name = name;
    this.connection = opts.connection;
    const { client, owned } = connect(opts.connection, { reuse: true });
    this.client = client;
    this.owned = owned;
    this.maxArgsBytes = opts.maxArgsBytes ?? DEFAULT_MAX_ARGS_BYTES;
    this.maxEvents = opts.maxEvents ?? DEFAULT_MAX_EVENTS;
    this.stores = shardNumbers(this.shards).map(
      (shard) => new QueueStore(client, name, { maxEvents: this.maxEvents, ...replicated, shard, shards: this.shards }),
    );
    this.submits = this.stores.map(
      (store) =>
        new Batcher<PendingSubmit>((items) => this.sendSubmits(store, items), {
          defer: (flush) => void Promise.resolve().then(flush),
          maxInFlight: SUBMITS_IN_FLIGHT,
        }),
    );
    this.shardKeys = this.stores.map((s) => s.keys);
    this.keys = this.shardKeys[0];
  }

  /**
   * Checks, before each read, the queue's layout (read only: a read records nothing; the script
   * calls check it themselves): a read made with a wrong count would miss shards, and so would one
   * made while a reshard is under way (or was killed), the jobs it moved being in the other
   * layout. Not kept between reads: a reshard may begin after the first.
   * @throws {ShardCountError} when the queue records another shard count.
   * @throws {ReshardInProgressError} while the queue's shard count is being changed.
   */
  private layoutChecked(): Promise<void> {
    return checkReadLayout(this.client, this.name, this.shards);
  }

  /**
   * The stores that may hold jobs of group `group`: its shard's, and the home shard's (where its
   * periodic runs are) when the queue has more than one.
   */
  private storesOfGroup(group: string): QueueStore[] {
    return shardsOfGroup(group, this.shards).map((shard) => this.stores[shard]);
  }

  /**
   * The stores that may hold job `id`: its shard's, for an id Rota made (or a fan-out child of
   * one); every shard's for another id (a caller's id is unique within a shard, and any shard may
   * hold it; the home shard holds periodic runs).
   */
  private storesOf(id: string): QueueStore[] {
    const shard = shardOfId(id, this.shards);
    return shard === null ? this.stores : [this.stores[shard]];
  }

  /** Validates a spec (throws {@link ValidationError} naming the field) and gives it an id. */
  check(spec: SubmitSpec, where = ''): CheckedSpec {
    const c = checkSpec(spec, this.maxArgsBytes, where);
    c.id ??= newJobId(c.group);
    return c;
  }

  /**
   * Submits one job. With an `id` that already exists, resolves to the existing job and creates nothing.
   * The submit() calls a process makes together (in one synchronous run, or continuing from
   * replies that arrived together) go to Redis in one script call, and so do those made while
   * that call is unanswered (they go in the next); each job is still written or refused on its own.
   * @throws {ValidationError} when a field is bad, or the id is that of a periodic occurrence
   * staged ahead of its time; nothing is written then.
   */
  async submit<K extends TaskName<T>, A = unknown>(spec: SubmitOf<T, K, A>): Promise<JobOf<T, K, A>> {
    const checked = this.check(spec as SubmitSpec);
    const span = startSubmitSpan(this.name, [checked]);
    if (span) checked.trace = span.trace;
    const job = new Promise<JobOf<T, K, A>>((resolve, reject) => {
      this.submits[shardOfGroup(checked.group, this.shards)].add({
        spec: checked,
        resolve: resolve as (job: Job) => void,
        reject,
      });
    });
    if (!span) return job;
    return job.then(
      (j) => {
        span.end();
        return j;
      },
      (err: unknown) => {
        span.end(err);
        throw err;
      },
    );
  }

  /**
   * Submits many jobs; all are validated before any is written. Each shard's jobs are written by
   * calls of up to 1,000 jobs (and 1 MiB of packed args), each all or none, one after the other
   * so that no call holds Redis for long (about 10 ms); the shards are written at once. So a bulk
   * of up to 1,000 jobs on an unsharded queue is all or none, and on a sharded queue all or none
   * within each shard. When a call fails, the calls of its shard after it are not made, and the
   * {@link BulkSubmitError} lists the jobs that were written (by the calls before it and by the
   * other shards).
   * @throws {ValidationError} when a field is bad, or an id is that of a periodic occurrence
   * staged ahead of its time; nothing is written then (in a bulk of several calls: nothing of
   * that call and the calls of its shard after it).
   * @throws {BulkSubmitError} when a call failed after other calls were written: the jobs written.
   */
  async submitBulk<K extends TaskName<T>, A = unknown>(specs: SubmitOf<T, K, A>[]): Promise<JobOf<T, K, A>[]> {
    if (!Array.isArray(specs)) throw new ValidationError('specs', 'must be an array');
    // (Array.from visits holes, which map skips: a hole is a spec that is not an object)
    const many = specs.length > 1;
    const checked = Array.from(specs, (s, i) => this.check(s as SubmitSpec, many ? `specs[${i}]` : ''));
    const span = checked.length > 0 ? startSubmitSpan(this.name, checked) : null;
    if (!span) return this.writeBulk(checked, specs.length > 1);
    for (const c of checked) c.trace = span.trace;
    try {
      const written = await this.writeBulk<K, A>(checked, specs.length > 1);
      span.end();
      return written;
    } catch (err) {
      span.end(err);
      throw err;
    }
  }

  /** Writes a checked bulk, each shard's part in calls of at most SUBMIT_CHUNK (see {@link submitBulk}); `many`: its errors name specs[i]. */
  private async writeBulk<K extends TaskName<T>, A>(checked: CheckedSpec[], many: boolean): Promise<JobOf<T, K, A>[]> {
    const out: Array<JobOf<T, K, A> | undefined> = new Array(checked.length);
    const parts = this.byShard([...checked.keys()], (i) => checked[i].group);
    const ends = await Promise.allSettled(
      parts.map(async ([shard, positions]) => {
        for (const chunk of submitChunks(positions, (i) => checked[i])) {
          const r = await this.write(
            this.stores[shard],
            chunk.map((i) => checked[i]),
          );
          if (typeof r === 'number') throw reservedIdError(many ? `specs[${chunk[r]}].id` : 'id');
          chunk.forEach((i, k) => {
            out[i] = r[k] as JobOf<T, K, A>;
          });
        }
      }),
    );
    const failed = ends.find((e) => e.status === 'rejected');
    if (!failed) return out as JobOf<T, K, A>[];
    const written = out.filter((j) => j !== undefined);
    if (written.length === 0) throw failed.reason;
    throw new BulkSubmitError(written, failed.reason);
  }

  /** `items` by the shard of their group, in their order. */
  private byShard<I>(items: I[], groupOf: (item: I) => string): Array<[number, I[]]> {
    return byShard(items, this.shards, (item) => shardOfGroup(groupOf(item), this.shards));
  }

  /** Sends submit() calls made together to one shard, in bulks of at most SUBMIT_CHUNK jobs or bytes of args. */
  private async sendSubmits(store: QueueStore, items: PendingSubmit[]): Promise<void> {
    await Promise.all(submitChunks(items, (item) => item.spec).map((c) => this.sendChunk(store, c)));
  }

  private async sendChunk(store: QueueStore, items: PendingSubmit[]): Promise<void> {
    let rest = items;
    while (rest.length > 0) {
      let out: Job[] | number;
      try {
        out = await this.write(
          store,
          rest.map((p) => p.spec),
        );
      } catch (err) {
        for (const p of rest) p.reject(err);
        return;
      }
      if (typeof out !== 'number') {
        const jobs = out;
        rest.forEach((p, k) => {
          p.resolve(jobs[k]);
        });
        return;
      }
      // Nothing was written: the submit whose id is reserved fails, the others go again.
      rest[out].reject(reservedIdError('id'));
      rest = rest.filter((_, k) => k !== out);
    }
  }

  /**
   * Writes checked specs of one shard in one script call: the jobs (an existing id answers the
   * job that has it), or, when an id is reserved for a staged periodic occurrence, its position,
   * with nothing written.
   */
  private async write<A>(store: QueueStore, checked: CheckedSpec[]): Promise<Job<A>[] | number> {
    const r: SubmitReply = await store.submit(checked, MAX_SUBMIT_BYTES);
    if (r.reserved !== undefined) return r.reserved;
    const submitted = r.submitted;
    // Ids that existed already are read back together (one round trip on the pipelined connection).
    const existing = new Map<number, Job<A>>();
    const reads: Promise<void>[] = [];
    r.added.forEach((added, i) => {
      if (!added) reads.push(this.readJob<A>(store, checked[i].id!).then((job) => void existing.set(i, job!)));
    });
    await Promise.all(reads);
    return checked.map((c, i): Job<A> => {
      const known = existing.get(i);
      if (known) return known;
      // (as submit.lua decides: a due time still to come makes the job delayed)
      const runAt = c.runAt ?? (c.delay !== undefined ? submitted + c.delay : undefined);
      return {
        id: c.id!,
        task: c.task,
        group: c.group,
        args: c.args as A,
        priority: c.priority,
        subject: c.subject ?? '',
        submitter: c.submitter ?? '',
        state: runAt !== undefined && runAt > submitted ? 'delayed' : 'waiting',
        retries: 0,
        maxRetries: c.maxRetries,
        submitted,
        maxRuntime: c.maxRuntime,
        runAt,
      };
    });
  }

  /** Reads a job back, or null when there is none (never submitted, or removed by retention). */
  async getJob<A = unknown>(id: string): Promise<Job<A> | null> {
    checkJobId(id);
    await this.layoutChecked();
    return this.onJob(id, (s) => this.readJob<A>(s, id));
  }

  /** Job `id` as shard `store` holds it, or null. */
  private async readJob<A>(store: QueueStore, id: string): Promise<Job<A> | null> {
    const flat = (await this.client.callBuffer('HGETALL', store.keys.job(id))) as Buffer[];
    if (!flat.length) return null;
    const job = decodeJob(id, flat) as Job<A>;
    // A periodic occurrence staged ahead of time is not submitted until its occurrence.
    return (job.state as string) === 'planned' ? null : job;
  }

  /** The log lines a job's runs wrote with `ctx.log`, oldest first. */
  async jobLogs(id: string): Promise<string[]> {
    checkJobId(id);
    await this.layoutChecked();
    const logs = await this.onJob(id, async (s) => {
      const lines = await this.client.lrange(s.keys.logs(id), 0, -1);
      return lines.length > 0 ? lines : null;
    });
    return logs ?? [];
  }

  /** The first non-null answer of `call` on the stores that may hold job `id` (asked at once). */
  private async onJob<R>(id: string, call: (store: QueueStore) => Promise<R | null>): Promise<R | null> {
    const answers = await Promise.all(this.storesOf(id).map(call));
    return answers.find((a) => a !== null) ?? null;
  }

  /**
   * Cancels a job: a waiting or stuck job ends `cancelled` at once (resolves `'cancelled'`);
   * a running one has its signal aborted and ends cancelled (resolves `'cancelling'`).
   * A finished job is left alone (resolves its state); an unknown id resolves null.
   */
  async cancel(id: string): Promise<JobState | 'cancelling' | null> {
    checkJobId(id);
    return this.onJob(id, (s) => s.cancel(id));
  }

  /** Puts a failed or cancelled job back as `waiting` (retries reset); resolves its state afterwards, or null. */
  async retry(id: string): Promise<JobState | null> {
    checkJobId(id);
    return this.onJob(id, (s) => s.retry(id));
  }

  /**
   * Removes finished jobs of one final state (their record and logs): those finished at least
   * `olderThan` ms ago (by the Redis server's clock), of one `group` when given, at most `limit`.
   * Works oldest first in steps of one atomic script call each, none of which holds Redis for
   * more than a few ms, so a large clean does not stall the queue; jobs that finish meanwhile are
   * newer than the bound set by the first step and are left alone. Resolves the number removed.
   * @throws {ValidationError} when an option is bad; nothing is removed then.
   */
  async clean(opts: CleanOptions): Promise<number> {
    const { state, olderThan = 0, group, limit = Number.POSITIVE_INFINITY } = checkOptions(CLEAN_OPTIONS, opts);
    let removed = 0;
    // (shard by shard, so that `limit` holds across them)
    for (const store of group !== undefined ? this.storesOfGroup(group) : this.stores) {
      let cursor: FinishedCursor | undefined;
      do {
        const most = Math.min(CLEAN_BATCH, limit - removed);
        if (most <= 0) return removed;
        const step = await store.clean({ state, ageMs: olderThan, group, most, batch: CLEAN_BATCH }, cursor);
        removed += step.count;
        cursor = step.next;
      } while (cursor && removed < limit);
    }
    return removed;
  }

  /**
   * Puts failed jobs back as `waiting` with their retry count reset, as {@link retry} does for
   * one: those of one `group` and one `task`, when given. Works in steps as {@link clean} does;
   * only jobs that failed before the first step are retried, so one that fails again meanwhile
   * is not retried twice. Resolves the number put back.
   * @throws {ValidationError} when an option is bad; nothing is changed then.
   */
  async retryFailed(opts: RetryFailedOptions = {}): Promise<number> {
    const { group, task } = checkOptions(RETRY_FAILED_OPTIONS, opts, { optional: true });
    const shards = group !== undefined ? this.storesOfGroup(group) : this.stores;
    const counts = await Promise.all(
      shards.map(async (store) => {
        let retried = 0;
        let cursor: FinishedCursor | undefined;
        do {
          const step = await store.retryFailed({ group, task, batch: RETRY_BATCH }, cursor);
          retried += step.count;
          cursor = step.next;
        } while (cursor);
        return retried;
      }),
    );
    return counts.reduce((a, b) => a + b, 0);
  }

  /**
   * Lists jobs in a state, newest first for finished ones and in take order for waiting ones,
   * optionally of one group. At most `limit` jobs (1 to 10,000; default 50).
   * @throws {ValidationError} naming a bad option.
   */
  async jobs(options: { state: JobState; group?: string; limit?: number }): Promise<Job[]> {
    const opts = checkOptions(JOBS_OPTIONS, options);
    await this.layoutChecked();
    if (this.stores.length === 1) return this.shardJobs(this.stores[0], opts);
    const limit = opts.limit ?? 50;
    const stores = opts.group !== undefined ? this.storesOfGroup(opts.group) : this.stores;
    const parts = await Promise.all(stores.map((s) => this.shardJobs(s, opts)));
    const all = parts.flat();
    // (each shard's part is in order: merged by the same order; a stable sort keeps ties in it)
    const key = LIST_ORDER[opts.state];
    if (key) all.sort((a, b) => key(a) - key(b));
    else if (opts.state === 'waiting') all.sort(byGroupName);
    return all.slice(0, limit);
  }

  /** {@link jobs} of one shard. */
  private async shardJobs(store: QueueStore, opts: { state: JobState; group?: string; limit?: number }): Promise<Job[]> {
    const keys = store.keys;
    const limit = opts.limit ?? 50;
    let ids: string[];
    switch (opts.state) {
      case 'success':
      case 'failed':
      case 'cancelled':
        ids = await this.client.zrevrange(keys.done(opts.state), 0, opts.group ? -1 : limit - 1);
        break;
      case 'scheduled':
      case 'running': {
        const leased = await this.client.zrange(keys.leases, 0, -1);
        ids = leased.map(leaseJobId).filter((id) => id !== null);
        break;
      }
      case 'stuck':
      case 'delayed':
        // (due order; the set also holds groups parked at their rate, which are no jobs)
        ids = (await this.client.zrange(keys.delayed, 0, -1)).filter((id) => !id.startsWith(GROUP_DUE_MARK));
        break;
      case 'waiting': {
        const groups = opts.group ? [opts.group] : [...(await readGroupStates(this.client, keys.groups)).keys()].sort();
        ids = [];
        for (const g of groups) {
          if (ids.length >= limit) break;
          const gk = keys.group(g);
          const [r, h, l] = await Promise.all([`${gk}:r`, `${gk}:h`, `${gk}:l`].map((k) => this.client.lrange(k, 0, limit - 1)));
          ids.push(...r.reverse(), ...h.reverse(), ...l.reverse());
        }
        break;
      }
      default:
        throw new ValidationError('state', `must be one of ${JOB_STATES.join(', ')}`);
    }
    const out: Job[] = [];
    for (let i = 0; i < ids.length && out.length < limit; i += 200) {
      const pipe = this.client.pipeline();
      const slice = ids.slice(i, i + 200);
      for (const id of slice) pipe.hgetallBuffer(keys.job(id));
      for (const [k, [err, obj]] of (await pipe.exec())!.entries()) {
        if (err) throw err;
        const job = decodeJobObject(slice[k], obj as Record<string, Buffer>);
        if (job && job.state === opts.state && (!opts.group || job.group === opts.group) && out.length < limit) out.push(job);
      }
    }
    return out;
  }

  /**
   * Throughput and waits of the last `windowMs` (default one minute): jobs finished per state,
   * and submit-to-start wait percentiles of jobs that succeeded in the window (sampled, at most 1,000).
   * @throws {ValidationError} when `windowMs` is not a whole number of ms from 1 to 30 days.
   */
  async stats(windowMs = 60_000): Promise<QueueStats> {
    checkValue(STATS_WINDOW, windowMs, 'windowMs');
    await this.layoutChecked();
    const now = Number((await this.client.time())[0]) * 1000;
    const since = now - windowMs;
    const finished = { success: 0, failed: 0, cancelled: 0 };
    const waits: number[] = [];
    // (each shard samples its share of the 1,000)
    const sampled = Math.ceil(1000 / this.stores.length);
    await Promise.all(
      this.stores.map(async ({ keys }) => {
        const states = ['success', 'failed', 'cancelled'] as const;
        const counted = await Promise.all(states.map((s) => this.client.zcount(keys.done(s), since, '+inf')));
        states.forEach((s, i) => {
          finished[s] += counted[i];
        });
        const sample = await this.client.zrevrangebyscore(keys.done('success'), '+inf', since, 'LIMIT', 0, sampled);
        const pipe = this.client.pipeline();
        for (const id of sample) pipe.hmget(keys.job(id), 'submitted', 'started', 'runAt');
        for (const [err, v] of (await pipe.exec()) ?? []) {
          if (err) continue;
          const [sub, start, runAt] = v as (string | null)[];
          // (a delayed job waits from its due time)
          if (sub && start) waits.push(Number(start) - Math.max(Number(sub), Number(runAt ?? 0)));
        }
      }),
    );
    const { success, failed, cancelled } = finished;
    waits.sort((a, b) => a - b);
    const pct = (p: number) =>
      waits.length ? waits[Math.min(waits.length - 1, Math.floor((p / 100) * waits.length))] : undefined;
    return {
      windowMs,
      counts: await this.counts(),
      finished: { success, failed, cancelled },
      perSecond: (success + failed + cancelled) / (windowMs / 1000),
      waitMs: { p50: pct(50), p90: pct(90), p99: pct(99), max: waits.at(-1) },
    };
  }

  /** Number of jobs per state (finished jobs counted until retention removes them). */
  async counts(): Promise<Record<JobState, number>> {
    await this.layoutChecked();
    const raws = await Promise.all(this.shardKeys.map((k) => this.client.hgetall(k.counts)));
    const out = {} as Record<JobState, number>;
    for (const s of JOB_STATES) out[s] = raws.reduce((n, raw) => n + Number(raw[s] ?? 0), 0);
    return out;
  }

  /**
   * The groups that have jobs waiting, running or stuck, or settings of their own (paused, a
   * limit, a weight), with their depth, running and stuck jobs and settings, sorted by name.
   * Running jobs are counted from the leases held (one read per job holding a lease).
   * A group with neither is not kept: groups can come and go by the million.
   */
  async groups(): Promise<GroupInfo[]> {
    await this.layoutChecked();
    const parts = await Promise.all(this.stores.map((s) => this.shardGroups(s)));
    // A group lives in its shard; its periodic runs (home shard) and fan-out children (their
    // parent's shard) may be elsewhere: their counts add up, its settings are its shard's.
    const merged = new Map<string, GroupInfo>();
    parts.forEach((part, shard) => {
      for (const g of part) {
        const seen = merged.get(g.group);
        if (!seen) merged.set(g.group, g);
        else {
          const own = shardOfGroup(g.group, this.shards) === shard ? g : seen;
          merged.set(g.group, {
            ...own,
            waiting: seen.waiting + g.waiting,
            running: seen.running + g.running,
            stuck: seen.stuck + g.stuck,
          });
        }
      }
    });
    return [...merged.values()].sort(byGroupName);
  }

  /** {@link groups} of one shard. */
  private async shardGroups(store: QueueStore): Promise<GroupInfo[]> {
    // Runs in progress are counted from the leases: a group keeps its own count only while it
    // has a limit, and a group with runs but nothing waiting is not in the hash.
    const [states, running] = await Promise.all([readGroupStates(this.client, store.keys.groups), store.running()]);
    const names = new Set([...states.keys(), ...running.keys()]);
    return [...names].map((group) => {
      const g = states.get(group) ?? EMPTY_GROUP;
      return {
        group,
        // The preferred list holds released jobs (waiting) and due stuck jobs.
        waiting: g.nh + g.nl + Math.max(0, g.nr - g.stuck),
        running: running.get(group) ?? 0,
        stuck: g.stuck,
        paused: g.paused === 1,
        limit: g.limit,
        weight: g.weight,
        rate: g.rate > 0 ? { max: g.rate, perMs: g.per } : null,
      };
    });
  }

  /** Stops handing out the group's jobs (running ones go on) until {@link resumeGroup}. */
  async pauseGroup(group: string): Promise<void> {
    await this.setGroup(group, { paused: true });
  }

  /** Lets executors take the group's jobs again. */
  async resumeGroup(group: string): Promise<void> {
    await this.setGroup(group, { paused: false });
  }

  /**
   * Sets a group's concurrency limit (jobs running at once across all executors; 0 lifts it),
   * its weight (turns per round-robin round, default 1) and its rate limit (at most `max` of its
   * jobs start in any window of `perMs` ms, across all executors; null lifts it). The limits
   * combine: a group takes what all of them allow. A group at its rate leaves the round-robin
   * rotation until its window frees. A group keeps a count of its runs
   * only while it has a limit, so that ending a run of any other group costs no group update:
   * setting a limit where there was none counts the runs in progress (one read per job holding a
   * lease, in the same atomic call).
   * @throws {ValidationError} naming the bad option; nothing is written then.
   * @example
   * await queue.setGroupLimit('tenant-42', { rate: { max: 10, perMs: 1000 } }); // 10 starts a second
   */
  async setGroupLimit(
    group: string,
    options: { concurrency?: number; weight?: number; rate?: { max: number; perMs: number } | null },
  ): Promise<void> {
    const opts = checkOptions(GROUP_LIMIT_OPTIONS, options);
    const change: GroupChange = {};
    if (opts.rate !== undefined) change.rate = checkRate(opts.rate);
    if (opts.concurrency !== undefined) change.limit = opts.concurrency;
    if (opts.weight !== undefined) change.weight = opts.weight;
    await this.setGroup(group, change);
  }

  private async setGroup(group: string, change: GroupChange): Promise<void> {
    this.check({ task: 'x', group });
    // (its periodic runs, in the home shard, follow the same settings)
    await Promise.all(this.storesOfGroup(group).map((s) => s.group(group, change)));
  }

  /** Live executors (whose heartbeat has not expired). */
  async workers(): Promise<WorkerInfo[]> {
    await this.layoutChecked();
    // Registry expiries are the Redis server's clock (heartbeat.lua), so compare with it.
    const [sec, usec] = await this.client.time();
    const now = Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
    // (an executor registers in every shard: each lists it once)
    const out = new Map<string, WorkerInfo>();
    for (const keys of this.shardKeys) {
      const ids = (await this.client.zrangebyscore(keys.workers, now, '+inf')).filter((id) => !out.has(id));
      if (ids.length === 0) continue;
      const infos = await this.client.mget(ids.map((id) => keys.worker(id)));
      ids.forEach((id, i) => {
        const raw = infos[i];
        if (raw) out.set(id, { id, ...(JSON.parse(raw) as Omit<WorkerInfo, 'id'>) });
      });
    }
    return [...out.values()];
  }

  /**
   * State changes as they happen, from the capped events stream (of each shard). Pass `from` (an
   * event's `streamId`) to resume after it; by default only new events are read. A sharded
   * queue's events come in order within each shard, and their `streamId` holds each shard's place.
   */
  events(options: { from?: string; signal?: AbortSignal } = {}): AsyncIterable<QueueEvent> {
    const opts = checkOptions(EVENTS_OPTIONS, options, { optional: true });
    return readShardEvents(
      this.connection,
      this.shardKeys.map((k) => k.events),
      opts,
    );
  }

  /** Sends the submit() calls still pending, then closes the connection Rota opened (a client that was passed in is left open). */
  async close(): Promise<void> {
    await Promise.all(this.submits.map((b) => b.drain()));
    if (!this.owned) return;
    // (QUIT would wait for a connection that is not there: an outage, refused credentials)
    if (this.client.status === 'ready') await this.client.quit().catch(() => this.client.disconnect());
    else this.client.disconnect();
  }
}

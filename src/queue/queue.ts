/**
 * The client side of a queue: submit jobs, read them back, cancel them, steer groups. The reads
 * are ./reader.ts's and the submits ./submitter.ts's; the admin calls (cancel, retry, clean, group
 * settings) are here.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { ValidationError } from '../errors.js';
import { checkOptions, type OptionsOf, text, whole } from '../options.js';
import { BatchStore } from '../redis/batch-store.js';
import { type ConnectionOption, connect } from '../redis/connection.js';
import { JobReadStore } from '../redis/job-read-store.js';
import { checkQueueName, type QueueKeys } from '../redis/keys.js';
import { type FinishedCursor, type GroupChange, QueueStore } from '../redis/queue-store.js';
import { checkShards, shardNumbers, shardOfGroup, shardOfId, shardsOfGroup } from '../redis/shards.js';
import { Batch, type BatchOptions, type BatchStatus, checkBatchId, packBatch } from './batch.js';
import { CrossRelay, childShard, parseQueueRef, queueRef, shardCounts } from './cross.js';
import type { QueueEvent } from './events.js';
import { submitCommitted } from './fanout.js';
import { chainFlow, type FlowChildSpec, type FlowNode, type FlowSpec, flowQueues, packFlowTree } from './flow.js';
import { FINAL_STATES, type Job, type JobState } from './job.js';
import { type BulkResult, JobActions, type JobTarget } from './job-actions.js';
import { QUEUE_OPTIONS, type QueueOptions, replication } from './options.js';
import {
  checkJobId,
  type EventsOptions,
  firstAnswer,
  type GroupInfo,
  type JobsOptions,
  QueueReader,
  type QueueStats,
  shardsOfJob,
  type WorkerInfo,
} from './reader.js';
import { newJobId, Submitter } from './submitter.js';
import type { JobOf, SubmitOf, TaskName, UntypedTasks } from './tasks.js';
import { startSubmitSpan } from './tracing.js';
import { type CheckedSpec, checkRate, type SubmitSpec } from './validate.js';

/**
 * Most members of a finished-state set that one step of a clean, or of a bulk retry, visits: each
 * step is one script call, and these keep one under 5 ms of Redis CPU (a retry costs more than a
 * removal: it puts the job back in its group; benchmarks/probes/clean-cost.ts, docs/decisions/0024).
 */
export const CLEAN_BATCH = 250;
export const RETRY_BATCH = 150;

const group = text(200).optional();
/** What {@link Queue.clean} removes. */
const CLEAN_OPTIONS = {
  /** The final state of the jobs to remove. */
  state: z.enum(['success', 'failed', 'cancelled'], {
    error: `must be one of ${[...FINAL_STATES].join(', ')} (a final state)`,
  }),
  /** Only jobs finished at least this many ms ago; default 0 (all). */
  olderThan: whole(0, Number.MAX_SAFE_INTEGER, 'ms').default(0),
  /** Only this group's jobs. */
  group,
  /** Most jobs removed (at least 1); default all. */
  limit: whole(1, Number.MAX_SAFE_INTEGER).optional(),
};

/** What {@link Queue.clean} removes. */
export type CleanOptions = OptionsOf<typeof CLEAN_OPTIONS>;

/** What {@link Queue.retryFailed} puts back. */
const RETRY_FAILED_OPTIONS = {
  /** Only this group's jobs. */
  group,
  /** Only jobs of this task. */
  task: text(200).optional(),
};

/** What {@link Queue.retryFailed} puts back. */
export type RetryFailedOptions = OptionsOf<typeof RETRY_FAILED_OPTIONS>;

const GROUP_LIMIT_OPTIONS = {
  concurrency: whole(0, 1_000_000).optional(),
  weight: whole(1, 1000).optional(),
  rate: z.unknown().optional(),
};

/** A job of {@link Queue.jobTree}, and its children (read ones). */
export interface JobTreeNode {
  job: Job;
  /** The queue the job is in, when not the tree's root's (a flow's child in another queue, and its children). */
  queue?: string;
  children?: JobTreeNode[];
  /** Some children were not read (past the limit). */
  more?: boolean;
}

const CANCEL_OPTIONS = { children: z.boolean().optional() };

/** Whether `name` is a valid queue name (an invalid one is refused by the flow's check, naming its field). */
function validQueueName(name: string): boolean {
  try {
    checkQueueName(name);
    return true;
  } catch {
    return false;
  }
}

/**
 * A queue as seen by producers and operators. With a task map `T` (`{ send: { to: string } }`),
 * submits are checked against it at compile time: a task it does not name, or args of another
 * type, do not compile.
 * @example
 * ```ts
 * const queue = new Queue('mail', { connection: 'redis://127.0.0.1:6379' });
 * const job = await queue.submit({ task: 'send', group: 'tenant-42', args: { to: 'a@b.c' } });
 * ```
 * @example
 * ```ts
 * type Tasks = { send: { to: string } };
 * const typed = new Queue<Tasks>('mail', { connection });
 * await typed.submit({ task: 'send', args: { to: 'a@b.c' } });
 * ```
 */
export class Queue<T extends object = UntypedTasks> {
  readonly name: string;
  /** The keys of the first shard (of the queue, when it has one shard); {@link Queue.shardKeys} has every shard's. */
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
  readonly maxEvents: number;
  readonly connection: ConnectionOption;
  /** Each shard's script calls (see src/redis/queue-store.ts), by shard number. */
  private readonly stores: QueueStore[];
  /** Most bytes a job's packed args may have. */
  private readonly maxArgsBytes: number;
  /** The reads (./reader.ts). */
  private readonly reader: QueueReader;
  /** The submits (./submitter.ts). */
  private readonly submitter: Submitter;
  /** The actions on many jobs (./job-actions.ts). */
  private readonly actions: JobActions;

  /**
   * @throws {@link ValidationError} naming the first bad option (or the queue name); nothing is opened then.
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
    this.maxEvents = opts.maxEvents;
    this.stores = shardNumbers(this.shards).map(
      (shard) => new QueueStore(client, name, { maxEvents: this.maxEvents, ...replicated, shard, shards: this.shards }),
    );
    this.reader = new QueueReader(name, client, this.connection, this.shards, this.stores);
    this.maxArgsBytes = opts.maxArgsBytes;
    this.submitter = new Submitter(this.shards, this.stores, this.reader, this.maxArgsBytes);
    this.actions = new JobActions(this.stores, this.shards);
    this.shardKeys = this.stores.map((s) => s.keys);
    this.keys = this.shardKeys[0];
  }

  /**
   * The stores that may hold jobs of group `group`: its shard's, and the home shard's (where its
   * periodic runs are) when the queue has more than one.
   */
  private storesOfGroup(group: string): QueueStore[] {
    return shardsOfGroup(group, this.shards).map((shard) => this.stores[shard]);
  }

  /** The first non-null answer of `call` on the stores that may hold job `id` (asked at once). */
  private onJob<R>(id: string, call: (store: QueueStore) => Promise<R | null>): Promise<R | null> {
    return firstAnswer(
      shardsOfJob(id, this.shards).map((shard) => this.stores[shard]),
      call,
    );
  }

  /** Validates a spec (throws {@link ValidationError} naming the field) and gives it an id. */
  check(spec: SubmitSpec, where = ''): CheckedSpec {
    return this.submitter.check(spec, where);
  }

  /**
   * Submits one job. With an `id` that already exists, resolves to the existing job and creates nothing.
   * With a `dedup` key that a job of the same group holds, resolves to that job, marked
   * `deduplicated` (`'replaced'` when `dedup.replace` gave it this submit's args), and creates
   * nothing (see docs/jobs.md, Deduplication).
   * The submit() calls a process makes together (in one synchronous run, or continuing from
   * replies that arrived together) go to Redis in one script call, and so do those made while
   * that call is unanswered (they go in the next); each job is still written or refused on its own.
   * @throws {@link ValidationError} when a field is bad, or the id is that of a periodic occurrence
   * staged ahead of its time; nothing is written then.
   */
  async submit<K extends TaskName<T>, A = unknown>(spec: SubmitOf<T, K, A>): Promise<JobOf<T, K, A>> {
    const checked = this.check(spec as SubmitSpec);
    const span = startSubmitSpan(this.name, [checked]);
    if (span) checked.trace = span.trace;
    const job = this.submitter.submit(checked) as Promise<JobOf<T, K, A>>;
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
   * other shards). Each job is deduplicated as {@link Queue.submit} does it, a duplicate of an earlier
   * job of the same bulk included.
   * @throws {@link ValidationError} when a field is bad, or an id is that of a periodic occurrence
   * staged ahead of its time; nothing is written then (in a bulk of several calls: nothing of
   * that call and the calls of its shard after it).
   * @throws {@link BulkSubmitError} when a call failed after other calls were written: the jobs written.
   */
  async submitBulk<K extends TaskName<T>, A = unknown>(specs: SubmitOf<T, K, A>[]): Promise<JobOf<T, K, A>[]> {
    if (!Array.isArray(specs)) throw new ValidationError('specs', 'must be an array');
    // (Array.from visits holes, which map skips: a hole is a spec that is not an object)
    const many = specs.length > 1;
    const checked = Array.from(specs, (s, i) => this.check(s as SubmitSpec, many ? `specs[${i}]` : ''));
    const span = checked.length > 0 ? startSubmitSpan(this.name, checked) : null;
    if (!span) return this.submitter.writeBulk(checked, many) as Promise<JobOf<T, K, A>[]>;
    for (const c of checked) c.trace = span.trace;
    try {
      const written = await this.submitter.writeBulk(checked, many);
      span.end();
      return written as JobOf<T, K, A>[];
    } catch (err) {
      span.end(err);
      throw err;
    }
  }

  /**
   * Calls `listener` with the jobs each submit of this Queue object wrote (submit and
   * submitBulk; not a job an existing id answered, nor jobs other processes or objects wrote),
   * once Redis has answered (a listener's throw is ignored). Answers a function that stops the calls.
   * @example
   * ```ts
   * const stop = queue.onSubmitted((jobs) => submitted.inc(jobs.length));
   * ```
   */
  onSubmitted(listener: (jobs: readonly Job[]) => void): () => void {
    const once = (jobs: readonly Job[]) => listener(jobs);
    this.submitter.onAdded.add(once);
    return () => void this.submitter.onAdded.delete(once);
  }

  /** Reads a job back, or null when there is none (never submitted, or removed by retention). */
  async getJob<A = unknown>(id: string): Promise<Job<A> | null> {
    return this.reader.getJob<A>(id);
  }

  /** The log lines a job's runs wrote with `ctx.log`, oldest first. */
  async jobLogs(id: string): Promise<string[]> {
    return this.reader.jobLogs(id);
  }

  /**
   * Cancels a job: a waiting, stuck or waiting-children job ends `cancelled` at once (resolves
   * `'cancelled'`); a running one has its signal aborted and ends cancelled (resolves
   * `'cancelling'`). A finished job is left alone (resolves its state); an unknown id resolves
   * null. With `children: true`, the children of a flow's parent or of a fan-out are cancelled
   * too, and theirs, whatever the parent's state (each as {@link Queue.cancelJobs} does, in batches).
   * @throws {@link ValidationError} naming a bad option.
   */
  async cancel(id: string, options?: { children?: boolean }): Promise<JobState | 'cancelling' | null> {
    checkJobId(id);
    const { children } = checkOptions(CANCEL_OPTIONS, options, { optional: true });
    const state = await this.onJob(id, (s) => s.cancel(id));
    if (children && state !== null) await this.cancelChildren(id);
    return state;
  }

  /** Cancels the children of `id` and theirs, level by level, a batch of ids at a time. */
  private async cancelChildren(id: string): Promise<void> {
    let parents = [id];
    while (parents.length > 0) {
      const next: string[] = [];
      for (const parent of parents) {
        const total = (await this.getJob(parent))?.children?.total ?? 0;
        const ids = Array.from({ length: total }, (_, i) => `${parent}/${i}`);
        if (ids.length > 0) await this.cancelJobs({ ids });
        // (a child with children of its own: a flow's inner node)
        const jobs = await this.reader.jobsById(ids);
        for (const job of jobs) if (job?.children) next.push(job.id);
        await this.cancelRemoteChildren(
          parent,
          jobs.flatMap((j, i) => (j ? [] : [i])),
        );
      }
      parents = next;
    }
  }

  /** Cancels children `indexes` of `parent` that are in other queues (a flow's), and theirs, in their queues. */
  private async cancelRemoteChildren(parent: string, indexes: number[]): Promise<void> {
    if (indexes.length === 0) return;
    const refs = await this.onJob(parent, async (s) => {
      const found = await s.crossChildQueues(parent, indexes);
      return found.some((r) => r !== null) ? found : null;
    });
    for (const [k, ref] of (refs ?? []).entries()) {
      if (ref === null) continue;
      const [queue, , shards] = ref.split(' ');
      const there = new Queue(queue, { connection: this.client, shards: Number(shards), maxEvents: this.maxEvents });
      try {
        await there.cancel(`${parent}/${indexes[k]}`, { children: true });
      } finally {
        await there.close();
      }
    }
  }

  /**
   * Submits a flow: a tree of jobs, written in one atomic step. A job with `children` waits in
   * state `waiting-children` until each of them has ended, then runs and reads their results with
   * `ctx.children()`; a failed child acts on its parent as its `onFailure` says (default `fail`:
   * the parent fails at once). The root's id may be given (an existing one answers the tree of
   * ids and writes nothing); its descendants get `<parent id>/<index>`, and live in the root's
   * shard, whatever their groups. Children default to their parent's group and priority. At most
   * 100,000 jobs; written in chunks of 1,000 after the root's atomic commit, as a fan-out is.
   * @throws {@link ValidationError} naming the bad field (`children[1].task`); nothing is written then.
   * @throws {@link FanOutLimitError} past 100,000 jobs.
   */
  async submitFlow(flow: FlowSpec): Promise<FlowNode> {
    const others = flowQueues(flow, this.name);
    const layouts = others.size > 0 ? await shardCounts(this.client, [...others].filter(validQueueName)) : null;
    const packed = packFlowTree(flow, this.maxArgsBytes, newJobId, {
      own: this.name,
      ownRef: (group) => queueRef(this.name, shardOfGroup(group, this.shards), this.shards),
      refOf: (queue, id, group) => {
        const shards = layouts?.get(queue) ?? 1;
        return queueRef(queue, childShard(id, group, shards), shards);
      },
    });
    const store = this.stores[shardOfGroup(packed.root.group, this.shards)];
    await store.flow(packed.rootRecord, packed.root.id, packed.total, packed.chunks);
    await submitCommitted(store, packed.root.id);
    // (children in other queues: relayed at once, best effort; else by an executor's recovery pass)
    if (layouts) await new CrossRelay(this.client, this.maxEvents).submits(store).catch(() => 0);
    return packed.tree;
  }

  /**
   * Opens a batch (Sidekiq Pro's): add jobs to it with `batch.submit` / `batch.submitBulk` over
   * time, from this process or another (`reopenBatch(batch.id)`), and from its own running jobs
   * (`ctx.batch`); then `batch.close()`. Once closed and every job has ended, `onComplete` is
   * submitted, once; when every job succeeded, `onSuccess`, once (docs/jobs.md#batches). Every job
   * of a batch lives in its group's shard (`options.group`), whatever its own group.
   * @throws {@link ValidationError} naming a bad option (`onComplete.task`); nothing is written then.
   */
  async openBatch(options?: BatchOptions<T>): Promise<Batch<T>> {
    const group = (options as { group?: unknown } | undefined)?.group;
    const id = newJobId(typeof group === 'string' ? group : 'default');
    const packed = packBatch(id, options, this.maxArgsBytes);
    const handle = this.batchHandle(id);
    await handle.store.open(id, packed.onComplete, packed.onSuccess, packed.description);
    return handle.batch;
  }

  /**
   * A handle on batch `id` (opened by any process), to add jobs to it or close it; null when
   * there is none (never opened, or expired).
   * @throws {@link ValidationError} when `id` is not a batch id.
   */
  async reopenBatch(id: string): Promise<Batch<T> | null> {
    checkBatchId(id);
    const handle = this.batchHandle(id);
    return (await handle.store.read(id)) ? handle.batch : null;
  }

  /**
   * Batch `id`'s status: its counts (total, pending, success, failed, cancelled), its times and
   * state; null when there is none.
   * @throws {@link ValidationError} when `id` is not a batch id.
   */
  async batch(id: string): Promise<BatchStatus | null> {
    checkBatchId(id);
    return this.batchHandle(id).batch.status();
  }

  private batchHandle(id: string): { store: BatchStore; batch: Batch<T> } {
    const shard = this.stores[shardOfId(id, this.shards) ?? 0];
    const store = new BatchStore(shard);
    const batch = new Batch<T>(id, {
      store,
      reads: new JobReadStore(shard),
      maxArgsBytes: this.maxArgsBytes,
      onAdded: (jobs) => {
        for (const listener of this.submitter.onAdded) {
          try {
            listener(jobs);
          } catch {}
        }
      },
    });
    return { store, batch };
  }

  /**
   * Submits a chain: each step runs once the one before it has ended, and reads its result with
   * `ctx.children()` (one child: the step before). A flow underneath (the last step is the root),
   * so a failed step fails the steps after it unless its `onFailure` says otherwise. Resolves the
   * steps' ids in their order.
   * @throws {@link ValidationError} for fewer than two steps or a bad field; nothing is written then.
   */
  async submitChain(steps: FlowChildSpec[]): Promise<string[]> {
    const ids: string[] = [];
    for (let node: FlowNode | undefined = await this.submitFlow(chainFlow(steps)); node; node = node.children?.[0]) {
      ids.unshift(node.id);
    }
    return ids;
  }

  /**
   * A job and its children, and theirs, as a tree (a flow, a fan-out): at most `limit` jobs
   * (default 1,000) read, breadth first; `more` is set on a node whose children were not all read.
   * A flow's child in another queue is read there (with its own children), and names that queue.
   */
  async jobTree(id: string, limit = 1000): Promise<JobTreeNode | null> {
    checkJobId(id);
    const top = await this.getJob(id);
    if (!top) return null;
    const root: JobTreeNode = { job: top };
    // (the other queues a tree reaches, opened once each on this queue's connection)
    const others = new Map<string, Queue>();
    try {
      let read = 1;
      const level: Array<{ node: JobTreeNode; at: Queue<T> | Queue }> = [{ node: root, at: this }];
      for (let q = 0; q < level.length && read < limit; q++) {
        const { node, at } = level[q];
        const total = node.job.children?.total ?? 0;
        const n = Math.min(total, limit - read);
        const ids = Array.from({ length: n }, (_, i) => `${node.job.id}/${i}`);
        if (node.job.continuation) ids.push(node.job.continuation);
        const jobs: Array<{ job: Job | null; at: Queue<T> | Queue }> = (await at.reader.jobsById(ids)).map((job) => ({
          job,
          at,
        }));
        read += ids.length;
        const missing = jobs.flatMap((j, i) => (j.job || i >= n ? [] : [i]));
        for (const [i, found] of await at.childrenElsewhere(node.job.id, missing, others)) jobs[i] = found;
        node.children = [];
        for (const { job, at: there } of jobs) {
          if (!job) continue;
          const child: JobTreeNode = there === this ? { job } : { job, queue: there.name };
          node.children.push(child);
          level.push({ node: child, at: there });
        }
        if (n < total) node.more = true;
      }
    } finally {
      await Promise.all([...others.values()].map((o) => o.close()));
    }
    return root;
  }

  /**
   * Children `indexes` of `parent` (a flow's, not found in this queue) that are in other queues,
   * read there: one HMGET of their queue refs, then one read per queue. `others` keeps the queues
   * opened, by name.
   */
  private async childrenElsewhere(
    parent: string,
    indexes: number[],
    others: Map<string, Queue>,
  ): Promise<Array<[number, { job: Job | null; at: Queue<T> | Queue }]>> {
    if (indexes.length === 0) return [];
    const refs = await this.onJob(parent, async (s) => {
      const found = await s.crossChildQueues(parent, indexes);
      return found.some((r) => r !== null) ? found : null;
    });
    const byQueue = new Map<Queue<T> | Queue, number[]>();
    for (const [k, ref] of (refs ?? []).entries()) {
      if (ref === null) continue;
      const { queue: name, shards } = parseQueueRef(ref);
      let there = others.get(name);
      if (!there) {
        there = new Queue(name, { connection: this.client, shards, maxEvents: this.maxEvents });
        others.set(name, there);
      }
      byQueue.set(there, [...(byQueue.get(there) ?? []), indexes[k]]);
    }
    const out: Array<[number, { job: Job | null; at: Queue<T> | Queue }]> = [];
    for (const [there, at] of byQueue) {
      const jobs = await there.reader.jobsById(at.map((i) => `${parent}/${i}`));
      out.push(...jobs.map((job, k): [number, { job: Job | null; at: Queue<T> | Queue }] => [at[k], { job, at: there }]));
    }
    return out;
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
   * @throws {@link ValidationError} when an option is bad; nothing is removed then.
   */
  async clean(opts: CleanOptions): Promise<number> {
    const { state, olderThan, group, limit = Number.POSITIVE_INFINITY } = checkOptions(CLEAN_OPTIONS, opts);
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
   * Puts failed jobs back as `waiting` with their retry count reset, as {@link Queue.retry} does for
   * one: those of one `group` and one `task`, when given. Works in steps as {@link Queue.clean} does;
   * only jobs that failed before the first step are retried, so one that fails again meanwhile
   * is not retried twice. Resolves the number put back.
   * @throws {@link ValidationError} when an option is bad; nothing is changed then.
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
   * Deletes a job: its record, logs and every other key of it, and its place in its group's list
   * or its state's set. A scheduled or running job is not deleted (its executor holds a lease on
   * it): cancel it, and delete it once it ended. A fan-out child deleted before it ended counts
   * as cancelled on its parent. Resolves `'deleted'`, the state of a job left as it was, or null
   * when there is no such job.
   * @throws {@link ValidationError} when `id` is no job id.
   */
  async deleteJob(id: string): Promise<'deleted' | JobState | null> {
    const o = await this.actions.one('delete', id);
    return o === 'done' ? 'deleted' : (o as JobState | null);
  }
  /**
   * Deletes jobs as {@link Queue.deleteJob} does: those given by `ids`, or every job of a filter's
   * state (not scheduled or running), group and task, at most `limit`. Works in steps of one
   * atomic script call of at most 500 jobs each (a filter is walked a page of the job list at a
   * time), so that no call holds Redis for long. Resolves what it did: jobs deleted, jobs left by
   * their state, ids that named no job.
   * @throws {@link ValidationError} when the target is bad; nothing is deleted then.
   * @example
   * ```ts
   * await queue.deleteJobs({ ids: ['a', 'b'] });
   * await queue.deleteJobs({ state: 'failed', group: 'tenant-42' });
   * ```
   */
  async deleteJobs(target: JobTarget): Promise<BulkResult> {
    return this.actions.run('delete', target);
  }
  /**
   * Runs a delayed or stuck job now: it becomes `waiting` at the front of its priority's list in
   * its group (the next of its priority to be taken; a stuck job keeps its retry count). Resolves
   * its state afterwards (`'waiting'` when promoted; a job in another state is left as it is), or
   * null when there is no such job.
   * @throws {@link ValidationError} when `id` is no job id.
   */
  async promote(id: string): Promise<JobState | null> {
    const o = await this.actions.one('promote', id);
    return o === 'done' ? 'waiting' : (o as JobState | null);
  }
  /**
   * Promotes delayed and stuck jobs as {@link Queue.promote} does: those given by `ids`, or every job of
   * a filter (state `delayed` or `stuck`), in steps as {@link Queue.deleteJobs} works.
   * @throws {@link ValidationError} when the target is bad; nothing is changed then.
   */
  async promoteJobs(target: JobTarget): Promise<BulkResult> {
    return this.actions.run('promote', target);
  }
  /**
   * Cancels jobs as {@link Queue.cancel} does: those given by `ids`, or every job of a filter (state
   * waiting, delayed, stuck, scheduled or running), in steps as {@link Queue.deleteJobs} works.
   * @throws {@link ValidationError} when the target is bad; nothing is changed then.
   */
  async cancelJobs(target: JobTarget): Promise<BulkResult> {
    return this.actions.run('cancel', target);
  }
  /**
   * Puts failed and cancelled jobs back as {@link Queue.retry} does: those given by `ids`, or every job
   * of a filter (state failed or cancelled), in steps as {@link Queue.deleteJobs} works.
   * @throws {@link ValidationError} when the target is bad; nothing is changed then.
   */
  async retryJobs(target: JobTarget): Promise<BulkResult> {
    return this.actions.run('retry', target);
  }
  /**
   * Lists jobs in a state, newest first for finished ones, in take order for waiting ones and in
   * submit order for those waiting for children, optionally of one group. At most `limit` jobs
   * (1 to 10,000; default 50).
   * @throws {@link ValidationError} naming a bad option.
   */
  async jobs(options: JobsOptions): Promise<Job[]> {
    return this.reader.jobs(options);
  }

  /**
   * Throughput and waits of the last `windowMs` (default one minute): jobs finished per state,
   * and submit-to-start wait percentiles of jobs that succeeded in the window (sampled, at most 1,000).
   * @throws {@link ValidationError} when `windowMs` is not a whole number of ms from 1 to 30 days.
   */
  async stats(windowMs = 60_000): Promise<QueueStats> {
    return this.reader.stats(windowMs);
  }

  /** Number of jobs per state (finished jobs counted until retention removes them). */
  async counts(): Promise<Record<JobState, number>> {
    return this.reader.counts();
  }

  /**
   * The groups that have jobs waiting, running or stuck, or settings of their own (paused, a
   * limit, a weight), with their depth, running and stuck jobs and settings, sorted by name.
   * Running jobs are counted from the leases held (one read per job holding a lease).
   * A group with neither is not kept: groups can come and go by the million.
   */
  async groups(): Promise<GroupInfo[]> {
    return this.reader.groups();
  }

  /** Stops handing out the group's jobs (running ones go on) until {@link Queue.resumeGroup}. */
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
   * @throws {@link ValidationError} naming the bad option; nothing is written then.
   * @example
   * ```ts
   * await queue.setGroupLimit('tenant-42', { rate: { max: 10, perMs: 1000 } }); // 10 starts a second
   * ```
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
  /**
   * Live executors (whose heartbeat has not expired), each with the jobs it holds now, read from
   * the queue's leases (at most `MAX_LEASES_READ` runs a shard) rather than its last heartbeat.
   */
  async workers(): Promise<WorkerInfo[]> {
    return this.reader.workers();
  }

  /**
   * State changes as they happen, from the capped events stream (of each shard). Pass `from` (an
   * event's `streamId`) to resume after it; by default only new events are read. A sharded
   * queue's events come in order within each shard, and their `streamId` holds each shard's place.
   */
  events(options: EventsOptions = {}): AsyncIterable<QueueEvent> {
    return this.reader.events(options);
  }

  /** Sends the submit() calls still pending, then closes the connection Rota opened (a client that was passed in is left open). */
  async close(): Promise<void> {
    await this.submitter.drain();
    if (!this.owned) return;
    // (QUIT would wait for a connection that is not there: an outage, refused credentials)
    if (this.client.status === 'ready') await this.client.quit().catch(() => this.client.disconnect());
    else this.client.disconnect();
  }
}

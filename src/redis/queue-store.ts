/**
 * The queue's storage contract: one method per Lua script of a queue (lua/<script>.lua), named
 * arguments in, a decoded reply out. Every script call of Rota's queue side goes through here, so
 * that each script's argument order and reply format is written once, beside its caller; the
 * values the two sides share by position or code come from ./wire.ts.
 *
 * Every method runs its script through the shard's {@link ScriptRunner}, which first checks, once
 * per store, that the queue holds this Rota's schema; a queue of another schema rejects every call
 * with a SchemaMismatchError.
 */

import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { RotaError } from '../errors.js';
import type { Job, JobState } from './job-codec.js';
import { type QueueKeys, queueKeys } from './keys.js';
import type { Arg, Library } from './library.js';
import { decodeEndStates, decodeTaken, packSubmits, type SubmitJob } from './queue-codec.js';
import { ScriptRunner } from './script-runner.js';
import type { ClockExpectation } from './server-clock.js';
import { stageChildren } from './side-writes.js';
import { packStrings, type StringValue } from './string-array.js';
import { CROSS, SUBMIT_ANSWER, WAKE_MEMBER } from './wire.js';

export { addRun, decodeEndStates, decodeTaken, type FlowRecord, packFlow, packSubmits, type SubmitJob } from './queue-codec.js';

/** Options of a {@link QueueStore}. */
export interface QueueStoreOptions {
  /** Length the events stream is capped at (approximately); 0 writes no events. */
  maxEvents: number;
  /** The function library to call; default Rota's own (tests pass another build). */
  library?: Library;
  /**
   * When set, each submit and finish call waits (`WAIT replicaAcks`) up to this many ms for replicas to
   * acknowledge it, and rejects with a {@link ReplicationError} when none did.
   */
  replicaTimeoutMs?: number;
  /** Replicas that must acknowledge, with a replica timeout (`WAIT n`); default 1. */
  replicaAcks?: number;
  /** The shard this store calls (default 0) of a queue of `shards` shards (default 1: unsharded). */
  shard?: number;
  shards?: number;
  /** A reshard's own store (src/queue/reshard.ts): the schema is checked, the layout is not. */
  resharding?: boolean;
}

/**
 * The answer of a submit: when it was submitted and, per job, whether it was added (false: its id
 * existed, or it was deduplicated: `deduplicated` then names the job that holds its key, by
 * position, and whether the duplicate replaced it).
 */
export type SubmitReply =
  | {
      submitted: number;
      added: boolean[];
      deduplicated?: Map<number, { id: string; replaced: boolean }>;
      reserved?: undefined;
    }
  /** Nothing was written: the job at position `reserved` (from 0) has an id reserved for a staged periodic occurrence. */
  | { submitted: number; added?: undefined; reserved: number };

/** What an executor's takes ask for, fixed for the executor (kept by it, passed to every take). */
export interface TakeSettings {
  workerId: string;
  /** `[high, low]`: the counting scheme inside a group. */
  countingScheme: readonly [number, number];
  /** Lease of a taken job, ms. */
  leaseMs: number;
}

/** The jobs a take handed out, and the next due time in `delayed` (a stuck or delayed job, or a group parked at its rate; ms, -1: none). */
export interface Taken {
  jobs: Job[];
  nextDue: number;
}

/** A taken job's lease: its id and take sequence (the lease token), and its parent when it is a fan-out child. */
export interface Leased {
  id: string;
  takeSeq?: number;
  parent?: string;
}

/** The answer of a fanout call: the parent served (null: none had children left), jobs added, chunks left. */
export interface FannedOut {
  parent: string | null;
  added: number;
  left: number;
}

/** What a finish call does besides ending its runs, fixed for the executor. */
export interface FinishSettings extends TakeSettings {
  /** Base of the retry backoff, ms. */
  retryDelay: number;
}

/** The answer of a finish: its time, each run's end state ('' refused: its lease was lost), and what it took. */
export interface Finished extends Taken {
  finishedAt: number;
  states: Array<JobState | ''>;
  /**
   * With a replica timeout: why the call, applied by the primary, is not known to be on the
   * replicas (a {@link ReplicationError}, or the WAIT's own failure). Its outcomes are to be sent
   * again; the jobs it took are the executor's all the same (leased to it on the primary).
   */
  unreplicated?: Error;
}

/** The answer of a start: its time, the runs whose lease was lost, and periodic runs dropped by their tolerance. */
export interface Started {
  startedAt: number;
  lost: string[];
  dropped: string[];
}

/** Settings of a recovery pass. */
export interface RecoverOptions {
  retryDelay: number;
  /** Most expired leases handled. */
  maxLeases: number;
  /** Also end the runs still marked with this executor id (it restarted under it). */
  ownWorkerId?: string;
  /** Keep ages of finished jobs, ms (-1: forever). */
  keepSucceededAgeMs: number;
  keepFailedAgeMs: number;
  /** Most finished jobs removed per state. */
  maxRemoved: number;
  /**
   * Expired leases are left alone while Redis has been up for less than this (ms), when given,
   * and within this of a forward jump of the server's clock (includes/clock.lua).
   */
  leaseMs?: number;
  /** The server time the executor expects, to notice a jump of the server's clock (read with `leaseMs` only). */
  expect?: ClockExpectation | null;
}

/** A group's settings to change. */
export interface GroupChange {
  paused?: boolean;
  /** Concurrency limit; 0 lifts it. */
  limit?: number;
  weight?: number;
  /** Rate limit: at most `max` starts in any `perMs` ms; null lifts it. */
  rate?: { max: number; perMs: number } | null;
}

/** An executor's registry entry, as a heartbeat writes it. */
export interface Beat {
  workerId: string;
  leaseMs: number;
  /** Registry entry time to live, ms. */
  ttlMs: number;
  /** Executor info (host, pid, started, concurrency, running, version, tasks), stored as JSON. */
  info: object;
  /** The runs it holds, whose leases are extended. */
  held: ReadonlyArray<{ id: string; token: string }>;
  /** The server time the executor expects, to notice a jump of the server's clock (includes/clock.lua). */
  expect?: ClockExpectation | null;
}

/**
 * Where a walk over a finished-state set is (see lua/includes/finishedScan): jobs finished at or
 * before `until` (ms), from score `score` on, past `skip` kept members of that score.
 */
export interface FinishedCursor {
  until: string;
  score: string;
  skip: number;
}

/** A walk's position as its scripts take it (ARGV: until, score, skip); none: the first step. */
function cursorArgs(cursor: FinishedCursor | undefined): [string, string, number] {
  return cursor ? [cursor.until, cursor.score, cursor.skip] : ['', '-inf', 0];
}

/** One step of a walk over a finished-state set: the jobs it acted on, and where the next step starts (absent: the walk is over). */
export interface WalkStep {
  count: number;
  next?: FinishedCursor;
}

/** One step of a clean. */
export interface CleanStep {
  state: 'success' | 'failed' | 'cancelled';
  /** Jobs finished at least this many ms ago (read by the first step). */
  ageMs: number;
  /** Only this group's jobs, when given. */
  group?: string;
  /** Most jobs removed in this step; reaching it ends the walk. */
  most: number;
  /** Most members of the set visited. */
  batch: number;
}

/** One step of a bulk retry of failed jobs. */
export interface RetryFailedStep {
  group?: string;
  task?: string;
  /** Most members of the failed set visited. */
  batch: number;
}

type RawWalk = [number, string, string?, number?];

/** A walk step's answer: its count, and its next cursor when the walk goes on. */
function walkStep([count, until, score, skip]: RawWalk): WalkStep {
  return { count: Number(count), next: score === undefined ? undefined : { until, score, skip: Number(skip) } };
}

type RawTake = [Array<Buffer | number | null>, Buffer | number];

/**
 * One queue shard's script calls on one client.
 * @example
 * ```ts
 * const store = new QueueStore(client, 'mail', { maxEvents: 10_000 });
 * const { jobs } = await store.take(10, { workerId: 'w1', countingScheme: [2, 1], leaseMs: 30_000 });
 * ```
 */
export class QueueStore {
  readonly keys: QueueKeys;
  /** The shard's script calls (schema check, FCALL, WAIT): the stores built on this one run theirs through it. */
  readonly scripts: ScriptRunner;
  /** The events stream's cap (approximate length; 0: no events). */
  readonly maxEvents: number;

  constructor(
    readonly client: Redis,
    readonly queue: string,
    opts: QueueStoreOptions,
  ) {
    const shards = opts.shards ?? 1;
    this.keys = queueKeys(queue, opts.shard ?? 0, shards);
    this.scripts = new ScriptRunner(client, queue, this.keys.meta, queueKeys(queue).meta, { ...opts, shards });
    this.maxEvents = opts.maxEvents;
  }

  /** Checks the queue's schema, once (see {@link SchemaGate}); later calls resolve at once. */
  async ready(): Promise<void> {
    await this.scripts.ready();
  }

  /** Calls `script` with its one key and `args` ({@link ScriptRunner.fcall}). */
  private fcall<T>(script: string, key: string, args: Arg[], buffers = false): Promise<T> {
    return this.scripts.fcall<T>(script, key, args, buffers);
  }

  /** {@link ScriptRunner.replicated}: waits for replicas when the store has a replica timeout. */
  private replicated(): Promise<void> {
    return this.scripts.replicated();
  }

  /**
   * submit.lua: adds jobs as `waiting` (a job whose id exists is left as it is), one argument for
   * the whole batch. Refuses, with a PayloadTooLargeError naming `specs`, a batch packing to more
   * than `limit` bytes; writes nothing when an id is reserved for a staged periodic occurrence.
   */
  async submit(jobs: readonly SubmitJob[], limit: number): Promise<SubmitReply> {
    const { packed, width, dedups } = packSubmits(jobs, limit);
    const args: Arg[] = [this.keys.prefix, this.maxEvents, width, packed];
    if (dedups !== '') args.push(dedups);
    const [submitted, flags, reserved, holders] = await this.fcall<[number, number[], number?, string[]?]>(
      'submit',
      this.keys.marker,
      args,
    );
    if (reserved) return { submitted, reserved: reserved - 1 };
    await this.replicated();
    const reply: SubmitReply = { submitted, added: flags.map((f) => f === SUBMIT_ANSWER.added) };
    if (holders && holders.length > 0) {
      // (flat: position from 1, holder's id)
      reply.deduplicated = new Map();
      for (let i = 0; i < holders.length; i += 2) {
        const at = Number(holders[i]) - 1;
        reply.deduplicated.set(at, { id: String(holders[i + 1]), replaced: flags[at] === SUBMIT_ANSWER.replaced });
      }
    }
    return reply;
  }

  /** take.lua: takes up to `n` jobs fairly for an executor, leased to it. */
  async take(n: number, s: TakeSettings): Promise<Taken> {
    // Binary-safe: the jobs hold their args (msgpack).
    const [flat, due] = await this.fcall<RawTake>(
      'take',
      this.keys.rotation,
      [this.keys.prefix, this.maxEvents, s.workerId, n, s.countingScheme[0], s.countingScheme[1], s.leaseMs],
      true,
    );
    return { jobs: decodeTaken(flat, s.workerId), nextDue: Number(due) };
  }

  /**
   * start.lua: marks taken jobs `running` (extending their leases to now + `leaseMs`); the runs of
   * fan-out children go last, so that their parents count them.
   */
  async start(leaseMs: number, jobs: readonly Leased[]): Promise<Started> {
    let children = 0;
    for (const j of jobs) if (j.parent !== undefined) children++;
    const args: Arg[] = [this.keys.prefix, this.maxEvents, leaseMs, children];
    for (const j of jobs) if (j.parent === undefined) args.push(j.id, String(j.takeSeq));
    if (children > 0) for (const j of jobs) if (j.parent !== undefined) args.push(j.id, String(j.takeSeq));
    const [startedAt, lost, dropped] = await this.fcall<[number, string[], string[]]>('start', this.keys.leases, args);
    return { startedAt: Number(startedAt), lost, dropped: dropped ?? [] };
  }

  /**
   * finish.lua: ends a batch of runs (built with {@link addRun}), trims the finished sets to
   * their keep counts (-1: keep all), and takes up to `take` jobs for the slots freed. The last
   * `children` runs are those of fan-out children (their parents count them); `history` (built
   * with historyFields, ./history.ts) is added to the queue's history; `tracked` lists the runs
   * of periodic tasks (flat: the run's number in `runs` from 1, its task id), whose tasks are told
   * that a run ended (a buffer-all backlog releases its next run); `dedups` lists the runs of jobs
   * with a dedup key (flat: the run's number in `runs` from 1, its group, its key), whose keys are
   * released when they end (see lua/includes/dedup); `batches` lists the runs of batch jobs (flat:
   * the run's number from 1, its batch id), whose batches count them (lua/includes/batches). A replica timeout
   * that runs out does not reject: the answer says so ({@link Finished.unreplicated}).
   */
  async finish(
    s: FinishSettings,
    keep: { succeeded: number; failed: number },
    take: number,
    runs: StringValue[],
    children = 0,
    history: StringValue[] = [],
    tracked: StringValue[] = [],
    dedups: StringValue[] = [],
    batches: StringValue[] = [],
  ): Promise<Finished> {
    const args: Arg[] = [
      this.keys.prefix,
      this.maxEvents,
      s.retryDelay,
      keep.succeeded,
      keep.failed,
      take,
      s.workerId,
      s.countingScheme[0],
      s.countingScheme[1],
      s.leaseMs,
      packStrings(runs, Infinity, 'runs'),
      children,
      history.length > 0 ? packStrings(history, Infinity, 'history') : '',
      tracked.length > 0 ? packStrings(tracked, Infinity, 'tracked') : '',
    ];
    if (dedups.length > 0 || batches.length > 0) args.push(dedups.length > 0 ? packStrings(dedups, Infinity, 'dedups') : '');
    if (batches.length > 0) args.push(packStrings(batches, Infinity, 'batches'));
    // The runs go as one argument: results are capped each, so a batch stays far below what Redis
    // takes in one argument. Binary-safe reply: the taken jobs hold their args (msgpack).
    const [at, codes, flat, due] = await this.fcall<[number, Buffer, ...RawTake]>('finish', this.keys.leases, args, true);
    const finished: Finished = {
      finishedAt: Number(at),
      states: decodeEndStates(codes.toString()),
      jobs: decodeTaken(flat, s.workerId),
      nextDue: Number(due),
    };
    // (the script was applied: what it took must reach the executor even when the WAIT fails)
    await this.replicated().catch((err: unknown) => {
      finished.unreplicated = err instanceof Error ? err : new Error(String(err));
    });
    return finished;
  }

  /**
   * fanout.lua: submits the next chunk (at most 1,000 jobs) of the committed children of fan-out
   * parent `parent`, or of the parent waiting longest when none is given.
   */
  async fanout(parent?: string): Promise<FannedOut> {
    const [id, added, left] = await this.fcall<[string | null, number, number]>('fanout', this.keys.fanouts, [
      this.keys.prefix,
      this.maxEvents,
      parent ?? '',
    ]);
    return { parent: id ?? null, added: Number(added), left: Number(left) };
  }

  /**
   * history-groups.lua: adds the runs each group ended (`counts`: group, runs, ...) to the
   * queue's per-group history of the server's minute; answers how many groups it wrote.
   */
  async addGroupHistory(counts: StringValue[]): Promise<number> {
    const packed = packStrings(counts, Infinity, 'group history');
    return Number(await this.fcall<number>('history-groups', this.keys.meta, [this.keys.prefix, packed]));
  }

  /**
   * Submits a flow: stages the jobs below its root (`chunks`, packed with packFlow in chunks,
   * parents before their children) under a fresh token, then flow.lua writes the root
   * (`root`: packFlow of the root alone) and commits the staging in one atomic step; fanout.lua
   * then submits the chunks (see ../queue/fanout.ts submitCommitted). Answers whether the root
   * was written (false: its id existed, and nothing was).
   */
  async flow(
    root: Buffer,
    rootId: string,
    total: number,
    chunks: readonly Buffer[],
  ): Promise<{ submitted: number; added: boolean }> {
    await this.ready();
    const token = `f${randomBytes(8).toString('hex')}`;
    await stageChildren(this.client, this.keys, rootId, token, total, chunks);
    const [submitted, added] = await this.fcall<[number, number]>('flow', this.keys.fanouts, [
      this.keys.prefix,
      this.maxEvents,
      root,
      token,
    ]);
    if (Number(added) < 0) throw new RotaError(`the staging of flow ${rootId} expired before its submit`);
    await this.replicated();
    return { submitted: Number(submitted), added: Number(added) === 1 };
  }

  /**
   * xsub-in.lua: receives a flow's child from another queue's outbox (`entry`, see
   * ../queue/cross.ts); answers false when it was a repeat (the child was received before).
   */
  async crossSubmit(entry: Buffer): Promise<boolean> {
    return Number(await this.fcall<number>('xsub-in', this.keys.crossIn, [this.keys.prefix, this.maxEvents, entry])) === 1;
  }

  /** xend-in.lua: delivers ends of children in other queues to their parents here; answers how many applied. */
  async crossEnds(entries: readonly Buffer[]): Promise<number> {
    return Number(await this.fcall<number>('xend-in', this.keys.meta, [this.keys.prefix, this.maxEvents, ...entries]));
  }

  /** The first `n` entries of the outbox of children to submit in other queues (`xsub`), oldest first. */
  async crossSubmitOutbox(n: number): Promise<Buffer[]> {
    return this.client.lrangeBuffer(this.keys.crossSubmits, 0, n - 1);
  }

  /** Removes a delivered entry of the `xsub` outbox (one LREM: the entries are distinct, each names its child). */
  async crossSubmitDone(entry: Buffer): Promise<void> {
    await this.client.lrem(this.keys.crossSubmits, 1, entry);
  }

  /** The first `n` entries of the outbox of child ends for parents in other queues (`xend`), oldest first. */
  async crossEndOutbox(n: number): Promise<Buffer[]> {
    return this.client.zrangeBuffer(this.keys.crossEnds, 0, n - 1);
  }

  /** Removes delivered entries of the `xend` outbox. */
  async crossEndsDone(entries: readonly Buffer[]): Promise<void> {
    if (entries.length > 0) await this.client.zrem(this.keys.crossEnds, ...entries);
  }

  /** The queue refs (`<queue> <shard> <shards>`) of children `indexes` of `parent` in other queues, null for the others. */
  async crossChildQueues(parent: string, indexes: readonly number[]): Promise<Array<string | null>> {
    if (indexes.length === 0) return [];
    return this.client.hmget(this.keys.job(parent), ...indexes.map((i) => `${CROSS.index}${i}`));
  }

  /** progress.lua: records runs' progress and lists the updates in the events stream; answers how many it wrote. */
  async progress(updates: ReadonlyArray<{ id: string; progress: number }>): Promise<number> {
    const args: Arg[] = [this.keys.prefix, this.maxEvents];
    for (const u of updates) args.push(u.id, String(u.progress));
    return Number(await this.fcall<number>('progress', this.keys.events, args));
  }

  /**
   * heartbeat.lua: registers the executor and extends its leases; answers the runs lost (by id and
   * token: a job may be held twice, see Worker) and the ids of those to cancel.
   */
  async heartbeat(b: Beat): Promise<{ lost: Array<{ id: string; token: string }>; cancel: string[]; serverNow: number }> {
    const args: Arg[] = [
      this.keys.prefix,
      b.workerId,
      b.leaseMs,
      b.ttlMs,
      JSON.stringify(b.info),
      b.expect?.at ?? '',
      b.expect?.toleranceMs ?? '',
    ];
    for (const h of b.held) args.push(h.id, h.token);
    const [flat, cancel, now] = await this.fcall<[string[], string[], number]>('heartbeat', this.keys.workers, args);
    const lost: Array<{ id: string; token: string }> = [];
    for (let i = 0; i + 1 < flat.length; i += 2) lost.push({ id: flat[i], token: flat[i + 1] });
    return { lost, cancel, serverNow: Number(now) };
  }

  /**
   * Each job's state and the lease token of its last run (null for a job that does not exist),
   * read on the shard's primary: whether a run's outcome is what ended the job.
   */
  async endedBy(ids: readonly string[]): Promise<Array<{ state: string | null; token: string | null }>> {
    const pipeline = this.client.pipeline();
    for (const id of ids) pipeline.hmget(this.keys.job(id), 'state', 'takeSeq');
    const replies = (await pipeline.exec()) ?? [];
    return ids.map((_, i) => {
      const [err, fields] = replies[i] ?? [new Error('no reply')];
      if (err) throw err;
      const [state, token] = fields as Array<string | null>;
      return { state, token };
    });
  }

  /** unregister.lua: removes the executor from the registry (its entry and its info); false when it was not registered. */
  async unregister(workerId: string): Promise<boolean> {
    return (await this.fcall<number>('unregister', this.keys.workers, [this.keys.prefix, workerId])) === 1;
  }

  /** recover.lua: ends the runs whose lease expired, drops dead executors, removes old finished jobs. */
  async recover(
    o: RecoverOptions,
  ): Promise<{ recovered: string[]; labels: Array<{ task: string; group: string }>; removed: number; serverNow: number }> {
    const [recovered, removed, now, flat] = await this.fcall<[string[], number, number, string[]]>('recover', this.keys.leases, [
      this.keys.prefix,
      this.maxEvents,
      o.retryDelay,
      o.maxLeases,
      o.ownWorkerId ?? '',
      o.keepSucceededAgeMs,
      o.keepFailedAgeMs,
      o.maxRemoved,
      o.leaseMs ?? '',
      o.expect?.at ?? '',
      o.expect?.toleranceMs ?? '',
    ]);
    const labels = recovered.map((_, i) => ({ task: String(flat[2 * i] ?? ''), group: String(flat[2 * i + 1] ?? '') }));
    return { recovered, labels, removed: Number(removed), serverNow: Number(now) };
  }

  /** cancel.lua: cancels a job; answers its state afterwards ('cancelling' for a run being aborted), or null when there is none. */
  async cancel(id: string): Promise<JobState | 'cancelling' | null> {
    const [r] = await this.fcall<string[]>('cancel', this.keys.counts, [this.keys.prefix, this.maxEvents, '', id]);
    return r === 'done' ? 'cancelled' : (r as JobState | 'cancelling') || null;
  }

  /** retry.lua: puts a failed or cancelled job back as waiting; answers its state afterwards, or null. */
  async retry(id: string): Promise<JobState | null> {
    const [r] = await this.fcall<string[]>('retry', this.keys.counts, [this.keys.prefix, this.maxEvents, '', id]);
    return r === 'done' ? 'waiting' : (r as JobState) || null;
  }

  /**
   * clean.lua: one step of a clean, from `cursor` (none: the first step); removes the jobs of
   * `c.state` finished at least `c.ageMs` ago (of `c.group` only, when given) among the members
   * it visits.
   */
  async clean(c: CleanStep, cursor?: FinishedCursor): Promise<WalkStep> {
    const raw = await this.fcall<RawWalk>('clean', this.keys.done(c.state), [
      this.keys.prefix,
      this.maxEvents,
      c.state,
      c.ageMs,
      ...cursorArgs(cursor),
      c.batch,
      c.group ?? '',
      c.most,
    ]);
    return walkStep(raw);
  }

  /**
   * retry-failed.lua: one step of a bulk retry, from `cursor` (none: the first step); puts the
   * failed jobs it visits (of `r.group` and `r.task` only, when given) back as waiting.
   */
  async retryFailed(r: RetryFailedStep, cursor?: FinishedCursor): Promise<WalkStep> {
    const raw = await this.fcall<RawWalk>('retry-failed', this.keys.done('failed'), [
      this.keys.prefix,
      this.maxEvents,
      ...cursorArgs(cursor),
      r.batch,
      r.group ?? '',
      r.task ?? '',
    ]);
    return walkStep(raw);
  }

  /** group.lua: changes a group's settings; answers whether it is in the rotation afterwards. */
  async group(group: string, change: GroupChange): Promise<boolean> {
    const args: Arg[] = [this.keys.prefix, group];
    if (change.paused !== undefined) args.push('paused', change.paused ? '1' : '0');
    if (change.limit !== undefined) args.push('limit', change.limit);
    if (change.weight !== undefined) args.push('weight', change.weight);
    if (change.rate !== undefined) args.push('rate', change.rate?.max ?? 0, 'per', change.rate?.perMs ?? 0);
    return (await this.fcall<number>('group', this.keys.rotation, args)) === 1;
  }

  /**
   * Wakes one executor blocked on the queue's wake-up marker (as the scripts do; no script of its
   * own: one ZADD).
   */
  async wake(): Promise<void> {
    await this.client.zadd(this.keys.marker, 0, WAKE_MEMBER);
  }

  /**
   * Waits on `blocking` (a connection of its own: it blocks) for the queue's wake-up marker, at
   * most `timeoutMs`; true when one was taken (BZPOPMIN), false when the wait ran out.
   */
  async waitForWake(blocking: Redis, timeoutMs: number): Promise<boolean> {
    return (await blocking.bzpopmin(this.keys.marker, (timeoutMs / 1000).toFixed(3))) !== null;
  }

  /** running.lua: the runs in progress per group (read only). */
  async running(): Promise<Map<string, number>> {
    const flat = await this.fcall<Array<string | number>>('running', this.keys.leases, [this.keys.prefix]);
    const out = new Map<string, number>();
    for (let i = 0; i < flat.length; i += 2) out.set(String(flat[i]), Number(flat[i + 1]));
    return out;
  }
}

/** Subscribes `subscriber` (a connection in subscriber mode) to the cancel channel of each of `stores`' shards. */
export async function subscribeCancels(subscriber: Redis, stores: readonly QueueStore[]): Promise<void> {
  await subscriber.subscribe(...stores.map((s) => s.keys.cancel));
}

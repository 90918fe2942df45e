/**
 * An executor: takes jobs fairly from the queue for its free slots (taker.ts), runs their handlers
 * (run.ts), and delivers their outcomes in batches (delivery.ts); the two sides meet through the
 * runs in progress, and the takes that finish calls carry. Its heartbeat, recovery pass and
 * cancel listener are separate duties (heartbeat.ts, recoverer.ts, and the subscription below).
 */

import { EventEmitter } from 'node:events';
import type { Redis } from 'ioredis';
import { SchemaMismatchError, ShardCountError } from '../errors.js';
import { checkOptions } from '../options.js';
import { Batch, batchOfJob } from '../queue/batch.js';
import type { ChildPage, Handlers } from '../queue/context.js';
import { CrossRelay } from '../queue/cross.js';
import { CONTINUATION_SUFFIX, packChildren } from '../queue/fanout.js';
import { type Job, TRACE } from '../queue/job.js';
import type { HandlersOf, UntypedTasks } from '../queue/tasks.js';
import { startRunSpan, tracingAvailable } from '../queue/tracing.js';
import { BatchStore } from '../redis/batch-store.js';
import { connect } from '../redis/connection.js';
import { JobReadStore } from '../redis/job-read-store.js';
import { checkQueueName, type QueueKeys } from '../redis/keys.js';
import { checkLibrary } from '../redis/library.js';
import { QueueStore, subscribeCancels } from '../redis/queue-store.js';
import { type ClockJump, ServerClock } from '../redis/server-clock.js';
import { shardNumbers } from '../redis/shards.js';
import { stageChildren } from '../redis/side-writes.js';
import { CONTINUATION_MARK } from '../redis/wire.js';
import { BlockWatch } from '../util/block-watch.js';
import { Dictionary } from '../util/churn.js';
import { type Health, type HealthCheck, health, LagMonitor } from '../util/health.js';
import { clearLongTimeout, type LongTimer, setLongTimeout } from '../util/long-timer.js';
import { Delivery } from './delivery.js';
import { Heartbeat, type HeldJob } from './heartbeat.js';
import { isolatedSpec } from './isolated.js';
import { shardOf } from './job-shard.js';
import {
  CLOSE_OPTIONS,
  type CloseOptions,
  checkHandlers,
  type ExecutorSettings,
  executorSettings,
  type WorkerOptions,
} from './options.js';
import { Pool, type PoolStats } from './pool.js';
import { Recoverer } from './recoverer.js';
import type { WorkerEvents } from './reports.js';
import { type Outcome, Run, type RunHooks } from './run.js';
import { Taker } from './taker.js';

export { LeaseLostError } from '../errors.js';
export type { Health, HealthCheck } from '../util/health.js';
export type { CloseOptions, JobLogger, WorkerOptions } from './options.js';
export type { PoolStats } from './pool.js';
export type { RecoveredJob } from './recoverer.js';
export type { WorkerEvents } from './reports.js';

/** How long close() waits for Redis to take its last acknowledgements and releases. */
const CLOSE_FLUSH_MS = 5000;

/** Resolves true when `p` settles within `ms`, false otherwise. */
function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: LongTimer | undefined;
  return Promise.race([
    p.then(
      () => true,
      () => true,
    ),
    new Promise<boolean>((resolve) => (timer = setLongTimeout(() => resolve(false), ms))),
  ]).finally(() => clearLongTimeout(timer));
}

/**
 * An executor of queue `name`. With a task map `T` (`{ send: { to: string } }`), each handler's
 * `args` has its task's type, and a handler for a task the map does not name does not compile;
 * it may handle only some of the map's tasks.
 * @example
 * ```ts
 * const worker = new Worker('mail', {
 *   send: async ({ args, signal, log }) => { log('sending to', args.to); return 'ok'; },
 * }, { connection: 'redis://127.0.0.1:6379', concurrency: 10 });
 * ```
 * @example
 * ```ts
 * type Tasks = { send: { to: string } };
 * new Worker<Tasks>('mail', { send: async ({ args }) => deliver(args.to) }, { connection });
 * ```
 */
export class Worker<T extends object = UntypedTasks> extends EventEmitter<WorkerEvents> {
  readonly id: string;
  readonly name: string;
  readonly keys: QueueKeys;
  /** The queue's shard count. */
  readonly shards: number;
  private readonly opts: ExecutorSettings;
  private readonly handlers: Handlers;
  private readonly client: Redis;
  /** Each shard's script calls, on `client`, by shard number (the home shard last: see ../redis/shards.ts). */
  private readonly stores: QueueStore[];
  private readonly subscriber: Redis;
  /** Runs in progress by job id (a plain object, not a Map: runs come and go all the time, see ../util/churn.ts). */
  private readonly runs = new Dictionary<Run>();
  /** Runs whose lease was lost: their slot is free, their late outcome is still sent (and refused). */
  private readonly lostRuns = new Set<Run>();
  private readonly taker: Taker;
  private readonly delivery: Delivery;
  /** Each shard's server clock, timed on this process's monotonic clock: notices its jumps (../redis/server-clock.ts). */
  private readonly clocks: ServerClock[];
  /** One heartbeat and one recovery duty per shard. */
  private readonly heartbeats: Heartbeat[];
  private readonly recoverers: Recoverer[];
  private loopDone: Promise<void> | null = null;
  private closing = false;
  private closed: Promise<void> | null = null;
  /** What run() resolves: the executor is up (or closed before it was). */
  private started: Promise<void> | null = null;
  /** The wait before the start is tried again, and what ends it early (close). */
  private startRetry: NodeJS.Timeout | null = null;
  private startRetryWake: (() => void) | null = null;
  /** Connections that reported an error since they were last ready (one error event per outage). */
  private readonly connDown = new Set<Redis>();
  /** What a handler's log, progress and fanOut calls write (logs batched with other side writes). */
  private readonly runHooks: RunHooks = {
    log: (j, line) => this.delivery.log(j, line),
    progress: (j, n) => this.delivery.progress(j, n),
    fanOut: async (j, items, options, trace) => {
      const children = await packChildren(j, items, options, this.opts.maxArgsBytes, trace);
      const { total, chunks, continuation } = children;
      if (total === 0 && !continuation) return 0;
      // (a continuation goes first, marked in the count: the finish writes it with the commit)
      await stageChildren(
        this.client,
        this.stores[shardOf(j)].keys,
        j.id,
        String(j.takeSeq),
        continuation ? `${total}${CONTINUATION_MARK}` : String(total),
        continuation ? [continuation, ...chunks] : chunks,
      );
      return chunks.length + (continuation ? 1 : 0);
    },
    children: async (j, offset, limit) => {
      // (a continuation reads the children of the job that fanned out)
      const source = j.id.endsWith(CONTINUATION_SUFFIX) ? j.id.slice(0, -CONTINUATION_SUFFIX.length) : j.id;
      const reads = new JobReadStore(this.stores[shardOf(j)]);
      const parent = (await reads.jobs([source]))[0];
      const counts = parent?.children ?? null;
      const n = counts ? Math.max(0, Math.min(limit, counts.total - offset)) : 0;
      const ids = Array.from({ length: n }, (_, i) => `${source}/${offset + i}`);
      const jobs = await reads.jobs(ids);
      // (children in other queues: their parent names each one's queue; read there, by queue)
      const missing = jobs.flatMap((c, i) => (c ? [] : [i]));
      const refs = await this.stores[shardOf(j)].crossChildQueues(
        source,
        missing.map((i) => offset + i),
      );
      const byRef = new Map<string, number[]>();
      refs.forEach((ref, k) => {
        if (ref !== null) byRef.set(ref, [...(byRef.get(ref) ?? []), missing[k]]);
      });
      for (const [ref, at] of byRef) {
        const found = await new JobReadStore(this.relay.store(ref)).jobs(at.map((i) => ids[i]));
        found.forEach((c, k) => {
          jobs[at[k]] = c;
        });
      }
      const items: ChildPage['items'] = [];
      for (const c of jobs) {
        if (c) items.push({ id: c.id, state: c.state, result: c.result, error: c.error });
      }
      return { counts, items };
    },
    batch: (j) => {
      const id = batchOfJob(j);
      if (id === undefined) return undefined;
      const store = this.stores[shardOf(j)];
      // (a job of the batch adds as its member, under its lease; a callback only reads)
      const member = j.batch === id ? { id: j.id, token: String(j.takeSeq) } : undefined;
      return new Batch(
        id,
        { store: new BatchStore(store), reads: new JobReadStore(store), maxArgsBytes: this.opts.maxArgsBytes },
        member,
      );
    },
    began: (j) => {
      if (this.listenerCount('started') > 0) this.emit('started', { ...j, state: 'running' });
    },
    trace: tracingAvailable ? (j) => startRunSpan(this.name, j, (j as { [TRACE]?: string })[TRACE]) : undefined,
  };
  /** Relays flow children's ends to parents in other queues (../queue/cross.ts). */
  private readonly relay: CrossRelay;
  /** The relays of child ends in flight, by shard, and the shards with ends since theirs began. */
  private readonly relaying = new Map<number, Promise<void>>();
  private readonly relayAgain = new Set<number>();
  private readonly startedAt = Date.now();
  /** The start-up passed: the schema matched and the library loaded. */
  private up = false;
  private readonly lag = new LagMonitor();
  /** The pools of the isolated tasks (./isolated.ts), by task. */
  private readonly pools: Pool[] = [];
  private readonly isolatedTasks = new Set<string>();
  /** Warns of a main loop held longer than a third of the lease, naming the in-process tasks running. */
  private readonly blockWatch: BlockWatch;
  private blockWarnedAt = Number.NEGATIVE_INFINITY;

  /**
   * @throws {@link ValidationError} naming the first bad option, handler or the queue name; nothing is
   * opened then.
   */
  constructor(name: string, handlers: NoInfer<HandlersOf<T>>, workerOptions: WorkerOptions) {
    super();
    checkQueueName(name);
    const opts = executorSettings(workerOptions);
    this.handlers = checkHandlers(handlers);
    this.opts = opts;
    for (const [task, h] of Object.entries(this.handlers)) {
      const spec = isolatedSpec(h);
      if (!spec) continue;
      const pool = new Pool(task, spec, opts.concurrency, opts.graceMs);
      this.pools.push(pool);
      this.isolatedTasks.add(task);
      this.handlers[task] = (ctx) => pool.run(ctx);
    }
    const blockWarnMs = opts.leaseMs / 3;
    this.runHooks.blockWarnMs = opts.logger ? blockWarnMs : undefined;
    this.runHooks.blocked = (job, ms) => {
      this.blockWarnedAt = performance.now();
      this.blocked(ms, [job.task]);
    };
    this.blockWatch = new BlockWatch(
      blockWarnMs,
      () => this.inProcessTasks(),
      (ms, tasks) => {
        // (a block a handler call already reported)
        if (performance.now() - this.blockWarnedAt > ms) this.blocked(ms, tasks);
      },
    );
    this.name = name;
    this.shards = opts.shards;
    this.id = opts.id;
    this.client = connect(opts.connection, { blocking: true }).client;
    this.stores = shardNumbers(this.shards).map(
      (shard) =>
        new QueueStore(this.client, name, { maxEvents: opts.maxEvents, ...opts.replication, shard, shards: this.shards }),
    );
    this.keys = this.stores[0].keys;
    this.relay = new CrossRelay(this.client, opts.maxEvents);
    const settings = {
      workerId: this.id,
      countingScheme: opts.countingScheme,
      leaseMs: opts.leaseMs,
      retryDelay: opts.retryDelay,
    };
    const onError = (err: unknown) => this.emitError(err);
    this.clocks = this.stores.map((_, shard) => new ServerClock((jump) => this.clockJumped(shard, jump)));
    this.delivery = new Delivery({
      client: this.client,
      stores: this.stores,
      settings,
      leaseMs: opts.leaseMs,
      maxResultBytes: opts.maxResultBytes,
      keep: { succeeded: opts.keepSucceeded.count, failed: opts.keepFailed.count },
      progressIntervalMs: opts.progressIntervalMs,
      unknownTaskGraceMs: opts.unknownTaskGraceMs,
      runs: this.runs,
      takes: {
        forFinishes: (shards) => this.taker.forFinishes(shards),
        carry: (shard, want, reply) => this.taker.carry(shard, want, reply),
        wakeLoop: () => this.taker.wakeLoop(),
        passedOn: () => this.taker.passedOn(),
      },
      events: this,
      logger: opts.logger,
      workerId: this.id,
      closing: () => this.closing,
      onLost: (lost) => this.abortLost(lost),
      childrenEnded: (shard) => this.relayEnds(shard),
      onError,
    });
    this.taker = new Taker({
      stores: this.stores,
      connection: opts.connection,
      settings,
      concurrency: opts.concurrency,
      fallbackWakeMs: opts.fallbackWakeMs,
      // (the home shard's clock: the due times of every shard are compared with it)
      serverNow: () => this.clocks[this.clocks.length - 1].now(),
      outcomes: this.delivery,
      running: () => this.runs.size,
      start: (job) => this.start(job),
      onError,
    });
    this.subscriber = connect(opts.connection, { blocking: true, subscriber: true }).client;
    for (const c of [this.client, ...this.taker.blocking, this.subscriber]) {
      // One error event per outage and connection (ioredis would print every reconnect attempt).
      c.on('error', (err: Error) => {
        if (this.connDown.has(c)) return;
        this.connDown.add(c);
        this.emitError(err);
      });
      c.on('ready', () => this.connDown.delete(c));
    }
    this.heartbeats = this.stores.map(
      (store, shard) =>
        new Heartbeat({
          store,
          clock: this.clocks[shard],
          workerId: this.id,
          leaseMs: opts.leaseMs,
          concurrency: opts.concurrency,
          started: this.startedAt,
          tasks: Object.keys(this.handlers),
          held: () => this.delivery.held(shard),
          running: () => this.runs.size,
          onLost: (lost) => this.abortLost(lost),
          onCancel: (ids) => this.abortRuns(ids, 'cancel'),
          onError,
        }),
    );
    this.recoverers = this.stores.map(
      (store, shard) =>
        new Recoverer({
          store,
          clock: this.clocks[shard],
          workerId: this.id,
          retryDelay: opts.retryDelay,
          everyMs: Math.max(100, Math.floor(opts.leaseMs / 2)),
          leaseMs: opts.leaseMs,
          keepSucceeded: opts.keepSucceeded,
          keepFailed: opts.keepFailed,
          onRecovered: (jobs) => this.emit('recovered', jobs),
          relay: this.relay,
          onError,
        }),
    );
    // (a failure to start is an error event)
    if (opts.autorun) this.run().catch(() => undefined);
  }

  /**
   * After a finish of children's runs: relays the ends of shard `shard`'s children whose parents
   * are in other queues at once (one relay in flight per shard, run again when more ended
   * meanwhile; what a relay misses, the recovery pass takes).
   */
  private relayEnds(shard: number): void {
    if (this.relaying.has(shard)) {
      this.relayAgain.add(shard);
      return;
    }
    const run = (async () => {
      do {
        this.relayAgain.delete(shard);
        await this.relay.ends(this.stores[shard]);
      } while (this.relayAgain.has(shard) && !this.closing);
    })()
      .catch((err: unknown) => this.emitError(err))
      .finally(() => this.relaying.delete(shard));
    this.relaying.set(shard, run);
  }

  /**
   * Starts taking jobs (done by the constructor unless `autorun: false`). Resolves once the executor
   * is up; a failure to start (Redis unreachable, the library not loadable yet) is an `error`
   * event, and the start is tried again until it succeeds or the executor is closed.
   * @throws {@link SchemaMismatchError} when the queue holds data of another schema version.
   * @throws {@link ShardCountError} when the queue has another shard count than `shards`.
   */
  run(): Promise<void> {
    if (this.loopDone) return this.started ?? Promise.resolve();
    this.subscriber.on('message', (_ch, id: string) => this.abortRuns([id], 'cancel'));
    const up = this.startUp();
    this.started = up;
    this.loopDone = up
      .then(
        () => this.taker.loop(),
        () => undefined,
      )
      .catch((err) => this.emitError(err));
    return up;
  }

  /**
   * Checks the queue's schema, loads the library, subscribes to cancels, registers the executor
   * and makes the first recovery pass; a failure is an `error` event (and a warning in the log)
   * and is tried again after a backoff (100 ms, doubling, 5 s at most) until it succeeds or the
   * executor is closed. A queue of another schema version ends it: nothing can change that.
   */
  private async startUp(): Promise<void> {
    for (let failures = 0; !this.closing; failures++) {
      try {
        for (const store of this.stores) await store.ready();
        await checkLibrary(this.client);
        await subscribeCancels(this.subscriber, this.stores);
        await Promise.all(this.heartbeats.map((h) => h.start()));
        await Promise.all(this.recoverers.map((r) => r.start()));
        this.up = true;
        this.lag.start();
        if (this.opts.logger) this.blockWatch.start();
        // (a pool that cannot start makes the executor not ready: see health())
        await Promise.all(this.pools.map((p) => p.warm()));
        return;
      } catch (err) {
        this.emitError(err);
        if (err instanceof SchemaMismatchError || err instanceof ShardCountError) throw err;
        this.opts.logger?.warn(
          { worker: this.id, err: err instanceof Error ? err.message : String(err) },
          'executor cannot start yet; trying again',
        );
        await new Promise<void>((resolve) => {
          this.startRetry = setTimeout(resolve, Math.min(100 * 2 ** failures, 5000));
          this.startRetryWake = resolve;
        });
      }
    }
  }

  /**
   * Readiness and liveness, for a probe (`rota worker --health-port`, or an app's own server);
   * it sends no Redis command: it reads what the executor knows (its connections' status, its
   * heartbeat's last answer per shard, its take loop's last iteration).
   * Ready: started (schema matched, library loaded), every connection ready, every shard's primary
   * answered its last heartbeat (within two beats, none unanswered for 2 s), registered (a beat
   * answered within the registry entry's time to live), and not closing (false from the moment
   * close() begins). Live: the take loop made progress within `stallAfterMs` (2 minutes) unless
   * it waits on runs or outcomes, and the event loop lags less than 10 s.
   */
  health(): Health {
    const now = performance.now();
    const ready: Record<string, HealthCheck> = {};
    ready.started = this.up
      ? { ok: true, detail: 'schema matched, library loaded' }
      : { ok: false, detail: 'not started yet (see the error events)' };
    const conns = [this.client, ...this.taker.blocking, this.subscriber];
    const down = conns.filter((c) => c.status !== 'ready').map((c) => c.status);
    ready.connections = {
      ok: down.length === 0,
      detail: down.length === 0 ? `${conns.length} connection(s) ready` : `not ready: ${down.join(', ')}`,
    };
    const shardChecks = this.heartbeats.map((h, i) => h.answers.check(`shard ${i}`, now));
    ready.shards = {
      ok: shardChecks.every((c) => c.ok),
      detail: shardChecks.map((c) => c.detail).join('; '),
    };
    const ttl = this.opts.leaseMs * 3;
    const unregistered = this.heartbeats.filter((h) => !(h.answers.ageMs(now) < ttl)).length;
    ready.registered = {
      ok: unregistered === 0,
      detail:
        unregistered === 0
          ? `heartbeat answered within ${ttl} ms on every shard`
          : `no heartbeat answered within ${ttl} ms on ${unregistered} shard(s)`,
    };
    ready.closing = { ok: !this.closing, detail: this.closing ? 'shutting down' : 'not shutting down' };
    if (this.pools.length > 0) {
      const failing = this.pools.map((p) => p.stats()).filter((p) => p.startError !== undefined);
      ready.pools = {
        ok: failing.length === 0,
        detail:
          failing.length === 0
            ? `${this.pools.length} isolated task pool(s) can start`
            : failing.map((p) => `task "${p.task}": its ${p.in} cannot start: ${p.startError}`).join('; '),
      };
    }
    const live: Record<string, HealthCheck> = {};
    const stallMs = this.opts.stallAfterMs;
    const { stalled, sinceMs } = this.taker.stalled(stallMs, now);
    live.takeLoop = {
      ok: !stalled,
      detail: `last iteration ${Math.round(sinceMs)} ms ago (limit ${stallMs} ms while taking or idle)`,
    };
    live.eventLoop = this.lag.check(now);
    return health(ready, live);
  }

  /**
   * @internal For tests only: sets when the take loop last made progress (performance.now() ms),
   * as a wedged loop would leave it.
   */
  setLoopProgressForTest(at: number): void {
    this.taker.lastProgress = at;
  }

  /** The pools of the isolated tasks: size, busy, restarts by cause, why a start fails. */
  poolStats(): PoolStats[] {
    return this.pools.map((p) => p.stats());
  }

  /** The main loop was held `ms` (more than a third of the lease) while runs of `tasks` ran in-process. */
  private blocked(ms: number, tasks: string[]): void {
    if (tasks.length === 0) return;
    this.opts.logger?.warn(
      { worker: this.id, tasks, blockedMs: Math.round(ms), leaseMs: this.opts.leaseMs },
      `a run of task ${tasks.map((t) => `"${t}"`).join(' or ')} held the event loop for ${Math.round(ms)} ms, ` +
        'more than a third of the lease: heartbeats wait meanwhile, so the lease may be lost; ' +
        'make the task isolated (docs/jobs.md#isolated-tasks)',
    );
  }

  /** The tasks of the runs in progress that run on this thread (not isolated). */
  private inProcessTasks(): string[] {
    const tasks = new Set<string>();
    for (const run of this.runs.values()) if (!this.isolatedTasks.has(run.job.task)) tasks.add(run.job.task);
    return [...tasks];
  }

  /** Number of jobs running now. */
  get running(): number {
    return this.runs.size;
  }

  /**
   * Most jobs the next take asks for: what frees up while one call to Redis travels (slots ×
   * round trip ÷ run time, from running means of this executor's own), at most half the slots
   * (rounded up).
   */
  get takeSize(): number {
    return this.taker.size;
  }

  /** Shard `shard`'s server clock jumped: an event and a warning; a sleep until a due time is set anew. */
  private clockJumped(shard: number, jump: ClockJump): void {
    this.taker.clockJumped();
    this.opts.logger?.warn(
      { worker: this.id, shard, jumpMs: jump.jumpMs, serverNow: new Date(jump.serverNow).toISOString() },
      `the Redis server's clock jumped ${jump.jumpMs > 0 ? 'forward' : 'back'} by ${Math.abs(jump.jumpMs)} ms`,
    );
    this.emit('clockJump', { ...jump, shard });
  }

  private emitError(err: unknown): void {
    if (this.closing && err instanceof Error && /Connection is closed/.test(err.message)) return;
    const e = err instanceof Error ? err : new Error(String(err));
    if (this.listenerCount('error') > 0) this.emit('error', e);
  }

  private start(job: Job): void {
    const run = new Run(job, this.handlers, this.runHooks, this.opts.graceMs, Boolean(job.tracker), this.runEnded);
    this.runs.set(job.id, run);
    this.delivery.started(run);
  }

  private readonly runEnded = (run: Run, outcome: Outcome): void => {
    // A run whose signal aborted (timebox, cancel, lost lease, shutdown) says nothing of how long
    // handlers take: a few hung runs would otherwise shrink and pace the takes long after them.
    if (run.began > 0 && !run.aborted) this.taker.ranFor(performance.now() - run.began);
    if (!this.isolatedTasks.has(run.job.task)) this.blockWatch.runEnded(run.job.task);
    const id = run.job.id;
    // (its last progress goes before its finish, on the same connection)
    this.delivery.progressEnded(id);
    if (this.runs.get(id) === run) this.runs.delete(id);
    else if (!this.lostRuns.delete(run)) return;
    // A lost run's outcome is sent too: the queue refuses it by its token (LeaseLostError).
    this.delivery.ended(run, outcome);
  };

  private abortRuns(ids: string[], reason: 'cancel'): void {
    for (const id of ids) this.runs.get(id)?.abort(reason);
  }

  /**
   * Aborts the runs whose lease was lost, each only when it holds that lease: the same job may
   * be held under an earlier token too (an outcome of an earlier run still being delivered),
   * whose loss says nothing of the run in progress.
   */
  private abortLost(lost: ReadonlyArray<HeldJob>): void {
    for (const { id, token } of lost) {
      const run = this.runs.get(id);
      if (!run || String(run.job.takeSeq) !== token) continue;
      run.abort('lost');
      // The queue no longer counts it as ours: free the slot now; its late outcome will be refused.
      this.runs.delete(id);
      this.lostRuns.add(run);
      this.taker.wakeLoop();
    }
  }

  /**
   * Stops taking jobs and lets running ones finish for up to `timeout` ms (default 30,000);
   * then aborts their signals and releases them to the queue without counting a retry.
   * When Redis does not answer (an outage), it gives up 5 s later and emits an error: the jobs
   * it could not acknowledge or release come back through their leases, as a failed attempt.
   * Calling it again returns the same promise.
   * Rejects with a ValidationError, closing nothing, when `timeout` is not a whole number of ms
   * from 0 to a day.
   */
  close(opts: CloseOptions = {}): Promise<void> {
    let timeout: number;
    try {
      timeout = checkOptions(CLOSE_OPTIONS, opts, { optional: true }).timeout;
    } catch (err) {
      return Promise.reject(err);
    }
    this.closed ??= this.shutdown(timeout);
    return this.closed;
  }

  private async shutdown(timeout: number): Promise<void> {
    this.closing = true;
    if (this.startRetry) clearTimeout(this.startRetry);
    this.startRetryWake?.();
    const end = Date.now() + timeout;
    this.taker.close();
    // The loop stops taking; jobs a take in flight brings back are released by it.
    await within(this.loopDone ?? Promise.resolve(), timeout);
    const pending = this.runs.values().map((r) => r.done);
    await within(Promise.allSettled(pending), Math.max(0, end - Date.now()));
    for (const run of this.runs.values()) {
      run.abort('shutdown');
      run.settleNow({ code: 'r' });
    }
    await new Promise((r) => setImmediate(r));
    for (const r of this.recoverers) r.stop();
    await Promise.allSettled(this.relaying.values());
    this.lag.stop();
    this.blockWatch.stop();
    await Promise.all(this.pools.map((p) => p.close()));
    // Acknowledge and release what we can; Redis may be unreachable, so not forever.
    const flushed = await within(
      (async () => {
        await this.delivery.flush();
        await Promise.all(this.heartbeats.map((h) => h.stop()));
      })(),
      CLOSE_FLUSH_MS,
    );
    this.taker.disconnect();
    this.subscriber.disconnect();
    if (flushed) {
      await this.client.quit().catch(() => this.client.disconnect());
      return;
    }
    this.delivery.giveUp();
    for (const h of this.heartbeats) void h.stop();
    this.emitError(
      new Error(
        `closing: Redis did not answer within ${CLOSE_FLUSH_MS} ms; ` +
          'jobs not acknowledged or released are recovered when their leases expire',
      ),
    );
    this.client.disconnect();
  }
}

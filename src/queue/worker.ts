/**
 * An executor: takes jobs fairly from the queue for its free slots, runs their handlers, and
 * acknowledges outcomes in batches. It blocks on the queue's wake-up marker while idle (no
 * polling), and wakes by itself at the next due time (a retry, a delayed job, a group's rate window)
 * and on a slow fallback timer.
 * Its heartbeat, recovery pass and cancel listener are separate duties (heartbeat.ts,
 * recoverer.ts, and the subscription below).
 */

import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import { SchemaMismatchError, ShardCountError, ValidationError } from '../errors.js';
import { startRunSpan, tracingAvailable } from '../observability/tracing.js';
import { CLOSE_OPTIONS, checkOptions, WORKER_OPTIONS } from '../options.js';
import { type ConnectionOption, connect } from '../redis/connection.js';
import { checkQueueName, type QueueKeys } from '../redis/keys.js';
import { checkLibrary } from '../redis/library.js';
import { addRun, type FinishSettings, QueueStore, type Taken } from '../redis/queue-store.js';
import { byShard, checkShards, shardNumbers } from '../redis/shards.js';
import type { StringValue } from '../redis/string-array.js';
import { OUTCOME } from '../redis/wire.js';
import { Batcher } from './batcher.js';
import { Dictionary } from './churn.js';
import type { Handlers } from './context.js';
import { packChildren, stageChildren, submitCommitted } from './fanout.js';
import { Heartbeat } from './heartbeat.js';
import { type Job, type JobState, TRACE } from './job.js';
import { MAX_LOG_LINES } from './log-limits.js';
import { clearLongTimeout, type LongTimer, setLongTimeout } from './long-timer.js';
import { DEFAULT_MAX_ARGS_BYTES, DEFAULT_MAX_EVENTS, type Durability, replication } from './options.js';
import { ProgressThrottle } from './progress.js';
import { type Keep, Recoverer } from './recoverer.js';
import { type Outcome, Run, type RunHooks } from './run.js';
import { ShardTurns } from './shard-turns.js';
import { TakePlan } from './take-plan.js';
import { TakeSizer } from './take-size.js';
import type { HandlersOf, UntypedTasks } from './tasks.js';
import { packValue } from './validate.js';

/** Executor options. */
export interface WorkerOptions {
  /** Where Redis is: a URL, ioredis options or an ioredis client. */
  connection: ConnectionOption;
  /** Jobs run at once (slots): 1 to 100,000; default 1. */
  concurrency?: number;
  /** Unique executor id (1 to 200 bytes); default `host:pid:random`. A fixed id lets a restarted executor clear its stale marks. */
  id?: string;
  /**
   * `[high, low]`: take `high` high-priority jobs, then `low` low-priority ones, per group; each 0 to
   * 1,000, not both 0; default [2, 1].
   */
  countingScheme?: [number, number];
  /**
   * Base of the retry backoff in ms (0 to a day): a failed job waits `retryDelay × 2^retries`, at
   * most 9,999,999,999,999 ms (MAX_DELAY_MS in src/redis/wire.ts); default 1000.
   */
  retryDelay?: number;
  /**
   * Lease of a taken job in ms, extended by the heartbeat every third of it: 1,000 (one second;
   * shorter leases cost a heartbeat call every few ms and are lost to any pause) to a day; default 30,000.
   */
  leaseMs?: number;
  /** Time a handler gets to return after its signal aborted, before it is abandoned: 0 to an hour; default 5,000 ms. */
  graceMs?: number;
  /**
   * Longest idle sleep before looking at the queue again anyway: 1,000 ms (an idle executor
   * otherwise polls Redis) to an hour; default 30,000 ms.
   */
  fallbackWakeMs?: number;
  /**
   * Finished successful jobs kept: newest `count` (default 10,000), each at most `age` ms (default
   * 1 day); -1 is no bound, else 0 to 10^9 jobs and up to 100 years. The count may run over by a
   * twentieth before a trim removes the excess in one step.
   */
  keepSucceeded?: Keep;
  /** Failed and cancelled jobs kept: newest `count` (default 100,000), each at most `age` ms (default 7 days); trimmed as above. */
  keepFailed?: Keep;
  /** Largest packed result stored, in bytes: 1 to 256 MiB; default 512 KiB. */
  maxResultBytes?: number;
  /** Events stream cap (see QueueOptions.maxEvents). */
  maxEvents?: number;
  /**
   * `'replicated'`: outcomes count as delivered only once a replica has them (`WAIT 1`); until
   * then they are sent again, so none is lost when a replica takes over. Default `'primary'`.
   */
  durability?: Durability;
  /** How long a `'replicated'` write waits for a replica; default 1,000 ms. */
  replicaTimeoutMs?: number;
  /** How many replicas a `'replicated'` write waits for (see QueueOptions.replicaAcks); default 1. */
  replicaAcks?: number;
  /** The queue's shard count (see QueueOptions.shards); default 1. The executor takes from every shard in turn. */
  shards?: number;
  /** Where to log job state changes (debug) and failures (warn): a pino logger or alike; default none. */
  logger?: JobLogger;
  /** Start taking jobs at once; default true. Otherwise call {@link Worker.run}. */
  autorun?: boolean;
  /**
   * Shortest time between two progress updates of a run that are written and reported
   * (ctx.progress): the first goes at once, then at most one per interval (the newest value), and
   * the last one when the run ends. 0 to an hour; default 1,000 ms.
   */
  progressIntervalMs?: number;
}

/** The part of a pino logger an executor uses. */
export interface JobLogger {
  debug(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

export interface WorkerEvents {
  /** A job ended `success`. */
  completed: [job: Job, result: unknown];
  /** A job ended `failed` (retries used up, permanent error, timeout or unknown task). */
  failed: [job: Job, error: Error];
  /** A job failed and will be retried after its backoff. */
  stuck: [job: Job, error: Error];
  /** A job ended `cancelled`. */
  cancelled: [job: Job];
  /** A running job reported progress (ctx.progress; throttled, see `progressIntervalMs`). */
  progress: [job: Job, progress: number];
  /** Something went wrong outside a handler (Redis unreachable, a refused late completion...). */
  error: [error: Error];
}

/**
 * A late completion that the queue refused because the run's lease had been lost: emitted only for
 * a run this executor started (not for a job it took and handed back unstarted, nor for the resend
 * of an outcome the queue had applied).
 */
export class LeaseLostError extends Error {
  constructor(readonly jobId: string) {
    super(`completion of job ${jobId} refused: its lease was lost (recovered or taken over by another executor)`);
    this.name = 'LeaseLostError';
  }
}

interface Finished {
  run: Run;
  outcome: Outcome;
  /** The run's start was not sent yet: the finish call applies it first. */
  unstarted?: boolean;
  /** A job taken but never started, handed back (its refusal is no lost work: nothing ran). */
  released?: boolean;
  /**
   * The state an earlier send of this outcome ended the job in, when the primary applied it but
   * the replicas were not known to have it (durability 'replicated'): a refusal of the resend
   * means the job moved on from that state since, not that the run's lease was lost.
   */
  applied?: JobState;
}

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The shard a taken job came from, kept on the job object for its start, finish and side writes. */
const SHARD = Symbol('shard');
type ShardedJob = Job & { [SHARD]?: number };

/** The shard job `job` was taken from. */
function shardOf(job: Job): number {
  return (job as ShardedJob)[SHARD] ?? 0;
}

/** The event a run's end is reported as, by the state it ended in. */
const REPORTED: Record<string, 'completed' | 'stuck' | 'failed' | 'cancelled' | undefined> = {
  success: 'completed',
  stuck: 'stuck',
  failed: 'failed',
  cancelled: 'cancelled',
};

/**
 * How long a take may go unanswered before its slots are free for other shards' takes: far past
 * any answer of a working Redis (a take holds it for well under 10 ms), short against a failover.
 * At 1 s, the takes a dead Cluster primary held stopped the healthy shards for a 500 ms stretch
 * of no starts in every run of benchmarks/probes/cluster-outage.ts; at 250 ms none was below
 * two thirds of the rate before.
 */
const LATE_TAKE_MS = 250;

/** How long close() waits for Redis to take its last acknowledgements and releases. */
const CLOSE_FLUSH_MS = 5000;

/** The finished runs, those of fan-out children last. */
function childrenLast(batch: Finished[]): Finished[] {
  return [...batch.filter((f) => f.run.job.parent === undefined), ...batch.filter((f) => f.run.job.parent !== undefined)];
}

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
 * const worker = new Worker('mail', {
 *   send: async ({ args, signal, log }) => { log('sending to', args.to); return 'ok'; },
 * }, { connection: 'redis://127.0.0.1:6379', concurrency: 10 });
 * @example
 * type Tasks = { send: { to: string } };
 * new Worker<Tasks>('mail', { send: async ({ args }) => deliver(args.to) }, { connection });
 */
export class Worker<T extends object = UntypedTasks> extends EventEmitter<WorkerEvents> {
  readonly id: string;
  readonly name: string;
  readonly keys: QueueKeys;
  private readonly opts: Required<
    Omit<
      WorkerOptions,
      | 'id'
      | 'keepSucceeded'
      | 'keepFailed'
      | 'connection'
      | 'autorun'
      | 'logger'
      | 'durability'
      | 'replicaTimeoutMs'
      | 'replicaAcks'
      | 'progressIntervalMs'
      | 'shards'
    >
  >;
  /** The queue's shard count. */
  readonly shards: number;
  private readonly handlers: Handlers;
  private readonly logger?: JobLogger;
  private readonly client: Redis;
  /** Each shard's script calls, on `client`, by shard number (the home shard last: see ../redis/shards.ts). */
  private readonly stores: QueueStore[];
  /** Which shard the next take goes to. */
  private readonly turns: ShardTurns;
  /** What every take and finish call asks for besides its size. */
  private readonly settings: FinishSettings;
  /** One connection per shard, blocked on the shard's wake-up marker while the executor sleeps. */
  private readonly blocking: Redis[];
  /** Each shard's blocking call in flight (it outlives the sleep that made it: see waitForWork). */
  private readonly watches: Array<Promise<void> | null>;
  /** Ends the sleep in progress (a shard's marker fired, close()). */
  private sleepWake: (() => void) | null = null;
  private readonly subscriber: Redis;
  /** Runs in progress by job id (a plain object, not a Map: runs come and go all the time, see churn.ts). */
  private readonly runs = new Dictionary<Run>();
  private readonly finishes: Batcher<Finished>;
  private readonly starts: Batcher<Run>;
  private readonly sideWrites: Batcher<(pipe: ReturnType<Redis['pipeline']>) => void>;
  /** One heartbeat and one recovery duty per shard. */
  private readonly heartbeats: Heartbeat[];
  private readonly recoverers: Recoverer[];
  private loopDone: Promise<void> | null = null;
  private closing = false;
  private closed: Promise<void> | null = null;
  /** Runs whose lease was lost: their slot is free, their late outcome is still sent (and refused). */
  private readonly lostRuns = new Set<Run>();
  /**
   * Outcomes whose finish call failed (Redis refused it, or did not answer): each is sent again
   * after a backoff, and its run's lease is extended by the heartbeat meanwhile, so a job runs
   * again only when its lease is truly lost.
   */
  private readonly undelivered = new Set<Finished>();
  private redeliveryTimer: NodeJS.Timeout | null = null;
  /** What run() resolves: the executor is up (or closed before it was). */
  private started: Promise<void> | null = null;
  /** The wait before the start is tried again, and what ends it early (close). */
  private startRetry: NodeJS.Timeout | null = null;
  private startRetryWake: (() => void) | null = null;
  /** close() gave up on Redis: outcomes are no longer sent again. */
  private deliveryOver = false;
  /** Finish calls failed in a row: the backoff of the next redelivery. */
  private finishFailures = 0;
  /** Connections that reported an error since they were last ready (one error event per outage). */
  private readonly connDown = new Set<Redis>();
  private waiting = false;
  private slotWaiter: (() => void) | null = null;
  /** Wakes the loop when the pace allows the next take. */
  private paceTimer: NodeJS.Timeout | null = null;
  /** Children of fan-outs this executor committed and is submitting (close() lets them finish). */
  private readonly fanOuts = new Set<Promise<void>>();
  /** Progress updates to write (throttled per run by `progress`), one progress.lua call per batch. */
  private readonly progressWrites: Batcher<{ id: string; progress: number; shard: number }>;
  private readonly progress: ProgressThrottle;
  /** What a handler's log, progress and fanOut calls write (logs batched with other side writes). */
  private readonly runHooks: RunHooks = {
    log: (j, line) =>
      this.sideWrites.add((pipe) => {
        const logs = this.stores[shardOf(j)].keys.logs(j.id);
        pipe.rpush(logs, `${new Date().toISOString()} ${line}`);
        pipe.ltrim(logs, -MAX_LOG_LINES, -1);
      }),
    progress: (j, n) => this.progress.report(j, n),
    fanOut: async (j, items, options, trace) => {
      const children = await packChildren(j, items, options, DEFAULT_MAX_ARGS_BYTES, trace);
      if (children.total > 0) await stageChildren(this.client, this.stores[shardOf(j)].keys, j, children);
      return children.total;
    },
    trace: tracingAvailable ? (j) => startRunSpan(this.name, j, (j as { [TRACE]?: string })[TRACE]) : undefined,
  };
  private readonly takeSizer: TakeSizer;
  /** When to take and how many (take-plan.ts). */
  private readonly plan: TakePlan;
  private startedAt = Date.now();

  /**
   * @throws {ValidationError} naming the first bad option, handler or the queue name; nothing is
   * opened then.
   */
  constructor(name: string, handlers: NoInfer<HandlersOf<T>>, workerOptions: WorkerOptions) {
    super();
    checkQueueName(name);
    const options = checkOptions(WORKER_OPTIONS, workerOptions) as WorkerOptions;
    this.shards = checkShards(options.shards);
    this.name = name;
    if (typeof handlers !== 'object' || handlers === null)
      throw new ValidationError('handlers', 'must map task names to functions');
    // (a snapshot: handlers are looked up in it, by own key only)
    const own: Handlers = Object.create(null);
    for (const [task, h] of Object.entries(handlers)) {
      if (typeof h !== 'function') throw new ValidationError(`handlers.${task}`, 'must be a function');
      own[task] = h as Handlers[string];
    }
    this.handlers = own;
    this.logger = options.logger;
    const concurrency = options.concurrency ?? 1;
    const scheme = options.countingScheme ?? [2, 1];
    this.opts = {
      concurrency,
      countingScheme: scheme,
      retryDelay: options.retryDelay ?? 1000,
      leaseMs: options.leaseMs ?? 30_000,
      graceMs: options.graceMs ?? 5000,
      fallbackWakeMs: options.fallbackWakeMs ?? 30_000,
      maxResultBytes: options.maxResultBytes ?? DEFAULT_MAX_ARGS_BYTES,
      maxEvents: options.maxEvents ?? DEFAULT_MAX_EVENTS,
    };
    this.takeSizer = new TakeSizer(concurrency);
    this.plan = new TakePlan({
      concurrency,
      sizer: this.takeSizer,
      fallbackWakeMs: this.opts.fallbackWakeMs,
      wakeIn: (ms) => this.wakeIn(ms),
    });
    this.id = options.id ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
    this.client = connect(options.connection, { blocking: true }).client;
    const replicated = replication(options);
    this.stores = shardNumbers(this.shards).map(
      (shard) => new QueueStore(this.client, name, { maxEvents: this.opts.maxEvents, ...replicated, shard, shards: this.shards }),
    );
    this.keys = this.stores[0].keys;
    this.turns = new ShardTurns(this.stores.length);
    this.settings = {
      workerId: this.id,
      countingScheme: this.opts.countingScheme,
      leaseMs: this.opts.leaseMs,
      retryDelay: this.opts.retryDelay,
    };
    this.blocking = this.stores.map(() => connect(options.connection, { blocking: true }).client);
    this.watches = this.stores.map(() => null);
    this.subscriber = connect(options.connection, { blocking: true, subscriber: true }).client;
    for (const c of [this.client, ...this.blocking, this.subscriber]) {
      // One error event per outage and connection (ioredis would print every reconnect attempt).
      c.on('error', (err: Error) => {
        if (this.connDown.has(c)) return;
        this.connDown.add(c);
        this.emitError(err);
      });
      c.on('ready', () => this.connDown.delete(c));
    }
    const keepSucceeded = { count: 10_000, age: 86_400_000, ...options.keepSucceeded };
    const keepFailed = { count: 100_000, age: 7 * 86_400_000, ...options.keepFailed };

    this.finishes = new Batcher((batch) => this.sendFinishes(batch, keepSucceeded.count, keepFailed.count), {
      onSent: () => this.wakeLoop(),
    });
    this.starts = new Batcher((batch) => this.sendStarts(batch));
    this.progressWrites = new Batcher(async (updates) => {
      try {
        await Promise.all(
          byShard(updates, this.stores.length, (u) => u.shard).map(([shard, part]) => this.stores[shard].progress(part)),
        );
      } catch (err) {
        this.emitError(err);
      }
    });
    const progressIntervalMs = options.progressIntervalMs ?? 1000;
    this.progress = new ProgressThrottle(progressIntervalMs, (job, n) => {
      this.progressWrites.add({ id: job.id, progress: n, shard: shardOf(job) });
      if (this.listenerCount('progress') > 0) this.emit('progress', { ...job, progress: n }, n);
    });
    this.sideWrites = new Batcher(async (writes) => {
      const pipe = this.client.pipeline();
      for (const w of writes) w(pipe);
      await pipe.exec();
    });
    this.heartbeats = this.stores.map(
      (store, shard) =>
        new Heartbeat({
          store,
          workerId: this.id,
          leaseMs: this.opts.leaseMs,
          concurrency,
          started: this.startedAt,
          held: () => this.held(shard),
          running: () => this.runs.size,
          onLost: (lost) => this.abortLost(lost),
          onCancel: (ids) => this.abortRuns(ids, 'cancel'),
          onError: (err) => this.emitError(err),
        }),
    );
    this.recoverers = this.stores.map(
      (store) =>
        new Recoverer({
          store,
          workerId: this.id,
          retryDelay: this.opts.retryDelay,
          everyMs: Math.max(100, Math.floor(this.opts.leaseMs / 2)),
          leaseMs: this.opts.leaseMs,
          keepSucceeded,
          keepFailed,
          onError: (err) => this.emitError(err),
        }),
    );
    // (a failure to start is an error event)
    if (options.autorun ?? true) this.run().catch(() => undefined);
  }

  /**
   * Starts taking jobs (done by the constructor unless `autorun: false`). Resolves once the executor
   * is up; a failure to start (Redis unreachable, the library not loadable yet) is an `error`
   * event, and the start is tried again until it succeeds or the executor is closed.
   * @throws {SchemaMismatchError} when the queue holds data of another schema version.
   * @throws {ShardCountError} when the queue has another shard count than `shards`.
   */
  run(): Promise<void> {
    if (this.loopDone) return this.started ?? Promise.resolve();
    this.subscriber.on('message', (_ch, id: string) => this.abortRuns([id], 'cancel'));
    const up = this.startUp();
    this.started = up;
    this.loopDone = up
      .then(
        () => this.loop(),
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
        await this.subscriber.subscribe(...this.stores.map((s) => s.keys.cancel));
        await Promise.all(this.heartbeats.map((h) => h.start()));
        await Promise.all(this.recoverers.map((r) => r.start()));
        return;
      } catch (err) {
        this.emitError(err);
        if (err instanceof SchemaMismatchError || err instanceof ShardCountError) throw err;
        this.logger?.warn(
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
    return this.takeSizer.size;
  }

  private emitError(err: unknown): void {
    if (this.closing && err instanceof Error && /Connection is closed/.test(err.message)) return;
    const e = err instanceof Error ? err : new Error(String(err));
    if (this.listenerCount('error') > 0) this.emit('error', e);
  }

  private async loop(): Promise<void> {
    while (!this.closing) {
      const want = this.plan.forLoop(this.runs.size, this.finishes.waiting);
      if (want > 0) {
        const shard = this.turns.next();
        this.trackTake(shard, want, this.take(shard, want), false);
        continue;
      }
      switch (this.plan.idle(this.finishes.busy)) {
        case 'back-off':
          await delay(this.plan.backOff());
          this.plan.backedOff();
          break;
        case 'finishes':
          // Their answers take for the slots their runs free, and come before a wake-up would.
          await this.finishes.drain();
          break;
        case 'sleep':
          await this.waitForWork(this.plan.sleepMs());
          this.plan.woken();
          break;
        case 'wait':
          // for a take to answer or a slot to free up (each wakes the loop)
          await this.wakeUp();
      }
    }
    // Jobs that the takes still in flight bring back are released as they come.
    while (this.plan.inFlight > 0) await this.wakeUp();
  }

  /** Resolves at the loop's next wake-up (a take answered, a slot freed, the pace allows more, close()). */
  private wakeUp(): Promise<void> {
    return new Promise<void>((resolve) => (this.slotWaiter = resolve));
  }

  /** Wakes the loop in `ms` (at least 1), unless a wake-up is set already: the pace allows the free slots' jobs then. */
  private wakeIn(ms: number): void {
    if (this.paceTimer) return;
    this.paceTimer = setTimeout(
      () => {
        this.paceTimer = null;
        this.wakeLoop();
      },
      Math.max(1, Math.ceil(ms)),
    );
  }

  /** Follows a take of `want` jobs from shard `shard`: starts the jobs it brings, and tells the plan what it found. */
  private trackTake(shard: number, want: number, reply: Promise<Taken>, quiet: boolean): void {
    const ticket = this.plan.sent(want);
    const shardTicket = this.turns.ticket(shard);
    this.turns.sent(shard);
    // A take its shard does not answer (its primary failing over) stops holding slots after a
    // while, so that the other shards' jobs go on meanwhile; what it brings late gets the slots
    // free then, and the rest is released.
    let settled = false;
    const settle = () => {
      if (settled) return;
      settled = true;
      this.plan.settled(want);
      this.wakeLoop();
    };
    const late = setTimeout(settle, LATE_TAKE_MS);
    void reply
      .then(
        ({ jobs, nextDue: due }) => {
          if (shard > 0) for (const job of jobs) (job as ShardedJob)[SHARD] = shard;
          if (this.closing) {
            // Taken while close() began: hand them back untouched.
            this.releaseTaken(jobs);
            return;
          }
          if (settled) {
            const room = Math.max(0, this.opts.concurrency - this.runs.size - this.plan.reservedSlots);
            this.releaseTaken(jobs.splice(room));
          }
          for (const job of jobs) this.start(job);
          const exhausted = this.turns.answered(shard, want, jobs.length, due, shardTicket);
          if (this.turns.isDry(shard)) this.watches[shard] ??= this.watch(shard);
          this.plan.answered(want, jobs.length, this.turns.nextDue(), ticket, exhausted);
        },
        (err: unknown) => {
          if (this.closing) return;
          if (!quiet) this.emitError(err);
          this.plan.failedTake();
        },
      )
      .finally(() => {
        clearTimeout(late);
        this.turns.settled(shard);
        settle();
      });
  }

  private take(shard: number, n: number): Promise<Taken> {
    return this.takeSizer.timed(this.stores[shard].take(n, this.settings));
  }

  /**
   * Sleeps until a shard's wake-up marker fires, or for at most `ms` (a shorter sleep ends at a
   * due time: a retry, a delayed job, a group's rate window; the shard it is in wakes then). The
   * executor watches each shard's marker from the moment the shard runs dry (see watch), so the
   * sleep only waits on those watches: an idle executor sends one blocking call per shard per
   * fallback period.
   */
  private async waitForWork(ms: number): Promise<void> {
    this.waiting = true;
    let timer: NodeJS.Timeout | undefined;
    let fallback = false;
    try {
      await new Promise<void>((resolve) => {
        this.sleepWake = resolve;
        for (let i = 0; i < this.stores.length; i++) this.watches[i] ??= this.watch(i);
        timer = setTimeout(() => {
          fallback = ms >= this.opts.fallbackWakeMs;
          resolve();
        }, ms);
      });
    } finally {
      clearTimeout(timer);
      this.sleepWake = null;
      this.waiting = false;
    }
    if (fallback) this.turns.wakeAll();
  }

  /**
   * Watches dry shard `i`'s wake-up marker (a blocking call on its own connection, renewed each
   * fallback period) until it fires, so that a shard that gets work is taken from again while
   * the other shards keep the executor busy. A wake-up ends the executor's sleep, or has the
   * loop take when slots are free; when none is, it is passed on (the marker set again) for an
   * executor that has some.
   */
  private async watch(i: number): Promise<void> {
    try {
      while (!this.closing && this.turns.isDry(i)) {
        const popped = await this.blocking[i].bzpopmin(this.stores[i].keys.marker, (this.opts.fallbackWakeMs / 1000).toFixed(3));
        if (!popped || this.closing) continue;
        this.turns.wake(i, true);
        if (this.waiting) this.sleepWake?.();
        else if (this.runs.size >= this.opts.concurrency) await this.stores[i].wake();
        else {
          this.plan.woken();
          this.wakeLoop();
        }
      }
    } catch (err) {
      if (!this.closing) {
        this.emitError(err);
        await delay(200);
        this.turns.wake(i);
        this.sleepWake?.();
      }
    } finally {
      this.watches[i] = null;
    }
  }

  private wakeLoop(): void {
    const w = this.slotWaiter;
    this.slotWaiter = null;
    w?.();
  }

  private start(job: Job): void {
    const run = new Run(job, this.handlers, this.runHooks, this.opts.graceMs, Boolean(job.tracker), this.runEnded);
    this.runs.set(job.id, run);
    this.starts.add(run);
  }

  private readonly runEnded = (run: Run, outcome: Outcome): void => {
    // A run whose signal aborted (timebox, cancel, lost lease, shutdown) says nothing of how long
    // handlers take: a few hung runs would otherwise shrink and pace the takes long after them.
    if (run.began > 0 && !run.aborted) this.takeSizer.ranFor(performance.now() - run.began);
    const id = run.job.id;
    // (its last progress goes before its finish, on the same connection)
    this.progress.end(id);
    if (this.runs.get(id) === run) this.runs.delete(id);
    else if (!this.lostRuns.delete(run)) return;
    // A lost run's outcome is sent too: the queue refuses it by its token (LeaseLostError).
    // A run that ended before its start was sent (a quick one) has both sent in one call.
    this.finishes.add({ run, outcome, unstarted: this.starts.withdraw(run) });
  };

  /** Hands jobs taken but never started back to the queue, without counting a retry. */
  private releaseTaken(jobs: Job[]): void {
    for (const job of jobs) this.finishes.add({ run: { job } as Run, outcome: { code: 'r' }, released: true });
  }

  private abortRuns(ids: string[], reason: 'cancel'): void {
    for (const id of ids) this.runs.get(id)?.abort(reason);
  }

  /**
   * Aborts the runs whose lease was lost, each only when it holds that lease: the same job may
   * be held under an earlier token too (an outcome of an earlier run still being delivered),
   * whose loss says nothing of the run in progress.
   */
  private abortLost(lost: ReadonlyArray<{ id: string; token: string }>): void {
    for (const { id, token } of lost) {
      const run = this.runs.get(id);
      if (!run || String(run.job.takeSeq) !== token) continue;
      run.abort('lost');
      // The queue no longer counts it as ours: free the slot now; its late outcome will be refused.
      this.runs.delete(id);
      this.lostRuns.add(run);
      this.wakeLoop();
    }
  }

  private async sendStarts(batch: Run[]): Promise<void> {
    await Promise.all(
      byShard(batch, this.stores.length, (r) => shardOf(r.job)).map(([shard, part]) => this.sendShardStarts(shard, part)),
    );
  }

  private async sendShardStarts(shard: number, batch: Run[]): Promise<void> {
    const jobs: Job[] = [];
    for (const r of batch) jobs.push(r.job);
    try {
      const { startedAt, lost, dropped } = await this.stores[shard].start(this.opts.leaseMs, jobs);
      for (const r of batch) r.job.started = startedAt;
      if (lost.length) {
        const gone = new Set(lost);
        const runs: Array<{ id: string; token: string }> = [];
        for (const r of batch) if (gone.has(r.job.id)) runs.push({ id: r.job.id, token: String(r.job.takeSeq) });
        this.abortLost(runs);
      }
      // Periodic runs wait for this answer: a run dropped by its task's tolerance ends cancelled unrun.
      const drop = new Set(dropped);
      for (const r of batch) r.open(!drop.has(r.job.id));
    } catch (err) {
      this.emitError(err);
      for (const r of batch) r.open(true);
    }
  }

  /**
   * Acknowledges finished runs (one call per shard they came from), and takes jobs for the slots
   * they freed: from the shard next in turn, in the same call when some of the runs are that
   * shard's (always, on an unsharded queue), in a take of its own otherwise.
   */
  private async sendFinishes(sent: Finished[], keepSucceeded: number, keepFailed: number): Promise<void> {
    const want = this.plan.forFinish(this.runs.size);
    const keep = { succeeded: keepSucceeded, failed: keepFailed };
    const parts = byShard(sent, this.stores.length, (f) => shardOf(f.run.job));
    // (every shard dry: the take rides on a finish call all the same, and costs no call of its own)
    const take = want <= 0 ? -1 : this.turns.allDry ? parts[0][0] : this.turns.next();
    if (take >= 0 && !parts.some(([shard]) => shard === take)) this.trackTake(take, want, this.take(take, want), true);
    await Promise.all(parts.map(([shard, part]) => this.sendShardFinishes(shard, part, keep, shard === take ? want : 0)));
  }

  /** Acknowledges finished runs of shard `shard`, and takes `want` jobs from it in the same call. */
  private async sendShardFinishes(
    shard: number,
    sent: Finished[],
    keep: { succeeded: number; failed: number },
    want: number,
  ): Promise<void> {
    // The runs of fan-out children go last (their parents count them).
    let children = 0;
    for (const f of sent) if (f.run.job.parent !== undefined) children++;
    const batch = children === 0 ? sent : childrenLast(sent);
    const runs: StringValue[] = [];
    for (const f of batch) {
      let payload: string | Buffer = '';
      if (f.outcome.code === OUTCOME.success || f.outcome.code === OUTCOME.fannedOut) {
        try {
          payload = packValue(f.outcome.result, this.opts.maxResultBytes, 'result');
        } catch (err) {
          f.outcome = { code: OUTCOME.permanent, error: err as Error };
        }
      }
      if (f.outcome.error) payload = f.outcome.error.stack ?? String(f.outcome.error);
      addRun(runs, f.run.job.id, String(f.run.job.takeSeq), f.outcome.code, f.unstarted ?? false, payload);
    }
    const reply = this.takeSizer.timed(this.stores[shard].finish(this.settings, keep, want, runs, children));
    if (want > 0) this.trackTake(shard, want, reply, true);
    let r: Awaited<typeof reply>;
    try {
      r = await reply;
    } catch (err) {
      this.emitError(err);
      this.redeliver(batch);
      return;
    }
    const { finishedAt: at, states } = r;
    if (r.unreplicated) {
      this.unreplicated(batch, r.unreplicated, at, states);
      return;
    }
    this.finishFailures = 0;
    batch.forEach((f, i) => {
      // a start applied by this call is stamped with its time, as the script did
      if (f.unstarted && f.applied === undefined) f.run.job.started = at;
      this.ended(f, states[i] ?? '');
    });
  }

  /**
   * A finish call the primary applied, but that the replicas are not known to have: its runs'
   * outcomes are sent again (a failover may lose them), each remembering the state it ended in;
   * those it refused are reported now (the refusal changed nothing).
   */
  private unreplicated(batch: Finished[], err: Error, at: number, states: Array<JobState | ''>): void {
    this.emitError(err);
    const again: Finished[] = [];
    batch.forEach((f, i) => {
      const state = states[i] ?? '';
      if (state === '' && f.applied === undefined) {
        this.ended(f, state);
        return;
      }
      if (f.unstarted && f.applied === undefined) f.run.job.started = at;
      if (state !== '') f.applied = state;
      again.push(f);
    });
    if (again.length > 0) this.redeliver(again);
  }

  /**
   * A run's outcome delivered: `state` is what the finish call answered for it. A refused resend
   * of an outcome applied before ends in the state that first send gave it.
   */
  private ended(f: Finished, answered: JobState | ''): void {
    const state = answered === '' && f.applied !== undefined ? f.applied : answered;
    if (f.run.fanned) this.fannedOutEnded(f, state);
    this.report(f, state);
  }

  /**
   * A run that fanned out was finished: when it succeeded, its children were committed and are
   * submitted now, chunk by chunk (the recoverer of any executor finishes the job should this one
   * die); otherwise its staged children are deleted.
   */
  private fannedOutEnded(f: Finished, state: JobState | ''): void {
    const job = f.run.job;
    if (state === 'success' && f.outcome.code === OUTCOME.fannedOut) {
      const p: Promise<void> = submitCommitted(this.stores[shardOf(job)], job.id)
        .catch((err) => this.emitError(err))
        .finally(() => this.fanOuts.delete(p));
      this.fanOuts.add(p);
    } else if (state !== '' && state !== 'success') {
      this.sideWrites.add((pipe) => pipe.del(this.stores[shardOf(job)].keys.fanStaging(job.id, String(job.takeSeq))));
    }
  }

  /**
   * The runs of shard `shard` whose leases its heartbeat extends: those running, and those whose
   * outcome waits to be delivered.
   */
  private held(shard: number): Array<{ id: string; token: string }> {
    const held: Array<{ id: string; token: string }> = [];
    for (const r of this.runs.values()) if (shardOf(r.job) === shard) held.push({ id: r.job.id, token: String(r.job.takeSeq) });
    for (const f of this.undelivered) {
      if (shardOf(f.run.job) === shard) held.push({ id: f.run.job.id, token: String(f.run.job.takeSeq) });
    }
    return held;
  }

  /** Sends `batch` again after a backoff (100 ms, doubling, 5 s at most); at once while closing. */
  private redeliver(batch: Finished[]): void {
    if (this.deliveryOver) return;
    for (const f of batch) this.undelivered.add(f);
    if (this.redeliveryTimer) return;
    const ms = this.closing ? 0 : Math.min(100 * 2 ** this.finishFailures++, 5000);
    this.redeliveryTimer = setTimeout(() => this.resendUndelivered(), ms);
  }

  private resendUndelivered(): void {
    if (this.redeliveryTimer) clearTimeout(this.redeliveryTimer);
    this.redeliveryTimer = null;
    const again = [...this.undelivered];
    this.undelivered.clear();
    for (const f of again) this.finishes.add(f);
  }

  private report(f: Finished, state: string): void {
    const job = f.run.job;
    const error = () => f.outcome.error ?? new Error('failed');
    if (this.logger && state) {
      const line = { job: job.id, task: job.task, group: job.group, state, worker: this.id };
      if (state === 'failed' || state === 'stuck')
        this.logger.warn({ ...line, err: error().message, retries: job.retries }, `job ${state}`);
      else this.logger.debug(line, `job ${state}`);
    }
    if (state === '') {
      // (a job taken but never started ran nowhere here: its refused release loses no work)
      if (!f.released) this.emitError(new LeaseLostError(job.id));
      return;
    }
    const event = REPORTED[state];
    // the job objects are built only for someone listening
    if (!event || this.listenerCount(event) === 0) return;
    const ended = state as JobState;
    if (event === 'completed') this.emit(event, { ...job, state: ended, result: f.outcome.result }, f.outcome.result);
    else if (event === 'cancelled') this.emit(event, { ...job, state: ended });
    else {
      const err = error();
      this.emit(event, { ...job, state: ended, error: err.message }, err);
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
  close(opts: { timeout?: number } = {}): Promise<void> {
    let timeout: number;
    try {
      timeout = checkOptions(CLOSE_OPTIONS, opts, { optional: true }).timeout ?? 30_000;
    } catch (err) {
      return Promise.reject(err);
    }
    this.closed ??= this.shutdown(timeout);
    return this.closed;
  }

  private async shutdown(timeout: number): Promise<void> {
    this.closing = true;
    this.plan.close();
    if (this.startRetry) clearTimeout(this.startRetry);
    this.startRetryWake?.();
    if (this.paceTimer) clearTimeout(this.paceTimer);
    const end = Date.now() + timeout;
    this.wakeLoop();
    this.sleepWake?.();
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
    // Acknowledge and release what we can; Redis may be unreachable, so not forever.
    const flushed = await within(
      (async () => {
        // (outcomes Redis refused are sent again until it takes them, or the time is up)
        do {
          this.resendUndelivered();
          await this.finishes.drain();
          if (this.undelivered.size > 0) await delay(100);
        } while (this.undelivered.size > 0 && !this.deliveryOver);
        await this.starts.drain();
        await this.sideWrites.drain();
        await this.progressWrites.drain();
        await Promise.all(this.fanOuts);
        await Promise.all(this.heartbeats.map((h) => h.stop()));
      })(),
      CLOSE_FLUSH_MS,
    );
    for (const b of this.blocking) b.disconnect();
    this.subscriber.disconnect();
    if (flushed) {
      await this.client.quit().catch(() => this.client.disconnect());
      return;
    }
    this.deliveryOver = true;
    for (const h of this.heartbeats) void h.stop();
    if (this.redeliveryTimer) clearTimeout(this.redeliveryTimer);
    this.emitError(
      new Error(
        `closing: Redis did not answer within ${CLOSE_FLUSH_MS} ms; ` +
          'jobs not acknowledged or released are recovered when their leases expire',
      ),
    );
    this.client.disconnect();
  }
}

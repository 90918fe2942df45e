/**
 * The executor's options: their TSDoc, their defaults, and the one call that checks them against
 * WORKER_OPTIONS in src/options.ts (where every option is refused or let through) and fills the
 * defaults in, so the parts of an executor read settled values only.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { ValidationError } from '../errors.js';
import { checkOptions, WORKER_OPTIONS } from '../options.js';
import type { Handlers } from '../queue/context.js';
import { DEFAULT_MAX_ARGS_BYTES, DEFAULT_MAX_EVENTS, type Durability, replication } from '../queue/options.js';
import { type ConnectionOption, maskFields, maskText } from '../redis/connection.js';
import { checkShards } from '../redis/shards.js';
import { STALL_AFTER_MS } from '../util/health.js';
import type { Keep } from './recoverer.js';

/** How long a task no live executor has a handler for is waited for before its jobs fail (ms). */
export const DEFAULT_UNKNOWN_TASK_GRACE_MS = 5 * 60_000;

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
   * `health()` reports the executor not live when its take loop has not begun an iteration for
   * this long while it should run (not while it waits on runs or on Redis): 1,000 ms to a day;
   * default 120,000 ms, and never less than 3 × `fallbackWakeMs` (an idle loop's longest sleep).
   */
  stallAfterMs?: number;
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
  /** Where to log job state changes (debug) and failures (warn): a pino logger or alike; default none. Secrets in URLs (passwords, `?password=`) are masked in every line. */
  logger?: JobLogger;
  /** Start taking jobs at once; default true. Otherwise call {@link Worker.run}. */
  autorun?: boolean;
  /**
   * Shortest time between two progress updates of a run that are written and reported
   * (ctx.progress): the first goes at once, then at most one per interval (the newest value), and
   * the last one when the run ends. 0 to an hour; default 1,000 ms.
   */
  progressIntervalMs?: number;
  /**
   * A job of a task this executor has no handler for is put back for the executors that have
   * one (no retry counted). It fails with `UnknownTaskError` only once no live executor of the
   * queue has had the task for this long, so that a deploy that adds a task can finish: 0 to a
   * day; default 300,000 ms (5 minutes). See docs/jobs.md.
   */
  unknownTaskGraceMs?: number;
}

/** The part of a pino logger an executor uses. */
export interface JobLogger {
  debug(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

/**
 * `logger` with every line's message and fields (strings, errors) passed through {@link maskText}, as what
 * the CLI prints is: an error quoting a URL with a password (a handler's, a connection's) is
 * logged as `scheme://user:***@host`.
 */
export function maskedLogger(logger: JobLogger): JobLogger {
  const mask = (msg?: string) => (msg === undefined ? msg : maskText(msg));
  return {
    debug: (obj, msg) => logger.debug(maskFields(obj), mask(msg)),
    warn: (obj, msg) => logger.warn(maskFields(obj), mask(msg)),
  };
}

/** An executor's options checked, with every default filled in. */
export interface ExecutorSettings {
  connection: ConnectionOption;
  id: string;
  concurrency: number;
  countingScheme: [number, number];
  retryDelay: number;
  leaseMs: number;
  graceMs: number;
  fallbackWakeMs: number;
  /** The take loop's stall limit (ms): at least 3 × fallbackWakeMs. */
  stallAfterMs: number;
  keepSucceeded: Required<Keep>;
  keepFailed: Required<Keep>;
  maxResultBytes: number;
  maxEvents: number;
  /** What the queue's stores need of `durability`, `replicaTimeoutMs` and `replicaAcks`. */
  replication: { replicaTimeoutMs: number; replicaAcks: number };
  shards: number;
  logger?: JobLogger;
  autorun: boolean;
  progressIntervalMs: number;
  unknownTaskGraceMs: number;
}

/**
 * Checks an executor's options and fills in their defaults.
 * @throws {ValidationError} naming the first bad option.
 */
export function executorSettings(workerOptions: WorkerOptions): ExecutorSettings {
  const options = checkOptions(WORKER_OPTIONS, workerOptions) as WorkerOptions;
  return {
    connection: options.connection,
    id: options.id ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`,
    concurrency: options.concurrency ?? 1,
    countingScheme: options.countingScheme ?? [2, 1],
    retryDelay: options.retryDelay ?? 1000,
    leaseMs: options.leaseMs ?? 30_000,
    graceMs: options.graceMs ?? 5000,
    fallbackWakeMs: options.fallbackWakeMs ?? 30_000,
    stallAfterMs: Math.max(options.stallAfterMs ?? STALL_AFTER_MS, 3 * (options.fallbackWakeMs ?? 30_000)),
    keepSucceeded: { count: 10_000, age: 86_400_000, ...options.keepSucceeded },
    keepFailed: { count: 100_000, age: 7 * 86_400_000, ...options.keepFailed },
    maxResultBytes: options.maxResultBytes ?? DEFAULT_MAX_ARGS_BYTES,
    maxEvents: options.maxEvents ?? DEFAULT_MAX_EVENTS,
    replication: replication(options),
    shards: checkShards(options.shards),
    logger: options.logger && maskedLogger(options.logger),
    autorun: options.autorun ?? true,
    progressIntervalMs: options.progressIntervalMs ?? 1000,
    unknownTaskGraceMs: options.unknownTaskGraceMs ?? DEFAULT_UNKNOWN_TASK_GRACE_MS,
  };
}

/**
 * A snapshot of `handlers` (looked up in it by own key only, so a later change to the caller's
 * object or its prototype has no effect).
 * @throws {ValidationError} when it is not an object of functions.
 */
export function checkHandlers(handlers: unknown): Handlers {
  if (typeof handlers !== 'object' || handlers === null)
    throw new ValidationError('handlers', 'must map task names to functions');
  const own: Handlers = Object.create(null);
  for (const [task, h] of Object.entries(handlers)) {
    if (typeof h !== 'function') throw new ValidationError(`handlers.${task}`, 'must be a function');
    own[task] = h as Handlers[string];
  }
  return own;
}

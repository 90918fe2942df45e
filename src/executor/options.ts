/**
 * The executor's options: their TSDoc, bounds and defaults in one shape (see src/options.ts), and
 * the one call that checks them and settles what depends on several, so the parts of an
 * executor read settled values only.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { z } from 'zod';
import { ValidationError } from '../errors.js';
import {
  bool,
  checkOptions,
  DAY_MS,
  HOUR_MS,
  keep,
  MAX_CONCURRENCY,
  MAX_PAYLOAD_LIMIT,
  MIN_FALLBACK_WAKE_MS,
  MIN_LEASE_MS,
  type OptionsOf,
  type SettingsOf,
  text,
  whole,
} from '../options.js';
import type { Handlers } from '../queue/context.js';
import { DEFAULT_MAX_ARGS_BYTES, QUEUE_OPTIONS, replication } from '../queue/options.js';
import { maskFields, maskText } from '../redis/connection.js';
import { checkShards } from '../redis/shards.js';
import { STALL_AFTER_MS } from '../util/health.js';

/** How long a task no live executor has a handler for is waited for before its jobs fail (ms). */
export const DEFAULT_UNKNOWN_TASK_GRACE_MS = 5 * 60_000;

/** Executor options. */
export const WORKER_OPTIONS = {
  /** Where Redis is: a URL, ioredis options or an ioredis client. */
  connection: QUEUE_OPTIONS.connection,
  /**
   * Largest packed args a running handler's fan-out children and batch jobs may carry, in bytes:
   * 1 to 256 MiB; default 512 KiB (see QueueOptions.maxArgsBytes).
   */
  maxArgsBytes: QUEUE_OPTIONS.maxArgsBytes,
  /** Jobs run at once (slots): 1 to 100,000; default 1. */
  concurrency: whole(1, MAX_CONCURRENCY).default(1),
  /** Unique executor id (1 to 200 bytes); default `host:pid:random`. A fixed id lets a restarted executor clear its stale marks. */
  id: text(200).optional(),
  /**
   * `[high, low]`: take `high` high-priority jobs, then `low` low-priority ones, per group; each 0 to
   * 1,000, not both 0; default [2, 1].
   */
  countingScheme: z
    .tuple([whole(0, 1000), whole(0, 1000)], { error: 'must be [high, low]' })
    .refine(([h, l]) => h + l >= 1, 'must not be [0, 0]')
    .default([2, 1]),
  /**
   * Base of the retry backoff in ms (0 to a day): a failed job waits `retryDelay × 2^retries`, at
   * most 9,999,999,999,999 ms (MAX_DELAY_MS in src/redis/wire.ts); default 1000.
   */
  retryDelay: whole(0, DAY_MS, 'ms').default(1000),
  /**
   * Lease of a taken job in ms, extended by the heartbeat every third of it: 1,000 (one second;
   * shorter leases cost a heartbeat call every few ms and are lost to any pause) to a day; default 30,000.
   */
  leaseMs: whole(MIN_LEASE_MS, DAY_MS, 'ms').default(30_000),
  /** Time a handler gets to return after its signal aborted, before it is abandoned: 0 to an hour; default 5,000 ms. */
  graceMs: whole(0, HOUR_MS, 'ms').default(5000),
  /**
   * Longest idle sleep before looking at the queue again anyway: 1,000 ms (an idle executor
   * otherwise polls Redis) to an hour; default 30,000 ms.
   */
  fallbackWakeMs: whole(MIN_FALLBACK_WAKE_MS, HOUR_MS, 'ms').default(30_000),
  /**
   * `health()` reports the executor not live when its take loop has not begun an iteration for
   * this long while it should run (not while it waits on runs or on Redis): 1,000 ms to a day;
   * default 120,000 ms, and never less than 3 × `fallbackWakeMs` (an idle loop's longest sleep).
   */
  stallAfterMs: whole(1000, DAY_MS, 'ms').default(STALL_AFTER_MS),
  /**
   * Finished successful jobs kept: newest `count` (default 10,000), each at most `age` ms (default
   * 1 day); -1 is no bound, else 0 to 10^9 jobs and up to 100 years. The count may run over by a
   * twentieth before a trim removes the excess in one step.
   */
  keepSucceeded: keep(1_000_000_000, { count: 10_000, age: DAY_MS }),
  /** Failed and cancelled jobs kept: newest `count` (default 100,000), each at most `age` ms (default 7 days); trimmed as above. */
  keepFailed: keep(1_000_000_000, { count: 100_000, age: 7 * DAY_MS }),
  /** Largest packed result stored, in bytes: 1 to 256 MiB; default 512 KiB. */
  maxResultBytes: whole(1, MAX_PAYLOAD_LIMIT, 'bytes').default(DEFAULT_MAX_ARGS_BYTES),
  /** Events stream cap (see QueueOptions.maxEvents). */
  maxEvents: QUEUE_OPTIONS.maxEvents,
  /**
   * `'replicated'`: outcomes count as delivered only once a replica has them (`WAIT 1`); until
   * then they are sent again, so none is lost when a replica takes over. Default `'primary'`.
   */
  durability: QUEUE_OPTIONS.durability,
  /** How long a `'replicated'` write waits for a replica; default 1,000 ms. */
  replicaTimeoutMs: QUEUE_OPTIONS.replicaTimeoutMs,
  /** How many replicas a `'replicated'` write waits for (see QueueOptions.replicaAcks); default 1. */
  replicaAcks: QUEUE_OPTIONS.replicaAcks,
  /** The queue's shard count (see QueueOptions.shards); default 1. The executor takes from every shard in turn. */
  shards: QUEUE_OPTIONS.shards,
  /** Where to log job state changes (debug) and failures (warn): a pino logger or alike; default none. Secrets in URLs (passwords, `?password=`) are masked in every line. */
  logger: z
    .custom<JobLogger>(
      (v) =>
        typeof v === 'object' &&
        v !== null &&
        typeof (v as { debug?: unknown }).debug === 'function' &&
        typeof (v as { warn?: unknown }).warn === 'function',
      'must have debug and warn methods (a pino logger or alike)',
    )
    .optional(),
  /** Start taking jobs at once; default true. Otherwise call {@link Worker.run}. */
  autorun: bool.default(true),
  /**
   * Shortest time between two progress updates of a run that are written and reported
   * (ctx.progress): the first goes at once, then at most one per interval (the newest value), and
   * the last one when the run ends. 0 to an hour; default 1,000 ms.
   */
  progressIntervalMs: whole(0, HOUR_MS, 'ms').default(1000),
  /**
   * A job of a task this executor has no handler for is put back for the executors that have
   * one (no retry counted). It fails with `UnknownTaskError` only once no live executor of the
   * queue has had the task for this long, so that a deploy that adds a task can finish: 0 to a
   * day; default 300,000 ms (5 minutes). See docs/jobs.md.
   */
  unknownTaskGraceMs: whole(0, DAY_MS, 'ms').default(DEFAULT_UNKNOWN_TASK_GRACE_MS),
};

/** Executor options. */
export type WorkerOptions = OptionsOf<typeof WORKER_OPTIONS>;

/** Worker.close's options. */
export const CLOSE_OPTIONS = {
  /** How long running jobs may take to finish before they are aborted and released (ms, 0 to a day); default 30,000. */
  timeout: whole(0, DAY_MS, 'ms').default(30_000),
};

/** Worker.close's options. */
export type CloseOptions = OptionsOf<typeof CLOSE_OPTIONS>;

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
export type ExecutorSettings = Omit<
  SettingsOf<typeof WORKER_OPTIONS>,
  'id' | 'durability' | 'replicaTimeoutMs' | 'replicaAcks'
> & {
  id: string;
  /** What the queue's stores need of `durability`, `replicaTimeoutMs` and `replicaAcks`. */
  replication: { replicaTimeoutMs: number; replicaAcks: number };
};

/**
 * Checks an executor's options and settles them: the defaults the shape has, the id, the stall
 * limit (at least 3 × fallbackWakeMs), what the stores wait for, and the logger masked.
 * @throws {ValidationError} naming the first bad option.
 */
export function executorSettings(workerOptions: WorkerOptions): ExecutorSettings {
  const { durability, replicaTimeoutMs, replicaAcks, ...o } = checkOptions(WORKER_OPTIONS, workerOptions);
  return {
    ...o,
    id: o.id ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`,
    stallAfterMs: Math.max(o.stallAfterMs, 3 * o.fallbackWakeMs),
    replication: replication({ durability, replicaTimeoutMs, replicaAcks }),
    shards: checkShards(o.shards),
    logger: o.logger && maskedLogger(o.logger),
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

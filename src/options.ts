/**
 * The options every public class and function of Rota takes, checked in one place (zod schemas)
 * before anything is opened: a bad option is a {@link ValidationError} naming it, and no
 * connection, timer or server is made. The bounds are documented on each option's TSDoc.
 */
import { z } from 'zod';
import { ValidationError } from './errors.js';
import { unknownFieldError, zodError } from './queue/validate.js';
import { type ConnectionOption, checkConnection } from './redis/connection.js';
import { MAX_SHARDS } from './redis/shards.js';

/** Largest packed args or result a queue may be configured to accept (`maxArgsBytes`, `maxResultBytes`): 256 MiB. */
export const MAX_PAYLOAD_LIMIT = 256 * 1024 * 1024;
/** Largest events stream cap (`maxEvents`). */
export const MAX_EVENTS_CAP = 100_000_000;
/** Shortest executor lease (`leaseMs`): the heartbeat extends it every third of it. */
export const MIN_LEASE_MS = 1000;
/** Shortest idle fallback wake-up of an executor or a scheduler (`fallbackWakeMs`). */
export const MIN_FALLBACK_WAKE_MS = 1000;
/** Most jobs an executor runs at once (`concurrency`). */
export const MAX_CONCURRENCY = 100_000;

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
/** Longest keep age and other "forever-ish" durations: 100 years. */
const CENTURY_MS = 100 * 365 * DAY_MS;

/** A whole number from `min` to `max` (NaN, Infinity, fractions and other types refused), in `unit`. */
export function whole(min: number, max: number, unit = ''): z.ZodNumber {
  const message = `must be a whole number${unit ? ` of ${unit}` : ''} from ${min} to ${max}`;
  return z.number({ error: message }).int(message).min(min, message).max(max, message);
}

/** A string of 1 to `max` bytes in UTF-8. */
export function text(max: number): z.ZodType<string> {
  return z
    .string({ error: 'must be a string' })
    .min(1, 'must not be empty')
    .refine((s) => s.length * 3 <= max || Buffer.byteLength(s) <= max, { message: `must be at most ${max} bytes` });
}

const func = <F>(what = 'a function') => z.custom<F>((v) => typeof v === 'function', `must be ${what}`);
const bool = z.boolean({ error: 'must be true or false' });
/** The connection: its form is checked by checkConnection after the other options (see checkOptions). */
const connection = z.custom<ConnectionOption>();
const durability = z.enum(['primary', 'replicated'], { error: `must be 'primary' or 'replicated'` });

/** Options every part that opens a queue shares (QueueOptions, and the executor's). */
const queueShape = {
  connection,
  /** Largest packed args accepted: 1 byte to 256 MiB. */
  maxArgsBytes: whole(1, MAX_PAYLOAD_LIMIT, 'bytes').optional(),
  /** 0 (no events) to 100,000,000. */
  maxEvents: whole(0, MAX_EVENTS_CAP).optional(),
  durability: durability.optional(),
  /** 1 ms to an hour. */
  replicaTimeoutMs: whole(1, HOUR_MS, 'ms').optional(),
  replicaAcks: whole(1, 100).optional(),
  shards: whole(1, MAX_SHARDS).optional(),
};

/** How many finished jobs, or run history entries, are kept: -1 is no bound. */
const keep = (maxCount: number) =>
  z
    .object(
      {
        count: whole(-1, maxCount).optional(),
        age: whole(-1, CENTURY_MS, 'ms').optional(),
      },
      { error: 'must be { count, age }' },
    )
    .strict();

export const QUEUE_OPTIONS = queueShape;

export const WORKER_OPTIONS = {
  ...queueShape,
  concurrency: whole(1, MAX_CONCURRENCY).optional(),
  id: text(200).optional(),
  countingScheme: z
    .tuple([whole(0, 1000), whole(0, 1000)], { error: 'must be [high, low]' })
    .refine(([h, l]) => h + l >= 1, 'must not be [0, 0]')
    .optional(),
  retryDelay: whole(0, DAY_MS, 'ms').optional(),
  leaseMs: whole(MIN_LEASE_MS, DAY_MS, 'ms').optional(),
  graceMs: whole(0, HOUR_MS, 'ms').optional(),
  fallbackWakeMs: whole(MIN_FALLBACK_WAKE_MS, HOUR_MS, 'ms').optional(),
  stallAfterMs: whole(1000, DAY_MS, 'ms').optional(),
  keepSucceeded: keep(1_000_000_000).optional(),
  keepFailed: keep(1_000_000_000).optional(),
  maxResultBytes: whole(1, MAX_PAYLOAD_LIMIT, 'bytes').optional(),
  logger: z
    .custom<{ debug: unknown; warn: unknown }>(
      (v) =>
        typeof v === 'object' &&
        v !== null &&
        typeof (v as { debug?: unknown }).debug === 'function' &&
        typeof (v as { warn?: unknown }).warn === 'function',
      'must have debug and warn methods (a pino logger or alike)',
    )
    .optional(),
  autorun: bool.optional(),
  progressIntervalMs: whole(0, HOUR_MS, 'ms').optional(),
  unknownTaskGraceMs: whole(0, DAY_MS, 'ms').optional(),
};

/** isolated()'s (src/executor/isolated.ts). */
export const ISOLATED_OPTIONS = {
  in: z.enum(['thread', 'process'], { error: `must be 'thread' or 'process'` }).optional(),
  export: text(200).optional(),
  max: whole(1, MAX_CONCURRENCY).optional(),
  min: whole(0, MAX_CONCURRENCY).optional(),
  jobsEach: whole(1, MAX_CONCURRENCY).optional(),
  memoryLimitMb: whole(16, 1_048_576, 'MB').optional(),
  recycleAfterJobs: whole(1, 1_000_000_000).optional(),
  recycleAboveMb: whole(1, 1_048_576, 'MB').optional(),
  startTimeoutMs: whole(100, HOUR_MS, 'ms').optional(),
};

/** Worker.close's. */
export const CLOSE_OPTIONS = { timeout: whole(0, DAY_MS, 'ms').optional() };

export const SCHEDULER_OPTIONS = {
  connection,
  id: text(200).optional(),
  now: func<() => number>().optional(),
  lookaheadMs: whole(0, 10 * 60_000, 'ms').optional(),
  claimTtlMs: whole(1000, HOUR_MS, 'ms').optional(),
  batchSize: whole(1, 10_000).optional(),
  misfireGraceMs: whole(0, DAY_MS, 'ms').optional(),
  fallbackWakeMs: whole(MIN_FALLBACK_WAKE_MS, HOUR_MS, 'ms').optional(),
  bufferPollMs: whole(100, 60_000, 'ms').optional(),
  keepRuns: keep(1_000_000).optional(),
  maxEvents: queueShape.maxEvents,
  shards: queueShape.shards,
};

export const PERIODIC_TASKS_OPTIONS = {
  connection,
  now: func<() => number>().optional(),
  maxArgsBytes: queueShape.maxArgsBytes,
  shards: queueShape.shards,
};

/** The dashboard's own options (its handler's and its server's); options it does not know are left to it. */
export const DASHBOARD_OPTIONS = {
  connection,
  queues: z.array(z.string({ error: 'must be queue names' }), { error: 'must be an array of queue names' }),
  basePath: z.string({ error: 'must be a path such as /admin/rota' }).optional(),
  readOnly: bool.optional(),
  trustProxy: bool.optional(),
  allowedHosts: z
    .array(text(255), { error: 'must be an array of host names' })
    .max(1000, 'must list at most 1000 hosts')
    .optional(),
  token: z
    .string({ error: 'must be a string' })
    .min(8, 'must be at least 8 characters')
    .max(1000, 'must be at most 1000 characters')
    .optional(),
  shards: z
    .union([whole(1, MAX_SHARDS), z.record(z.string(), whole(1, MAX_SHARDS))], {
      error: `must be a shard count (1 to ${MAX_SHARDS}), or one per queue name`,
    })
    .optional(),
  port: whole(0, 65_535).optional(),
  host: text(255).optional(),
};

export const METRICS_OPTIONS = {
  port: whole(0, 65_535),
  host: text(255).optional(),
  queue: z.custom<object>(
    (v) => typeof v === 'object' && v !== null && typeof (v as { counts?: unknown }).counts === 'function',
    'must be a Queue',
  ),
  workers: z.array(z.custom<object>((v) => typeof v === 'object' && v !== null, 'must be a Worker')).optional(),
  groups: z
    .string({ error: 'must be none, all or top:N' })
    .regex(/^(none|all|top:([1-9]\d{0,4}|100000))$/, 'must be none, all or top:N (N from 1 to 100000)')
    .optional(),
  sweepIntervalMs: whole(1000, 3_600_000, 'ms').optional(),
  schedulers: z.array(z.custom<object>((v) => typeof v === 'object' && v !== null, 'must be a Scheduler')).optional(),
  onError: func<(err: Error) => void>().optional(),
};

export const SHUTDOWN_OPTIONS = {
  timeout: whole(0, DAY_MS, 'ms').optional(),
  signals: z.array(z.string({ error: 'must be signal names' }), { error: 'must be an array of signal names' }).optional(),
  onClosed: func<() => void | Promise<void>>().optional(),
  exit: bool.optional(),
  log: func<(message: string) => void>().optional(),
};

export const RESHARD_OPTIONS = {
  to: whole(1, MAX_SHARDS),
  batch: whole(1, 10_000).optional(),
  onProgress: func<(moved: number) => void>().optional(),
};

/** What a shape's check gives: its fields, each read once. */
type Checked<S extends z.ZodRawShape> = z.infer<z.ZodObject<S>>;

/**
 * Checks options against `shape`: an object (`undefined` is `{}` when `optional`), no field the
 * shape does not have (unless `loose`), every field within its bounds, and the connection's form
 * when the shape has one. Resolves a snapshot of them (each field read once), which the caller
 * uses instead of the object it was given.
 * @throws {ValidationError} naming the first bad option.
 */
export function checkOptions<S extends z.ZodRawShape>(
  shape: S,
  opts: unknown,
  how: { optional?: boolean; loose?: boolean } = {},
): Checked<S> {
  if (opts === undefined && how.optional) opts = {};
  if (typeof opts !== 'object' || opts === null || Array.isArray(opts)) {
    throw new ValidationError('options', 'must be an object');
  }
  if (!how.loose) for (const k of Object.keys(opts)) if (!(k in shape)) throw unknownFieldError('', k, Object.keys(shape));
  const parsed = z.object(shape).safeParse(opts);
  if (!parsed.success) throw zodError('', parsed.error);
  const data = parsed.data as Checked<S>;
  if ('connection' in shape) checkConnection((data as { connection?: unknown }).connection);
  return data;
}

/**
 * Checks one value against `schema`; resolves what the schema gives (the value read once).
 * @throws {ValidationError} naming `field` (and the path below it).
 */
export function checkValue<T>(schema: z.ZodType<T>, value: unknown, field: string): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw zodError(field, parsed.error);
  return parsed.data;
}

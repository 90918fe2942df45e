/** Checks what callers submit, so bad input is refused with a named field before anything is written. */
import { pack } from 'msgpackr';
import { z } from 'zod';
import { PayloadTooLargeError, ValidationError } from '../errors.js';
import { GROUP_DUE_MARK, MAX_DELAY_MS } from '../redis/wire.js';
import { bytes, text, unknownFieldError, whole, zodError } from '../util/check.js';
import type { Priority } from './job.js';

/** The retries a job gets when its spec gives none; an event rule's runs get as many. */
export const DEFAULT_MAX_RETRIES = 3;

/** What a caller submits. */
export interface SubmitSpec<A = unknown> {
  /** Name of the handler that runs it (1–200 bytes). */
  task: string;
  /** Tenant (1–200 bytes, any characters); defaults to `default`. */
  group?: string;
  /**
   * Any value msgpack can carry: null, booleans, numbers, strings, bigints, Dates, byte arrays,
   * arrays, plain objects; arrays and objects nested at most `MAX_DEPTH` (100) levels deep.
   */
  args?: A;
  priority?: Priority;
  subject?: string;
  submitter?: string;
  /** Failed attempts retried before the job fails; default 3. */
  maxRetries?: number;
  /** Caller-given id: a job with this id already there is returned instead of a second one. */
  id?: string;
  /** Run time limit (ms): the run's signal aborts then, and a run that ignores it fails as timed out. */
  maxRuntime?: number;
  /**
   * Ms from the submit (by the Redis server's clock) before the job may run: it is `delayed`
   * until then, then `waiting`. Not with `runAt`.
   */
  delay?: number;
  /**
   * When the job may run (a Date, or ms since the epoch), by the Redis server's clock: it is
   * `delayed` until then (a time past runs it at once). Not with `delay`.
   */
  runAt?: Date | number;
  /** Deduplication: a second job of this group and key is not added (see {@link DedupOptions}). */
  dedup?: DedupOptions;
}

/**
 * A submit's deduplication (docs/jobs.md, Deduplication): while a job of the same group holds
 * `key`, a submit with that key adds no job and answers the job that holds it, marked
 * `deduplicated`. Which of the holder's states hold the key is `until`'s; a TTL bounds it.
 */
export interface DedupOptions {
  /** The producer's key, 1–200 bytes of any characters; scoped to the job's group. */
  key: string;
  /**
   * How long the key holds at most (ms from the submit, 1 to 2^31 - 1 ms); with `extend`, from
   * the latest duplicate. Without it the key holds as long as `until` says.
   */
  ttl?: number;
  /**
   * Which of the holder's states hold the key: `'start'` while it is waiting or delayed (not yet
   * taken), `'end'` until it ends (success, failed or cancelled), `'ttl'` for the whole TTL
   * whatever its state (throttle: at most one job per key per TTL). Default `'ttl'` with a TTL,
   * `'end'` without.
   */
  until?: 'start' | 'end' | 'ttl';
  /**
   * Debounce: a duplicate that finds the holder pending (waiting or delayed) replaces its args,
   * task, subject, submitter, retries and run time limit with its own and, for a delayed holder,
   * its due time with the duplicate's (none: it waits now). A waiting holder keeps its place, and
   * is replaced only when the duplicate has its priority.
   */
  replace?: boolean;
  /** A duplicate restarts the key's TTL (its own `ttl`) from its submit. */
  extend?: boolean;
}

/**
 * The ids the scheduler gives periodic runs, `<task id>@<occurrence>` (task ids as
 * src/periodic/definition.ts allows them), an interval run after a backward jump of the server's
 * clock `...~<epoch>`, a backfill's rerun of an occurrence `...#<n>`, and
 * their fan-out children's `.../<n>`: reserved, so that no caller's submit takes a run's place
 * before the scheduler (or a backfill) submits it.
 */
const PERIODIC_RUN_ID = /^[A-Za-z0-9._:-]{1,200}@\d+(?:~\d+)?(?:#\d+)?(?:\/\d+)*$/;

/**
 * The ids fan-out gives a parent's children, `<parent id>/<index>`: reserved, so that no
 * caller's submit takes a child's place before its parent fans out (the child, its id taken,
 * would never be submitted, and the parent would wait for it forever).
 */
const FAN_OUT_CHILD_ID = /\/\d+$/;
/** A batch's callback id, `<batch id>/complete` or `<batch id>/success` (a batch id is Rota-made): reserved for its batch. */
const BATCH_CALLBACK_ID = /^[0-9a-z]{18,19}\.[0-9a-z]{3}\/(complete|success)$/;

const LATEST_DUE = `must be at most ${MAX_DELAY_MS} ms (a delay of some 317 years, or the year 2286)`;

/**
 * Most levels of arrays and objects a packed value (args, a result) nests: deeper values are
 * refused before packing, which would overflow the call stack at a few thousand levels.
 */
export const MAX_DEPTH = 100;

/**
 * The fields of a job as every path that makes jobs checks them (submit and its bulk, fan-out
 * children, periodic task definitions, event rules): one schema a field, so their bounds agree.
 * Lengths are in bytes of UTF-8.
 */
export const JOB_FIELDS = {
  /** 1 to 200 bytes. */
  task: text(200),
  /** 1 to 200 bytes, any characters. */
  group: text(200),
  /** A caller-given job id: 1 to 200 bytes. */
  id: text(200),
  args: z.unknown(),
  priority: z.enum(['high', 'low'], { error: "must be 'high' or 'low'" }),
  /** At most 1,000 bytes. */
  subject: bytes(1000),
  /** At most 200 bytes. */
  submitter: bytes(200),
  maxRetries: whole(0, 1000),
  /** The run time limit: a whole number of ms above 0. */
  maxRuntime: z
    .number({ error: 'must be a whole number of ms' })
    .int('must be a whole number of ms')
    .positive('must be above 0 ms'),
};

/** Longest dedup TTL (ms): what `PEXPIRE` and a job hash's expiry field take without surprise. */
const MAX_DEDUP_TTL_MS = 2 ** 31 - 1;

const dedupSchema = z.strictObject({
  key: text(200),
  ttl: z.number().int('must be a whole number of ms').min(1).max(MAX_DEDUP_TTL_MS).optional(),
  until: z.enum(['start', 'end', 'ttl']).optional(),
  replace: z.boolean().optional(),
  extend: z.boolean().optional(),
});

const specSchema = z.object({
  task: JOB_FIELDS.task,
  group: JOB_FIELDS.group.optional(),
  priority: JOB_FIELDS.priority.optional(),
  subject: JOB_FIELDS.subject.optional(),
  submitter: JOB_FIELDS.submitter.optional(),
  maxRetries: JOB_FIELDS.maxRetries.optional(),
  id: JOB_FIELDS.id.optional(),
  maxRuntime: JOB_FIELDS.maxRuntime.optional(),
  delay: z.number().int('must be a whole number of ms').nonnegative().max(MAX_DELAY_MS, LATEST_DUE).optional(),
  runAt: z
    .union([
      z
        .date()
        .refine((d) => !Number.isNaN(d.getTime()), { message: 'is an invalid Date' })
        .refine((d) => d.getTime() >= 0 && d.getTime() <= MAX_DELAY_MS, { message: LATEST_DUE }),
      z.number().int('must be a whole number of ms since the epoch').nonnegative().max(MAX_DELAY_MS, LATEST_DUE),
    ])
    .optional(),
  dedup: dedupSchema.optional(),
  args: JOB_FIELDS.args.optional(),
});

/** The fields a {@link SubmitSpec} may have. */
const SPEC_FIELDS = new Set(Object.keys(specSchema.shape));

/**
 * A value msgpack cannot carry: where it is below the value checked (innermost first), and why.
 * A value nested too deep is a problem of the whole value (`whole`), named without its long path.
 */
interface Problem {
  at: Array<string | number>;
  reason: string;
  whole?: boolean;
}

/** Adds `key` to the path of a problem found below it. */
function under(problem: Problem, key: string | number): Problem {
  if (!problem.whole) problem.at.push(key);
  return problem;
}

/** The range of the bigints msgpack carries (int64 and uint64). */
const MIN_INT64 = -(2n ** 63n);
const MAX_UINT64 = 2n ** 64n - 1n;

/** The objects and arrays being walked by {@link unserializable}, outermost first (a cycle check). */
const ancestors: object[] = [];

/**
 * Finds the first value in `v` that msgpack cannot carry faithfully, or null when all is well.
 * Allocates nothing for a value that packs (its path is built only for a problem).
 */
function unserializable(v: unknown): Problem | null {
  switch (typeof v) {
    case 'string':
    case 'boolean':
    case 'undefined':
      return null;
    case 'bigint':
      return v >= MIN_INT64 && v <= MAX_UINT64
        ? null
        : { at: [], reason: 'is a bigint outside the 64-bit range (-2^63 to 2^64 - 1), which does not serialize' };
    case 'number':
      return Number.isFinite(v) ? null : { at: [], reason: `is ${v}, which does not serialize` };
    case 'function':
      return { at: [], reason: 'is a function, which does not serialize' };
    case 'symbol':
      return { at: [], reason: 'is a symbol, which does not serialize' };
  }
  if (v === null || v instanceof Uint8Array) return null;
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? { at: [], reason: 'is an invalid Date' } : null;
  const obj = v as Record<string, unknown>;
  if (ancestors.includes(obj)) return { at: [], reason: 'refers back to itself (a cycle), which does not serialize' };
  if (ancestors.length === MAX_DEPTH) {
    return { at: [], reason: `nests arrays and objects more than ${MAX_DEPTH} levels deep (the limit)`, whole: true };
  }
  ancestors.push(obj);
  try {
    if (Array.isArray(obj)) {
      for (let i = 0; i < obj.length; i++) {
        const r = unserializable(obj[i]);
        if (r) return under(r, i);
      }
      return null;
    }
    const proto = Object.getPrototypeOf(obj);
    if (proto !== Object.prototype && proto !== null) {
      const kind = (proto as { constructor?: { name?: string } }).constructor?.name ?? 'class';
      return { at: [], reason: `is a ${kind} instance; only plain objects, arrays and plain values serialize` };
    }
    for (const k of Object.keys(obj)) {
      const r = unserializable(obj[k]);
      if (r) return under(r, k);
    }
    return null;
  } finally {
    ancestors.pop();
  }
}

/**
 * Packs a value with msgpack, refusing values that do not serialize (functions, symbols, class
 * instances, cycles, non-finite numbers, invalid Dates, bigints beyond 64 bits), nest deeper than
 * `MAX_DEPTH` levels or exceed `limit` bytes. The size is that of the bytes written.
 */
export function packValue(value: unknown, limit: number, field: string): Buffer {
  const problem = unserializable(value);
  if (problem) {
    const path = problem.at
      .reverse()
      .map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`))
      .join('');
    throw new ValidationError(`${field}${path}`, problem.reason);
  }
  let packed: Buffer;
  try {
    packed = value === undefined ? Buffer.alloc(0) : pack(value);
  } catch (err) {
    // (the value changed since it was walked: a getter, a proxy)
    throw new ValidationError(field, `does not serialize (${err instanceof Error ? err.message.slice(0, 200) : String(err)})`);
  }
  if (packed.length > limit) throw new PayloadTooLargeError(field, packed.length, limit);
  return packed;
}

/** A spec that passed validation, with its defaults filled in and its args packed. */
export interface CheckedSpec extends SubmitSpec {
  /** The trace context of the submit's span, when a tracer made one (see src/queue/tracing.ts). */
  trace?: string;
  group: string;
  priority: Priority;
  maxRetries: number;
  packedArgs: Buffer;
  /** The due time as ms since the epoch (a Date made a number). */
  runAt?: number;
  /** The dedup options with `until` filled in. */
  dedup?: CheckedDedup;
}

/** Dedup options that passed validation. */
export type CheckedDedup = Omit<DedupOptions, 'until'> & { until: 'start' | 'end' | 'ttl' };

/** Checks the dedup options that zod read: a TTL for `until: 'ttl'` and for `extend`. */
function checkDedup(d: DedupOptions | undefined, where: string): CheckedDedup | undefined {
  if (d === undefined) return undefined;
  const field = (f: string) => `${where ? `${where}.` : ''}dedup.${f}`;
  const until = d.until ?? (d.ttl !== undefined ? 'ttl' : 'end');
  if (until === 'ttl' && d.ttl === undefined) throw new ValidationError(field('until'), "is 'ttl', which needs a ttl");
  if (d.extend && d.ttl === undefined) throw new ValidationError(field('extend'), 'needs a ttl (the TTL it restarts)');
  return { key: d.key, ttl: d.ttl, until, replace: d.replace, extend: d.extend };
}

/** Validates one spec; `where` prefixes field names (e.g. `specs[3]`). */
export function checkSpec(given: SubmitSpec, argsLimit: number, where = ''): CheckedSpec {
  if (typeof given !== 'object' || given === null) throw new ValidationError(where || 'spec', 'must be an object');
  for (const k in given) if (!SPEC_FIELDS.has(k)) throw unknownFieldError(where, k, SPEC_FIELDS);
  const parsed = specSchema.safeParse(given);
  if (!parsed.success) throw zodError(where, parsed.error);
  // (what was checked is what is written: each field read once, a getter's next answer unseen)
  const spec = parsed.data as SubmitSpec;
  if (spec.delay !== undefined && spec.runAt !== undefined) {
    throw new ValidationError(where ? `${where}.delay` : 'delay', 'cannot be given with runAt (one due time per job)');
  }
  if (spec.id?.startsWith(GROUP_DUE_MARK)) {
    throw new ValidationError(where ? `${where}.id` : 'id', 'must not begin with the NUL character (reserved)');
  }
  if (spec.id !== undefined && PERIODIC_RUN_ID.test(spec.id)) {
    throw new ValidationError(
      where ? `${where}.id` : 'id',
      'has the form <task id>@<digits> of a periodic run, which only the scheduler may submit (reserved)',
    );
  }
  if (spec.id !== undefined && FAN_OUT_CHILD_ID.test(spec.id)) {
    throw new ValidationError(
      where ? `${where}.id` : 'id',
      'ends in /<digits>, the form <parent id>/<index> of a fan-out child, which only its parent may submit (reserved)',
    );
  }
  if (spec.id !== undefined && BATCH_CALLBACK_ID.test(spec.id)) {
    throw new ValidationError(
      where ? `${where}.id` : 'id',
      "is a batch's callback id, <batch id>/complete or /success (reserved)",
    );
  }
  const packedArgs = packValue(spec.args, argsLimit, where ? `${where}.args` : 'args');
  const dedup = checkDedup(spec.dedup, where);
  return {
    task: spec.task,
    group: spec.group ?? 'default',
    args: spec.args,
    priority: spec.priority ?? 'low',
    subject: spec.subject,
    submitter: spec.submitter,
    maxRetries: spec.maxRetries ?? DEFAULT_MAX_RETRIES,
    id: spec.id,
    maxRuntime: spec.maxRuntime,
    delay: spec.delay,
    runAt: spec.runAt instanceof Date ? spec.runAt.getTime() : spec.runAt,
    packedArgs,
    ...(dedup && { dedup }),
  };
}

/** Most starts a rate limit allows per window, and its longest window (ms): what a group record holds. */
const MAX_RATE = 1_000_000;
const MAX_RATE_WINDOW_MS = 2 ** 31 - 1;

/**
 * Checks a group's rate limit (`null`: lift it): `max` a whole number from 1 to 1,000,000,
 * `perMs` a whole number of ms from 1 to 2^31 - 1 (about 24 days).
 * @throws {@link ValidationError} naming the bad field.
 */
export function checkRate(rate: unknown): { max: number; perMs: number } | null {
  if (rate === null) return null;
  if (typeof rate !== 'object') throw new ValidationError('rate', 'must be { max, perMs } or null (no rate limit)');
  for (const k in rate) if (k !== 'max' && k !== 'perMs') throw unknownFieldError('rate', k, ['max', 'perMs']);
  const { max, perMs } = rate as { max?: unknown; perMs?: unknown };
  if (typeof max !== 'number' || !Number.isInteger(max) || max < 1 || max > MAX_RATE) {
    throw new ValidationError('rate.max', `must be a whole number from 1 to ${MAX_RATE}`);
  }
  if (typeof perMs !== 'number' || !Number.isInteger(perMs) || perMs < 1 || perMs > MAX_RATE_WINDOW_MS) {
    throw new ValidationError('rate.perMs', `must be a whole number of ms from 1 to ${MAX_RATE_WINDOW_MS}`);
  }
  return { max, perMs };
}

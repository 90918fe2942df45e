/**
 * How the options of Rota's classes and functions are defined and checked. Each class's options
 * are one zod shape beside the class (src/queue/options.ts, src/executor/options.ts, ...): its
 * TSDoc is the option's documentation, its schema the check, its `.default()` the default, and
 * the public type is derived from it ({@link OptionsOf}), so that the type, the check and the
 * default cannot drift apart. {@link checkOptions} checks them before anything is opened: a bad
 * option is a {@link ValidationError} naming it, and no connection, timer or server is made.
 */
import { z } from 'zod';
import { ValidationError } from './errors.js';
import { type ConnectionOption, checkConnection } from './redis/connection.js';
import { unknownFieldError, whole, zodError } from './util/check.js';

export { bytes, checkValue, text, whole } from './util/check.js';

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

export const DAY_MS = 86_400_000;
export const HOUR_MS = 3_600_000;
/** Longest keep age and other "forever-ish" durations: 100 years. */
const CENTURY_MS = 100 * 365 * DAY_MS;

/** A function option (its signature is the type's; only that it is a function is checked). */
export const func = <F>(what = 'a function') => z.custom<F>((v) => typeof v === 'function', `must be ${what}`);
/** A flag. */
export const bool = z.boolean({ error: 'must be true or false' });
/** The connection: its form is checked by checkConnection after the other options (see checkOptions). */
export const connection = z.custom<ConnectionOption>();

/**
 * How many finished jobs, or run history entries, are kept: newest `count` (0 to `maxCount`),
 * each at most `age` ms (up to 100 years); -1 is no bound. What is left out takes its default.
 */
export function keep(maxCount: number, defaults: { count: number; age: number }) {
  return z
    .object(
      {
        count: whole(-1, maxCount).default(defaults.count),
        age: whole(-1, CENTURY_MS, 'ms').default(defaults.age),
      },
      { error: 'must be { count, age }' },
    )
    .strict()
    .prefault({});
}

/** The options of a shape as a caller gives them: those with a default may be left out. */
export type OptionsOf<S extends z.ZodRawShape> = z.input<z.ZodObject<S>>;
/** The options of a shape as {@link checkOptions} answers them: checked, every default filled in. */
export type SettingsOf<S extends z.ZodRawShape> = z.output<z.ZodObject<S>>;

/**
 * Checks options against `shape`: an object (`undefined` is `{}` when `optional`), no field the
 * shape does not have (unless `loose`), every field within its bounds, and the connection's form
 * when the shape has one. Resolves a snapshot of them (each field read once) with the shape's
 * defaults filled in, which the caller uses instead of the object it was given.
 * @throws {ValidationError} naming the first bad option.
 */
export function checkOptions<S extends z.ZodRawShape>(
  shape: S,
  opts: unknown,
  how: { optional?: boolean; loose?: boolean } = {},
): SettingsOf<S> {
  if (opts === undefined && how.optional) opts = {};
  if (typeof opts !== 'object' || opts === null || Array.isArray(opts)) {
    throw new ValidationError('options', 'must be an object');
  }
  if (!how.loose) for (const k of Object.keys(opts)) if (!(k in shape)) throw unknownFieldError('', k, Object.keys(shape));
  const parsed = z.object(shape).safeParse(opts);
  if (!parsed.success) throw zodError('', parsed.error);
  const data = parsed.data;
  if ('connection' in shape) checkConnection((data as { connection?: unknown }).connection);
  return data;
}

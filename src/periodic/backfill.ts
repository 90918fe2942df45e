/**
 * Backfill: run now what a periodic task would have run over a past range. The occurrences are
 * computed here and submitted in steps of {@link BACKFILL_BATCH} per script call
 * (lua/periodic-backfill.lua), so that a long range never blocks Redis for long; each call decides
 * per occurrence, atomically, whether it ran already (see the script), so that overlapping
 * backfills, from any number of processes, and a rerun after a crash submit each occurrence once.
 */
import { z } from 'zod';
import { ValidationError } from '../errors.js';
import { bool, checkOptions, type OptionsOf, whole } from '../options.js';
import type { PeriodicStore } from '../redis/periodic-store.js';
import type { Timer } from '../timers/index.js';
import { excludesOf } from './schedule.js';

/** What a backfill did. */
export interface BackfillResult {
  /** Occurrences in the range. */
  occurrences: number;
  /** Occurrences submitted (or queued, `buffer-all`) by this call. */
  submitted: number;
  /** Occurrences that had run already (or were submitted by another backfill), left out. */
  alreadyRan: number;
}

/** Occurrences per script call: a few ms of Redis time at most (see benchmarks/probes/backfill-cost.ts). */
export const BACKFILL_BATCH = 50;
/** Most occurrences one backfill may cover. */
export const MAX_BACKFILL = 1_000_000;

const instant = z.union([whole(0, 8.64e15, 'ms since the epoch'), z.date()], {
  error: 'must be ms since the epoch (a whole number) or a valid Date',
});
/** Options of {@link PeriodicTasks.backfill}. Times are ms since the epoch, or Dates. */
const BACKFILL_OPTIONS = {
  /** First instant of the range (included). */
  from: instant,
  /** End of the range (excluded); not after now. */
  to: instant,
  /**
   * `buffer-all` (default): the runs are queued in the task's backlog and run one after another,
   * in occurrence order (a scheduler replica releases each as the previous run ends). `allow`: all are submitted at once.
   */
  overlap: z.enum(['buffer-all', 'allow'], { error: "must be 'buffer-all' or 'allow'" }).default('buffer-all'),
  /** Submit occurrences that already ran too (each rerun is a new job, `<id>@<occurrence>#<n>`). */
  force: bool.default(false),
};

/** Options of {@link PeriodicTasks.backfill}. Times are ms since the epoch, or Dates. */
export type BackfillOptions = OptionsOf<typeof BACKFILL_OPTIONS>;
/** How a backfill's runs overlap: `buffer-all` (default) one after another, in order; `allow` all at once. */
export type BackfillOverlap = NonNullable<BackfillOptions['overlap']>;

/** Checked backfill options: the range in ms. */
export interface CheckedBackfill {
  from: number;
  to: number;
  overlap: BackfillOverlap;
  force: boolean;
}

/**
 * Validates backfill options against `now`.
 * @throws {ValidationError} naming the bad option.
 */
export function checkBackfill(options: unknown, now: number): CheckedBackfill {
  const o = checkOptions(BACKFILL_OPTIONS, options);
  const from = Number(o.from);
  const to = Number(o.to);
  if (Number.isNaN(from)) throw new ValidationError('from', 'must be a valid Date');
  if (Number.isNaN(to)) throw new ValidationError('to', 'must be a valid Date');
  if (to <= from) throw new ValidationError('to', 'must be after from');
  if (to > now)
    throw new ValidationError('to', `must not be after now (${new Date(now).toISOString()}): a backfill runs past occurrences`);
  return { from, to, overlap: o.overlap, force: o.force };
}

/**
 * The occurrences of `timer` in [from, to), ascending, in chunks of at most `size`: those of the
 * timer's own grid (an interval's anchor + k × interval, whatever `from` is), as the scheduler
 * plans them, so that each has the job id the scheduler gives it. Excluded ones are left out.
 * @throws {ValidationError} naming `to` when the range holds more than {@link MAX_BACKFILL}.
 */
export function* occurrencesIn(timer: Timer, from: number, to: number, size: number): Generator<number[]> {
  let chunk: number[] = [];
  let count = 0;
  const excludes = excludesOf(timer);
  for (let t: number | null = timer.next(new Date(from - 1))?.getTime() ?? null; t !== null && t < to; ) {
    if (++count > MAX_BACKFILL) throw new ValidationError('to', `the range holds more than ${MAX_BACKFILL} occurrences`);
    if (!excludes?.(t)) chunk.push(t);
    if (chunk.length === size) {
      yield chunk;
      chunk = [];
    }
    const n: number | null = timer.next(new Date(t))?.getTime() ?? null;
    // (a timer that does not advance ends the range)
    t = n !== null && n > t ? n : null;
  }
  if (chunk.length) yield chunk;
}

/**
 * Backfills task `id` (timer `timer`) over the checked range, batch by batch. Resolves null when
 * the task is gone (before the first batch).
 */
export async function runBackfill(
  store: PeriodicStore,
  id: string,
  timer: Timer,
  b: CheckedBackfill,
  now: number | undefined,
): Promise<BackfillResult | null> {
  // (counted first: a range too long is refused before anything is written)
  let total = 0;
  for (const chunk of occurrencesIn(timer, b.from, b.to, 10_000)) total += chunk.length;
  const out: BackfillResult = { occurrences: total, submitted: 0, alreadyRan: 0 };
  for (const occurrences of occurrencesIn(timer, b.from, b.to, BACKFILL_BATCH)) {
    const r = await store.backfill({ id, mode: b.overlap, force: b.force, now, occurrences });
    if (!r) return out.submitted + out.alreadyRan === 0 ? null : out;
    out.submitted += r.done;
    out.alreadyRan += r.already;
  }
  return out;
}

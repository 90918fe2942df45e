/**
 * The queue's history (processed and failed runs and their run times, per task, per minute for
 * 24 hours and per day for 90 days) as finish.lua stores it: one hash a minute and one a day per
 * shard (keys in ./keys.ts, script in lua/includes/history.lua), each field a count added to once
 * per finish call. Fields, per task: `f:<task>` failed runs, `<b>:<task>` runs whose run time fell
 * in bucket b of a fixed log scale (4 buckets a doubling), whose sum is the runs processed. Beside
 * them, per group, the runs each group had ended in a minute (`hist:g:<minute>`, kept 2 hours, for
 * the dashboard's fairness view): an executor adds those up over a few seconds and sends them apart
 * from its finish calls (lua/history-groups.lua), so a finish call costs no more for them.
 */
import type { StringValue } from './string-array.js';
import { HISTORY_TTL_S } from './wire.js';

/** Buckets a doubling of the run-time scale: a percentile read from them is within 19 % (2^¼). */
const PER_DOUBLING = 4;
/** The last bucket: 2^25 ms (about 9 h) and more. */
export const MAX_BUCKET = 100;
/**
 * The days of history the dashboard shows: the day hashes are kept a day longer (HISTORY_TTL_S
 * in ./wire.ts, their expiry, set by the script), so that the oldest shown is whole.
 */
export const DAYS_KEPT = HISTORY_TTL_S.day / 86400 - 1;
/** The minutes of per-group history kept (the hashes' expiry, HISTORY_TTL_S in ./wire.ts). */
export const GROUP_MINUTES_KEPT = HISTORY_TTL_S.groups / 60;

/** The bucket of a run time (ms): 0 below 1 ms, then b for 2^((b-1)/4) <= ms < 2^(b/4). */
export function bucketOf(ms: number): number {
  if (!(ms >= 1)) return 0;
  return Math.min(MAX_BUCKET, 1 + Math.floor(PER_DOUBLING * Math.log2(ms)));
}

/** The upper bound of bucket `b` (ms): the run time a percentile falling in it reads as. */
export function bucketUpper(b: number): number {
  return 2 ** (b / PER_DOUBLING);
}

/** A run as the history counts it: its task, run time (ms) and whether it failed. */
export interface HistoryRun {
  task: string;
  ms: number;
  failed: boolean;
}

/** The history fields of a batch of runs, with their counts: field, count, ... (one HINCRBY each). */
export function historyFields(runs: Iterable<HistoryRun>): StringValue[] {
  const counts = new Map<string, number>();
  for (const r of runs) {
    const field = `${bucketOf(r.ms)}:${r.task}`;
    counts.set(field, (counts.get(field) ?? 0) + 1);
    if (r.failed) counts.set(`f:${r.task}`, (counts.get(`f:${r.task}`) ?? 0) + 1);
  }
  const out: StringValue[] = [];
  for (const [field, n] of counts) out.push(field, String(n));
  return out;
}

/** One task's figures over some time: runs processed, failed, and processed per run-time bucket. */
export interface TaskFigures {
  processed: number;
  failed: number;
  buckets: Map<number, number>;
}

/** Adds the fields of a history hash to `into` (by task); a field of another form is passed over. */
export function addHistory(into: Map<string, TaskFigures>, hash: Record<string, string>): void {
  for (const [field, value] of Object.entries(hash)) {
    const at = field.indexOf(':');
    const n = Number(value);
    if (at < 1 || !Number.isFinite(n)) continue;
    const kind = field.slice(0, at);
    const task = field.slice(at + 1);
    let t = into.get(task);
    if (!t) {
      t = { processed: 0, failed: 0, buckets: new Map() };
      into.set(task, t);
    }
    if (kind === 'f') t.failed += n;
    else if (/^\d+$/.test(kind)) {
      const b = Number(kind);
      t.buckets.set(b, (t.buckets.get(b) ?? 0) + n);
      t.processed += n;
    }
  }
}

/** The `p` quantile (0..1) of the run times counted in `buckets` (ms, a bucket's upper bound), or undefined when none. */
export function percentile(buckets: ReadonlyMap<number, number>, p: number): number | undefined {
  let total = 0;
  for (const n of buckets.values()) total += n;
  if (total === 0) return undefined;
  const rank = Math.max(1, Math.ceil(p * total));
  let seen = 0;
  for (const b of [...buckets.keys()].sort((x, y) => x - y)) {
    seen += buckets.get(b)!;
    if (seen >= rank) return bucketUpper(b);
  }
  return undefined;
}

/** The minute (since the epoch) of time `ms`, and the day of a minute. */
export const minuteOf = (ms: number): number => Math.floor(ms / 60_000);
export const dayOf = (minute: number): number => Math.floor(minute / 1440);

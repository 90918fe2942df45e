/**
 * A queue's history as the dashboard shows it (read from Redis, see src/redis/history.ts, so that
 * it outlives the dashboard process): the last hour per minute and the last 90 days per day, each
 * summed over the queue's shards, with per-task figures. The reader refreshes it as it ticks: the
 * whole hour and the 90 days on its first tick (or after a pause), then the current minute and
 * the one before from each tick (dashboard-tick.lua reads them), and today every 10 minutes, so
 * that it costs Redis one command per shard every 10 minutes, which the reader takes from its
 * views' budget.
 */

import type { TickHistory } from '../redis/dashboard-store.js';
import { addHistory, DAYS_KEPT, dayOf, minuteOf, percentile, type TaskFigures } from '../redis/history.js';
import type { HistoryStore } from '../redis/history-store.js';

/** Minutes the overview's chart and hour table show. */
export const HOUR = 60;
/** How often today is read again (ms). */
const DAYS_EVERY_MS = 10 * 60_000;

/** One point of a history chart: start of its minute or day (s), processed, failed. */
export type HistoryPoint = [number, number, number];

/** One row of the per-task table: the task, its runs processed and failed, their rate, and run-time percentiles (ms). */
export interface TaskRow {
  task: string;
  processed: number;
  failed: number;
  /** Runs processed per minute (hour window) or per day (days window). */
  rate: number;
  /** Failed of processed (0..1). */
  failureRate: number;
  p50?: number;
  p95?: number;
}

/** Per-task figures summed over every shard's hash of one minute or day. */
type Period = Map<string, TaskFigures>;

function summed(perShard: ReadonlyArray<ReadonlyArray<Record<string, string>>>, count: number): Period[] {
  const out: Period[] = [];
  for (let i = 0; i < count; i++) {
    const period: Period = new Map();
    for (const shard of perShard) addHistory(period, shard[i] ?? {});
    out.push(period);
  }
  return out;
}

function totals(p: Period | undefined): [number, number] {
  let processed = 0;
  let failed = 0;
  for (const t of p?.values() ?? []) {
    processed += t.processed;
    failed += t.failed;
  }
  return [processed, failed];
}

/** The per-task rows of `periods` (rate per period), busiest task first. */
export function taskRows(periods: Iterable<Period>, length: number): TaskRow[] {
  const all: Period = new Map();
  for (const p of periods) {
    for (const [task, f] of p) {
      let t = all.get(task);
      if (!t) {
        t = { processed: 0, failed: 0, buckets: new Map() };
        all.set(task, t);
      }
      t.processed += f.processed;
      t.failed += f.failed;
      for (const [b, n] of f.buckets) t.buckets.set(b, (t.buckets.get(b) ?? 0) + n);
    }
  }
  return [...all]
    .map(([task, t]) => ({
      task,
      processed: t.processed,
      failed: t.failed,
      rate: t.processed / length,
      failureRate: t.processed > 0 ? t.failed / t.processed : 0,
      p50: percentile(t.buckets, 0.5),
      p95: percentile(t.buckets, 0.95),
    }))
    .sort((a, b) => b.processed - a.processed || (a.task < b.task ? -1 : 1));
}

/** A queue's history, kept up to date by the dashboard's reader. */
export class QueueHistory {
  /** The minutes read, by minute since the epoch (the last {@link HOUR} kept). */
  private readonly minutes = new Map<number, Period>();
  /** The days read: the first day's number and each day's figures. */
  private days: { from: number; periods: Period[] } = { from: 0, periods: [] };
  private daysAt = 0;
  /** The newest minute, by the server clock of the last refresh. */
  private now = 0;

  constructor(private readonly stores: readonly HistoryStore[]) {}

  /**
   * Takes what a tick read at server time `now` (ms), `ticked` (each shard's minutes, see
   * TickHistory), and reads what is due besides (`local`: this process's clock, for the pace).
   * Answers whether it read only today's hashes, or nothing (not a whole window, as a first read does).
   */
  async refresh(now: number, ticked: ReadonlyArray<TickHistory | undefined>, local = Date.now()): Promise<boolean> {
    const minute = minuteOf(now);
    let small = true;
    if (this.minutes.size === 0 || minute > minuteOf(this.now) + 1 || ticked.some((t) => t === undefined)) {
      // (the whole hour when none was read, or the ticks paused)
      const from = minute - HOUR + 1;
      const read = await Promise.all(this.stores.map((s) => s.minutes(from, minute)));
      summed(read, HOUR).forEach((p, i) => {
        this.minutes.set(from + i, p);
      });
      small = false;
    } else {
      this.ticked(ticked as TickHistory[]);
    }
    for (const m of this.minutes.keys()) if (m <= minute - HOUR) this.minutes.delete(m);
    this.now = now;
    const today = dayOf(minute);
    const lastDay = this.days.from + this.days.periods.length - 1;
    if (this.days.periods.length === 0 || today > lastDay + 1) {
      const from = today - DAYS_KEPT + 1;
      const read = await Promise.all(this.stores.map((s) => s.days(from, today)));
      this.days = { from, periods: summed(read, DAYS_KEPT) };
      this.daysAt = local;
      small = false;
    } else if (local - this.daysAt >= DAYS_EVERY_MS || today === lastDay + 1) {
      // (today's hash again, and yesterday's when the day is new)
      const from = Math.min(lastDay, today);
      const read = await Promise.all(this.stores.map((s) => s.days(from, today)));
      const periods = [...this.days.periods];
      summed(read, today - from + 1).forEach((p, i) => {
        periods[from - this.days.from + i] = p;
      });
      const drop = periods.length - DAYS_KEPT;
      this.days = drop > 0 ? { from: this.days.from + drop, periods: periods.slice(drop) } : { from: this.days.from, periods };
      this.daysAt = local;
    }
    return small;
  }

  /** The minutes every shard's tick read (a minute some shard's clock was not at keeps what it had). */
  private ticked(shards: readonly TickHistory[]): void {
    const periods = new Map<number, { shards: number; period: Period }>();
    const add = (minute: number, hash: Record<string, string>) => {
      let p = periods.get(minute);
      if (!p) {
        p = { shards: 0, period: new Map() };
        periods.set(minute, p);
      }
      p.shards++;
      addHistory(p.period, hash);
    };
    for (const t of shards) {
      add(t.minute - 1, t.previous);
      add(t.minute, t.current);
    }
    for (const [minute, p] of periods) if (p.shards === shards.length) this.minutes.set(minute, p.period);
  }

  /** The last hour, a point a minute (the current minute last). */
  hourSeries(): HistoryPoint[] {
    const last = minuteOf(this.now);
    const out: HistoryPoint[] = [];
    for (let m = last - HOUR + 1; m <= last; m++) out.push([m * 60, ...totals(this.minutes.get(m))]);
    return out;
  }

  /** The last 90 days, a point a day (today last; today's count as of the last day read). */
  daySeries(): HistoryPoint[] {
    return this.days.periods.map((p, i) => [(this.days.from + i) * 86_400, ...totals(p)]);
  }

  /** Per-task rows of the last hour (rate per minute). */
  hourTasks(): TaskRow[] {
    return taskRows(this.minutes.values(), HOUR);
  }

  /** Per-task rows of the last 90 days (rate per day, over the days since the first with runs). */
  dayTasks(): TaskRow[] {
    const first = this.days.periods.findIndex((p) => p.size > 0);
    return first < 0 ? [] : taskRows(this.days.periods, this.days.periods.length - first);
  }
}

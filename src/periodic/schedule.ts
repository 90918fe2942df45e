/**
 * A task's schedule: one timer or several (their union), exclusions, start and end bounds,
 * jitter and a limit on runs. A task with only one timer stores it as it is in its `timer` field;
 * one with more stores the schedule there as JSON (`{"timers": [...], ...}`), so that every reader
 * of a task's timer (claims, upsert's "same timer" check, look-ahead) reads the whole schedule, and
 * changing any part of it plans the task afresh.
 */
import { ValidationError } from '../errors.js';
import { decodeSchedule, encodeSchedule, isScheduleJson, type ScheduleSpec } from '../redis/periodic-codec.js';
import { type Exclusions, parseExclusions, parseTimer, type Timer, TimerSyntaxError } from '../timers/index.js';

export type { ScheduleSpec };

/** A schedule as one timer: its `next` is the union of its timers' within [startAt, endAt]. */
export interface ScheduleTimer extends Timer {
  readonly schedule: ScheduleSpec;
  /** Whether occurrence `t` (ms) falls in an exclusion (it is recorded, not run). */
  excludes(t: number): boolean;
  /** The end of the excluded stretch `t` falls in (see {@link Exclusions.excludedUntil}); `t` when none. */
  excludedUntil(t: number): number;
}

/**
 * Builds the timer of a schedule read in `timezone`.
 * @throws {TimerSyntaxError} for a bad timer (its `part` says which); {@link ValidationError} on
 * `exclude` for a bad exclusion.
 */
export function scheduleTimer(s: ScheduleSpec, timezone: string | undefined): ScheduleTimer {
  const timers = s.timers.map((spec) => parseTimer(spec, { timezone }));
  let exclusions: Exclusions | null = null;
  if (s.exclude?.length) {
    try {
      // (in the task's zone, else the zone its first timer names: `*-*-* 09:00 Europe/Paris`)
      exclusions = parseExclusions(s.exclude, timezone ?? timers[0].timezone);
    } catch (err) {
      if (err instanceof TimerSyntaxError) throw new ValidationError('exclude', err.message);
      throw err;
    }
  }
  const { startAt, endAt } = s;
  const first = timers[0];
  return {
    // (an interval only when every timer is one: a list's calendar instants never move, see
    // lua/includes/periodicClock.lua)
    kind: timers.find((t) => t.kind !== 'interval')?.kind ?? 'interval',
    spec: encodeSchedule(s),
    normalized: timers.map((t) => t.normalized).join(' | '),
    timezone: first.timezone,
    ...(timers.length === 1 && first.intervalMs !== undefined ? { intervalMs: first.intervalMs } : {}),
    schedule: s,
    excludes: (t) => exclusions?.excludes(t) ?? false,
    excludedUntil: (t) => exclusions?.excludedUntil(t) ?? t,
    next(after: Date): Date | null {
      let from = after.getTime();
      if (startAt !== undefined && from < startAt - 1) from = startAt - 1;
      let best: number | null = null;
      for (const t of timers) {
        const n = t.next(new Date(from))?.getTime();
        if (n !== undefined && (best === null || n < best)) best = n;
      }
      if (best === null || (endAt !== undefined && best > endAt)) return null;
      return new Date(best);
    },
  };
}

/** A timer's exclusion test (a schedule's), or undefined for a plain timer. */
export function excludesOf(timer: Timer): ((t: number) => boolean) | undefined {
  return 'schedule' in timer ? (t) => (timer as ScheduleTimer).excludes(t) : undefined;
}

/** Most excluded stretches (or elapses, where a stretch's end is not certain) {@link nextRuns} passes over. */
const MAX_PASSED = 10_000;

/**
 * The next runs of a task from its next occurrence `first` (included when not excluded), in
 * time order: at most `count` and no more than its limit leaves (`runs` scheduled so far), none
 * after `until`. Each excluded stretch is jumped over at once (a weekend excluded from a
 * five-minute timer is one step, not 576).
 */
export function nextRuns(timer: Timer, first: number, count: number, runs = 0, until = Infinity): number[] {
  const s = 'schedule' in timer ? (timer as ScheduleTimer) : null;
  const limit = s?.schedule.limit;
  const most = limit === undefined ? count : Math.min(count, Math.max(0, limit - runs));
  const out: number[] = [];
  let o: number | null = first;
  for (let passed = 0; o !== null && o <= until && out.length < most && passed < MAX_PASSED; ) {
    if (!s?.excludes(o)) {
      out.push(o);
      o = timer.next(new Date(o))?.getTime() ?? null;
      continue;
    }
    passed++;
    // the first elapse at or after the stretch's end (or the next one, when its end is not certain)
    const end = s.excludedUntil(o);
    o = timer.next(new Date(end > o ? end - 1 : o))?.getTime() ?? null;
  }
  return out;
}

/** The schedule timer of a stored `timer` field, or the plain timer when it holds one spec. */
export function storedTimer(stored: string, timezone: string | undefined): Timer {
  return isScheduleJson(stored) ? scheduleTimer(decodeSchedule(stored), timezone) : parseTimer(stored, { timezone });
}

/** What {@link scheduleOf} and {@link describeControls} read of a task. */
export interface ScheduleFields {
  timer: string | string[];
  exclude?: string[];
  startAt?: number;
  endAt?: number;
  limit?: number;
  jitter?: number;
  immediately?: boolean;
  runs?: number;
}

/** The schedule of a task as {@link PeriodicTasks.get} reads it. */
export function scheduleOf(t: ScheduleFields): ScheduleSpec {
  const { exclude, startAt, endAt, jitter, limit } = t;
  return { timers: Array.isArray(t.timer) ? t.timer : [t.timer], exclude, startAt, endAt, jitter, limit };
}

/**
 * The schedule controls a task has, one short phrase each (`exclude *-12-25`, `from <ISO>`,
 * `until <ISO>`, `runs 3/5`, `jitter 30000 ms`, `immediately`), for the CLI and the dashboard.
 */
export function describeControls(t: ScheduleFields): string[] {
  const out: string[] = [];
  if (t.exclude?.length) out.push(`exclude ${t.exclude.join(', ')}`);
  if (t.startAt !== undefined) out.push(`from ${new Date(t.startAt).toISOString()}`);
  if (t.endAt !== undefined) out.push(`until ${new Date(t.endAt).toISOString()}`);
  if (t.limit !== undefined) out.push(`runs ${t.runs ?? 0}/${t.limit}`);
  if (t.jitter) out.push(`jitter ${t.jitter} ms`);
  if (t.immediately) out.push('immediately');
  return out;
}

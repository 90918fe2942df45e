/**
 * Which occurrences a due task submits, computed in JavaScript (calendar events and cron rules
 * cannot be evaluated in Lua): the catch-up policy applied to the occurrences that came due
 * since the task's stored nextrun.
 */
import { TimerStalledError } from '../errors.js';
import type { Timer } from '../timers/index.js';
import type { CatchupPolicy } from './definition.js';

/** What one firing of a task does. */
export interface Plan {
  /** Occurrences (ms) to submit, ascending. */
  occurrences: number[];
  /** The next occurrence after them, or null when the timer never elapses again. */
  nextrun: number | null;
  /** Distance from the last due occurrence to the next (ms), used by tolerance for non-interval timers. */
  period: number;
  /** Occurrences passed over by the catch-up policy. */
  missed: { count: number; first: number; last: number } | null;
}

/** Most occurrences walked through for one task in one planning step; past this the walk restarts near now. */
export const MAX_WALK = 10_000;
/** Longest one walk over a task's occurrences may take (ms of real time); a plan walks at most twice. */
export const WALK_BUDGET_MS = 10;
/**
 * Occurrences a walk always reaches before its time budget applies, so that the plan of a short
 * outage never depends on the machine's load (a slow first call cut it short under load).
 */
export const MIN_WALK = 256;
/** Most occurrences `catchup: 'all'` submits at once. */
export const MAX_CATCHUP_RUNS = 1000;

export interface PlanInput {
  /** The task's id (for errors). */
  id?: string;
  timer: Timer;
  /** The stored next occurrence (ms). */
  nextrun: number;
  /** Now on the scheduler's clock (ms). */
  now: number;
  catchup: CatchupPolicy;
  catchupWindow: number;
  /**
   * When the schedulers' current unbroken run of claims and releases began (ms; default `now`). An occurrence already
   * `misfireGraceMs` late then means no scheduler ran: the catch-up policy applies. One that is
   * late only because the schedulers are behind (they never paused that long) is submitted.
   */
  since?: number;
  /** How late (ms) an occurrence must be when the claims resume for the catch-up policy to apply. */
  misfireGraceMs: number;
  /**
   * Whether an occurrence is excluded (the task's schedule, see ./schedule.ts): `latest` takes
   * the newest due occurrence that is not (and the last one, which the bounds record as excluded).
   */
  excludes?: (t: number) => boolean;
}

/** The timer's next occurrence after `t`; throws TimerStalledError when it is not after `t`. */
function nextOf(id: string, timer: Timer, t: number): number | null {
  const n = timer.next(new Date(t))?.getTime() ?? null;
  if (n !== null && !(n > t)) throw new TimerStalledError(id, t);
  return n;
}

/**
 * The occurrences from `first` up to `now`, stopping after MAX_WALK of them or, past MIN_WALK, WALK_BUDGET_MS;
 * `rest` is the first occurrence not walked (null: none).
 */
function walk(id: string, timer: Timer, first: number | null, now: number): { due: number[]; rest: number | null } {
  const due: number[] = [];
  const started = performance.now();
  let o = first;
  while (o !== null && o <= now && due.length < MAX_WALK) {
    due.push(o);
    o = nextOf(id, timer, o);
    if (due.length >= MIN_WALK && performance.now() - started > WALK_BUDGET_MS) break;
  }
  return { due, rest: o };
}

/**
 * Plans one firing. A task claimed ahead of time (nextrun still in the future) fires exactly its
 * nextrun. Otherwise every occurrence from nextrun up to now is due. When the oldest of them is
 * less than `misfireGraceMs` late when the claims' unbroken run began (`since`), the schedulers
 * were merely busy (behind, or taking over a dead replica's claim) and all are submitted. Otherwise
 * no scheduler ran for a while, and the catch-up policy
 * picks: `latest` the last due occurrence that is not excluded (and the last one, excluded); `all` those within `catchupWindow` (at most
 * {@link MAX_CATCHUP_RUNS}); `none` nothing (the task resumes with its next future occurrence).
 * The walk is bounded (MAX_WALK occurrences, WALK_BUDGET_MS): past the bound it starts again at
 * the catch-up window, and the occurrences skipped are counted as missed in one entry.
 * @throws TimerStalledError when the timer's next occurrence is not after the one before.
 */
export function plan(p: PlanInput): Plan {
  const { timer, now } = p;
  const id = p.id ?? '?';
  if (p.nextrun > now) {
    const nextrun = nextOf(id, timer, p.nextrun);
    return { occurrences: [p.nextrun], nextrun, period: nextrun === null ? 0 : nextrun - p.nextrun, missed: null };
  }
  let { due, rest } = walk(id, timer, p.nextrun, now);
  /** Occurrences passed over uncounted by a restart: from the stored nextrun up to before the restart. */
  let skippedAhead: { first: number; last: number; walked: number } | null = null;
  if (rest !== null && rest <= now) {
    // Very long downtime on a fast timer (or a slow timer): skip ahead instead of walking every occurrence.
    const from = Math.max(rest, now - p.catchupWindow - 1);
    const restart = from > rest ? nextOf(id, timer, from) : rest;
    skippedAhead = { first: p.nextrun, last: from, walked: due.length };
    ({ due, rest } = walk(id, timer, restart, now));
    if (rest !== null && rest <= now) {
      // Even the catch-up window holds too many: resume after now.
      ({ due, rest } = { due: [], rest: nextOf(id, timer, now) });
    }
  }
  const last = due[due.length - 1];
  const period = rest === null || last === undefined ? 0 : rest - last;
  let take: number[];
  const downtime = skippedAhead !== null || (due.length > 0 && (p.since ?? now) - due[0] >= p.misfireGraceMs);
  switch (downtime ? p.catchup : 'on-time') {
    case 'on-time':
      take = due;
      break;
    case 'all': {
      const from = now - p.catchupWindow;
      take = due.filter((t) => t >= from).slice(-MAX_CATCHUP_RUNS);
      break;
    }
    case 'none':
      take = [];
      break;
    default: {
      // the newest due occurrence that is not excluded; and the last one, excluded, is recorded
      // as such (those between count as missed, in one entry)
      let k = due.length - 1;
      while (k >= 0 && p.excludes?.(due[k])) k--;
      take = k >= 0 && k < due.length - 1 ? [due[k], last] : due.length ? [last] : [];
    }
  }
  // Missed: the occurrences walked and not taken, and those skipped ahead: one entry, never naming
  // an occurrence that is taken.
  const taken = new Set(take);
  const skipped = due.filter((t) => !taken.has(t));
  let missed: Plan['missed'] = null;
  if (skippedAhead) {
    missed = {
      count: skippedAhead.walked + skipped.length, // at least: those between the two walks are not counted
      first: skippedAhead.first,
      last: skipped.length ? skipped[skipped.length - 1] : skippedAhead.last,
    };
  } else if (skipped.length) {
    missed = { count: skipped.length, first: skipped[0], last: skipped[skipped.length - 1] };
  }
  return { occurrences: take, nextrun: rest, period, missed };
}

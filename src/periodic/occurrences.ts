/**
 * Which occurrences a due task submits, computed in JavaScript (calendar events and cron rules
 * cannot be evaluated in Lua): the catch-up policy applied to the occurrences that came due
 * since the task's stored nextrun.
 */
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

/** Most occurrences walked through when catching up; past this the walk restarts near now. */
const MAX_WALK = 100_000;
/** Most occurrences `catchup: 'all'` submits at once. */
export const MAX_CATCHUP_RUNS = 1000;

export interface PlanInput {
  timer: Timer;
  /** The stored next occurrence (ms). */
  nextrun: number;
  /** Now on the scheduler's clock (ms). */
  now: number;
  catchup: CatchupPolicy;
  catchupWindow: number;
  /** An occurrence this much late (ms) or more means no scheduler ran: the catch-up policy applies. */
  misfireGraceMs: number;
}

const nextOf = (timer: Timer, t: number): number | null => timer.next(new Date(t))?.getTime() ?? null;

/**
 * Plans one firing. A task claimed ahead of time (nextrun still in the future) fires exactly its
 * nextrun. Otherwise every occurrence from nextrun up to now is due. When the oldest of them is
 * less than `misfireGraceMs` late, the scheduler was merely busy (or took over a dead replica's
 * claim) and all are submitted. Otherwise no scheduler ran for a while, and the catch-up policy
 * picks: `latest` the last due occurrence; `all` those within `catchupWindow` (at most
 * {@link MAX_CATCHUP_RUNS}); `none` nothing (the task resumes with its next future occurrence).
 */
export function plan(p: PlanInput): Plan {
  const { timer, now } = p;
  if (p.nextrun > now) {
    const nextrun = nextOf(timer, p.nextrun);
    return { occurrences: [p.nextrun], nextrun, period: nextrun === null ? 0 : nextrun - p.nextrun, missed: null };
  }
  const due: number[] = [];
  let o: number | null = p.nextrun;
  let uncounted = 0;
  while (o !== null && o <= now && due.length < MAX_WALK) {
    due.push(o);
    o = nextOf(timer, o);
  }
  if (o !== null && o <= now) {
    // Very long downtime on a fast timer: skip ahead instead of walking every occurrence.
    const restart = nextOf(timer, now - p.catchupWindow - 1);
    uncounted = 1;
    o = restart;
    due.length = 0;
    while (o !== null && o <= now && due.length < MAX_WALK) {
      due.push(o);
      o = nextOf(timer, o);
    }
    if (due.length === 0) {
      return { occurrences: [], nextrun: o, period: 0, missed: { count: MAX_WALK, first: p.nextrun, last: now } };
    }
  }
  const last = due[due.length - 1];
  const period = o === null ? 0 : o - last;
  let take: number[];
  const downtime = now - due[0] >= p.misfireGraceMs || uncounted > 0;
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
    default:
      take = [last];
  }
  const passed = due.length - take.length;
  let missed: Plan['missed'] = null;
  if (passed > 0 || uncounted) {
    const taken = new Set(take);
    const skippedOnes = due.filter((t) => !taken.has(t));
    missed = {
      count: passed + (uncounted ? MAX_WALK : 0),
      first: uncounted ? p.nextrun : skippedOnes[0],
      last: skippedOnes.length ? skippedOnes[skippedOnes.length - 1] : due[0],
    };
  }
  return { occurrences: take, nextrun: o, period, missed };
}

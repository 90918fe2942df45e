/**
 * A plan's occurrences passed through the task's schedule controls (see ./schedule.ts):
 * exclusions (recorded, not run), startAt/endAt, the limit on runs, and jitter (each occurrence's
 * due time). Pure: every replica computes the same from the same claim, and the stage commits it
 * under the claim's token, so exactly-once holds as for any plan.
 */
import type { Timer } from '../timers/index.js';
import { dueOf } from './jitter.js';
import type { Plan } from './occurrences.js';
import type { ScheduleTimer } from './schedule.js';

/** A plan after the schedule controls, with what the stage records besides. */
export interface Bounded {
  plan: Plan;
  /** Occurrences skipped by an exclusion (recorded as `excluded`). */
  excluded: number[];
  /** Due time of each of plan.occurrences (same order); empty when none is jittered. */
  dues: number[];
  /** Scheduled runs counted after this plan (for `limit`). */
  runs: number;
}

function isSchedule(t: Timer): t is ScheduleTimer {
  return 'schedule' in t;
}

/**
 * Applies the schedule controls of `timer` to plan `p` of task `id`, which has had `runs`
 * scheduled runs so far. The trigger being served (`triggered`) is no scheduled occurrence: it is
 * neither excluded, counted, nor jittered. When the limit is reached the plan has no next
 * occurrence (the task has ended).
 */
export function applyBounds(id: string, timer: Timer, p: Plan, triggered: number | null, runs: number): Bounded {
  const s = isSchedule(timer) ? timer.schedule : undefined;
  const occurrences: number[] = [];
  const excluded: number[] = [];
  let count = runs;
  for (const o of p.occurrences) {
    if (o === triggered) {
      occurrences.push(o);
      continue;
    }
    // (a nextrun planned before the bounds changed)
    if (s?.startAt !== undefined && o < s.startAt) continue;
    if (s?.endAt !== undefined && o > s.endAt) continue;
    if (s && isSchedule(timer) && timer.excludes(o)) {
      excluded.push(o);
      continue;
    }
    if (s?.limit !== undefined && count >= s.limit) continue;
    occurrences.push(o);
    count++;
  }
  const ended = s?.limit !== undefined && count >= s.limit;
  const jitter = s?.jitter;
  const dues = jitter ? occurrences.map((o) => (o === triggered ? o : dueOf(id, o, jitter))) : [];
  return { plan: { ...p, occurrences, nextrun: ended ? null : p.nextrun }, excluded, dues, runs: count };
}

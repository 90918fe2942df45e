/**
 * A task as a scheduler replica claimed it (periodic-claim), read into what planning needs, and
 * the stage record (periodic-stage) that commits its plan.
 */
import { type ClaimedTask, claimedPart, type StageRecord } from '../redis/periodic-store.js';
import type { Timer } from '../timers/index.js';
import type { Bounded } from './bounds.js';
import { type CatchupPolicy, DEFAULT_CATCHUP_WINDOW } from './definition.js';

/** A claimed task: its claim's token and what its plan is computed from. */
export interface Claimed {
  id: string;
  token: string;
  nextrun: number | null;
  timer: string;
  timezone: string;
  catchup: CatchupPolicy;
  catchupWindow: number;
  triggered: number | null;
  enabled: boolean;
  /** Scheduled runs so far (for `limit`). */
  runs: number;
  /** How far its grid moved back after backward jumps of the server's clock (ms; intervals only). */
  gridShift: number;
  /** What its occurrences' job ids end with: `~<epoch>` for an interval task once the clock went back, else ''. */
  idSuffix: string;
  /** The task's fields as the claim read them, which the stage takes as they are. */
  raw: ClaimedTask;
}

/** A task the claim answered, read into a {@link Claimed}. */
export function claimed(t: ClaimedTask, epoch: number): Claimed {
  return {
    id: t.id,
    token: t.token,
    nextrun: t.nextrun === '' ? null : Number(t.nextrun),
    timer: t.timer,
    timezone: t.timezone,
    catchup: (t.catchup || 'latest') as CatchupPolicy,
    catchupWindow: t.catchupWindow === '' ? DEFAULT_CATCHUP_WINDOW : Number(t.catchupWindow),
    triggered: t.triggered === '' ? null : Number(t.triggered),
    enabled: t.enabled === '1',
    runs: Number(t.runs) || 0,
    gridShift: Number(t.gs) || 0,
    idSuffix: t.kind === 'interval' && epoch > 0 ? `~${epoch}` : '',
    raw: t,
  };
}

/**
 * `timer` with its grid moved `shiftMs` earlier (an interval task's after backward jumps of the
 * server's clock): its elapses are the timer's, less the shift.
 */
export function shiftedTimer(timer: Timer, shiftMs: number): Timer {
  if (shiftMs === 0) return timer;
  return {
    ...timer,
    next(after: Date): Date | null {
      const n = timer.next(new Date(after.getTime() + shiftMs));
      return n === null ? null : new Date(n.getTime() - shiftMs);
    },
  };
}

/** The stage record committing plan `b` of claimed task `c` (`failure`: why its timer stopped, or ''). */
export function stageRecord(c: Claimed, b: Bounded, failure: string): StageRecord {
  const p = b.plan;
  return {
    id: c.id,
    token: c.token,
    triggered: String(c.triggered ?? ''),
    nextrun: String(p.nextrun ?? ''),
    period: String(p.occurrences.length ? p.period : ''),
    missed: String(p.missed?.count ?? 0),
    missedFirst: String(p.missed?.first ?? ''),
    missedLast: String(p.missed?.last ?? ''),
    occurrences: p.occurrences.join(','),
    excluded: b.excluded.join(','),
    dues: b.dues.join(','),
    runs: b.runs === c.runs ? '' : String(b.runs),
    // an enabled task's schedule ran out with this plan (an event rule's run goes instead)
    ended: p.nextrun === null && c.nextrun !== null && c.enabled && c.raw.rule === '' && !failure ? '1' : '',
    ...claimedPart(c.raw),
    failure,
    idSuffix: c.idSuffix,
  };
}

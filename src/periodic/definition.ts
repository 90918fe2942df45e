/**
 * Periodic task definitions: their API types and validation (zod). How they are stored and read
 * back is src/redis/periodic-codec.ts.
 */
import { z } from 'zod';
import { ValidationError } from '../errors.js';
import type { Priority } from '../queue/job.js';
import { JOB_FIELDS, packValue } from '../queue/validate.js';
import { encodeSchedule, type ScheduleSpec, type TaskRecord } from '../redis/periodic-codec.js';
import { type Timer, TimerSyntaxError } from '../timers/index.js';
import { zodError } from '../util/check.js';
import { scheduleTimer, storedTimer } from './schedule.js';

/** What happens when an occurrence comes while an earlier run of the task has not ended. */
export type OverlapPolicy = 'skip' | 'buffer-one' | 'allow' | 'cancel-previous' | 'buffer-all';
/** What happens to occurrences missed while no scheduler ran. */
export type CatchupPolicy = 'latest' | 'all' | 'none';

/** A periodic task as a caller defines it ({@link PeriodicTasks.upsert}). Times are milliseconds. */
export interface PeriodicTaskDefinition<A = unknown> {
  /** Unique id: 1–200 of `A-Z a-z 0-9 . _ : -`, not beginning `r:` (reserved for event rules' runs). */
  id: string;
  /** Name of the handler that runs each occurrence. */
  task: string;
  /**
   * When it runs: a systemd calendar event (`*-*-* 09:00`, `Mon..Fri 04:00`, `*:0/15`), a cron
   * rule (`0 9 * * *`), an interval (`every 30s`, `PT15M`) or a one-shot date (`2030-01-01T09:00:00Z`).
   * A list (1–20 specs): the task runs at the union of their occurrences, an instant two share once.
   */
  timer: string | string[];
  /** IANA time zone the timer's wall-clock fields are read in; default UTC. */
  timezone?: string;
  /** Tenant of the submitted jobs; default `default`. */
  group?: string;
  /** The jobs' args: what `SubmitSpec.args` takes (nested at most 100 levels deep). */
  args?: A;
  priority?: Priority;
  subject?: string;
  /** Recorded as the jobs' submitter; default `periodic`. */
  submitter?: string;
  /** Default true. A disabled task keeps its definition and history but never fires. */
  enabled?: boolean;
  /**
   * Who the task belongs to; {@link PeriodicTasks.removeByOwner} removes all of an owner's tasks.
   * Owners beginning `rule:` are reserved (event rules' runs).
   */
  owner?: string;
  /**
   * Default `skip`: an occurrence is not submitted while an earlier run has not ended (recorded as
   * skipped). `buffer-all`: every occurrence runs, one after another in occurrence order (see docs/jobs.md).
   */
  overlap?: OverlapPolicy;
  /**
   * What happens to occurrences that came due while no scheduler ran (an occurrence counts as
   * missed when it is more than the scheduler's `misfireGraceMs`, default 15 s, late; later ones
   * are merely late and always submitted). `latest` (default): one run, for the latest missed
   * occurrence. `all`: each missed occurrence within `catchupWindow`, in order, each its own job
   * (submitted together, so the overlap policy is checked against runs from before the downtime
   * only). `none`: nothing; the task resumes with its next future occurrence. Passed-over
   * occurrences are recorded in the run history as `missed`.
   */
  catchup?: CatchupPolicy;
  /** How far back `catchup: 'all'` looks, in ms; default 5 minutes. */
  catchupWindow?: number;
  /**
   * Nuntium's tolerance (ms): a run that starts less than `interval - tolerance` after the previous
   * run started is dropped (ends `cancelled`, recorded as dropped). Off when left out.
   */
  tolerance?: number;
  /** Timebox (ms): the run's signal aborts then. Interval timers default to half the interval. */
  maxRuntime?: number;
  /** Retries of a failing run; default 0 (the next occurrence is the retry). */
  maxRetries?: number;
  // -- schedule controls (docs/periodic.md): exclusions, bounds, limit, immediately, jitter --
  /**
   * Occurrences not run (recorded in the history as `excluded`), read in the task's zone: whole
   * days (`*-12-25`, `2026-12-24..2026-12-26`, `Sat,Sun`) or windows (`Sun 02:00..04:00`). 1–100.
   */
  exclude?: string[];
  /** No occurrence before this instant (ms since the epoch, or a Date). */
  startAt?: number | Date;
  /** No occurrence after this instant (ms since the epoch, or a Date); past it the task is `ended`. */
  endAt?: number | Date;
  /** At most this many scheduled runs (triggers do not count); then the task is `ended`. */
  limit?: number;
  /** One run (a trigger) when the task is created. */
  immediately?: boolean;
  /** Each occurrence is due a fixed offset in [0, jitter) ms after it, from a hash of id and occurrence. */
  jitter?: number;
  // --- pause on failure (issue 43, part b) ---
  /**
   * Disable the task when a run fails for good (its retries used up), with a note naming the run,
   * and raise a `periodic.paused` event. Enabling it again clears the note. Default false.
   */
  pauseOnFailure?: boolean;
}

/** A stored periodic task, as {@link PeriodicTasks.get} reads it back. */
export interface PeriodicTask<A = unknown>
  extends Required<
    Pick<
      PeriodicTaskDefinition<A>,
      'id' | 'task' | 'group' | 'priority' | 'subject' | 'submitter' | 'enabled' | 'overlap' | 'catchup' | 'catchupWindow'
    >
  > {
  args: A;
  /** The timer spec, or the list of them. */
  timer: string | string[];
  exclude?: string[];
  startAt?: number;
  endAt?: number;
  limit?: number;
  immediately?: boolean;
  jitter?: number;
  /** Scheduled runs so far (staged occurrences; triggers not counted), for `limit`. */
  runs?: number;
  /** Enabled, but its schedule has no occurrence left (past `endAt`, out of runs, a one-shot done). */
  ended: boolean;
  timezone?: string;
  owner?: string;
  tolerance?: number;
  maxRuntime?: number;
  maxRetries: number;
  /** The timer's kind. */
  kind: Timer['kind'];
  /** Next planned occurrence (ms), absent when disabled or when a one-shot timer has elapsed. */
  nextrun?: number;
  /** When the last run started (ms, server clock). */
  lastrun?: number;
  /** Id of the last job submitted for it. */
  lastJobId?: string;
  /** Event rule that created this pending run, for runs scheduled by {@link PeriodicTasks.emit}. */
  rule?: string;
  /**
   * Why the task is disabled: the note given to {@link PeriodicTasks.disable}, the failed run that
   * paused it (`pauseOnFailure`), or why a scheduler disabled it (its timer stopped advancing).
   * Enabling it clears the note.
   */
  note?: string;
  pauseOnFailure?: boolean;
  created: number;
  updated: number;
}

export const DEFAULT_CATCHUP_WINDOW = 5 * 60_000;
const ID = /^[A-Za-z0-9._:-]{1,200}$/;

/**
 * The task ids of event rules' pending runs begin with `r:`, and the owner of a rule's runs is
 * `rule:<rule id>` (see PeriodicTasks.emit): reserved, so that no task defined with upsert takes a
 * pending run's key or joins a rule's owner set (which removing the rule empties).
 */
export const RULE_RUN_PREFIX = 'r:';
export const RULE_OWNER_PREFIX = 'rule:';
const ms = z.number().int('must be a whole number of milliseconds').nonnegative('must be >= 0');

const timerSpec = z.string().min(1, 'must not be empty').max(500, 'must be at most 500 characters');
const instant = z.union([z.number().int().min(0).max(8.64e15), z.date().refine((d) => !Number.isNaN(d.getTime()))], {
  error: 'must be ms since the epoch (a whole number) or a valid Date',
});
/** Longest jitter: 7 days. */
export const MAX_JITTER_MS = 7 * 86_400_000;

const definitionSchema = z
  .object({
    id: z
      .string()
      .regex(ID, 'must be 1-200 of A-Z a-z 0-9 . _ : -')
      .refine((id) => !id.startsWith(RULE_RUN_PREFIX), `must not begin with "${RULE_RUN_PREFIX}" (event rules' runs)`),
    task: JOB_FIELDS.task,
    timer: z.union([timerSpec, z.array(timerSpec).min(1, 'must list 1-20 timers').max(20, 'must list 1-20 timers')], {
      error: 'must be a timer spec or a list of 1-20',
    }),
    timezone: z.string().min(1, 'must not be empty').optional(),
    group: JOB_FIELDS.group.optional(),
    args: JOB_FIELDS.args.optional(),
    priority: JOB_FIELDS.priority.optional(),
    subject: JOB_FIELDS.subject.optional(),
    submitter: JOB_FIELDS.submitter.optional(),
    enabled: z.boolean().optional(),
    owner: z
      .string()
      .regex(ID, 'must be 1-200 of A-Z a-z 0-9 . _ : -')
      .refine((o) => !o.startsWith(RULE_OWNER_PREFIX), `must not begin with "${RULE_OWNER_PREFIX}" (event rules' runs)`)
      .optional(),
    overlap: z.enum(['skip', 'buffer-one', 'allow', 'cancel-previous', 'buffer-all']).optional(),
    catchup: z.enum(['latest', 'all', 'none']).optional(),
    catchupWindow: ms.optional(),
    tolerance: ms.optional(),
    maxRuntime: JOB_FIELDS.maxRuntime.optional(),
    maxRetries: JOB_FIELDS.maxRetries.optional(),
    // schedule controls
    exclude: z.array(z.string().min(1, 'must not be empty').max(200, 'must be at most 200 characters')).max(100).optional(),
    startAt: instant.optional(),
    endAt: instant.optional(),
    limit: z.number().int('must be a whole number').min(1, 'must be >= 1').max(1e9, 'must be <= 1e9').optional(),
    immediately: z.boolean().optional(),
    jitter: z
      .number()
      .int('must be a whole number of milliseconds')
      .min(0)
      .max(MAX_JITTER_MS, 'must be at most 7 days')
      .optional(),
    // --- pause on failure (issue 43, part b) ---
    pauseOnFailure: z.boolean().optional(),
  })
  .strict();

/** Checks a task or rule id (throws a ValidationError naming `field`). */
export function checkId(id: unknown, field = 'id'): string {
  if (typeof id !== 'string' || !ID.test(id)) throw new ValidationError(field, 'must be 1-200 of A-Z a-z 0-9 . _ : -');
  return id;
}

/** Parses a timer, turning a syntax error into a ValidationError on `timer` or `timezone`. */
export function checkTimer(spec: string, timezone: string | undefined, field = 'timer'): Timer {
  try {
    return storedTimer(spec, timezone);
  } catch (err) {
    if (err instanceof TimerSyntaxError) {
      if (err.part === 'timezone option') throw new ValidationError('timezone', `unknown time zone "${timezone}"`);
      throw new ValidationError(field, err.message);
    }
    throw err;
  }
}

/**
 * Shortest time a periodic timer may ask for between two occurrences (ms): one second. A faster
 * timer (`every 1ms`, a calendar event's fractional seconds such as `*:*:0/0.1`) would submit
 * jobs faster than a scheduler is meant to, and keep Redis busy with them.
 */
export const MIN_PERIOD_MS = 1000;

/**
 * Refuses a timer that elapses more often than {@link MIN_PERIOD_MS}: an interval shorter than it,
 * or a calendar event or cron rule whose seconds could elapse closer together (read from its
 * elapses within one minute it elapses in, and from that minute's last to the next minute's first:
 * the seconds are the same in every minute a spec elapses in).
 * @throws {ValidationError} naming `field`.
 */
export function checkPeriod(timer: Timer, now: number, field = 'timer'): void {
  const refuse = (gap: number) =>
    new ValidationError(
      field,
      `"${timer.spec}" elapses ${gap} ms apart, more often than the shortest period a periodic task may have (${MIN_PERIOD_MS} ms)`,
    );
  if (timer.intervalMs !== undefined) {
    if (timer.intervalMs < MIN_PERIOD_MS) throw refuse(timer.intervalMs);
    return;
  }
  if (timer.kind !== 'calendar' && timer.kind !== 'cron') return;
  const first = timer.next(new Date(now))?.getTime();
  if (first === undefined) return;
  const minute = first - (first % 60_000);
  const seen: number[] = [];
  for (let t = timer.next(new Date(minute - 1))?.getTime(); t !== undefined && t < minute + 60_000; ) {
    const last = seen.at(-1);
    if (last !== undefined && t - last < MIN_PERIOD_MS) throw refuse(t - last);
    seen.push(t);
    t = timer.next(new Date(t))?.getTime();
  }
  if (seen.length > 1) {
    const wrap = 60_000 - (seen[seen.length - 1] - seen[0]);
    if (wrap < MIN_PERIOD_MS) throw refuse(wrap);
  }
}

/** A definition that passed validation, with its parsed timer and packed args. */
export interface CheckedDefinition {
  def: PeriodicTaskDefinition;
  /** What the `timer` field stores: the one spec, or the whole schedule (see ./schedule.ts). */
  stored: string;
  timer: Timer;
  packedArgs: Buffer;
  /** Effective timebox: given, or half the interval for interval timers. */
  maxRuntime?: number;
}

/**
 * Validates a definition: every field, the timer (parsed, and no faster than {@link MIN_PERIOD_MS}),
 * the time zone and the args.
 * @throws {ValidationError} naming the first bad field.
 */
export function checkDefinition(def: unknown, argsLimit: number): CheckedDefinition {
  if (typeof def !== 'object' || def === null) throw new ValidationError('definition', 'must be an object');
  const parsed = definitionSchema.safeParse(def);
  if (!parsed.success) throw zodError('', parsed.error);
  // (what was checked is what is written: each field read once)
  const d = parsed.data as PeriodicTaskDefinition;
  const { schedule, timer } = checkSchedule(d);
  const packedArgs = packValue(d.args, argsLimit, 'args');
  const maxRuntime = d.maxRuntime ?? (timer.intervalMs ? Math.max(1, Math.floor(timer.intervalMs / 2)) : undefined);
  return { def: d, stored: encodeSchedule(schedule), timer, packedArgs, maxRuntime };
}

/**
 * Checks the schedule of a definition: each timer (parsed, no faster than MIN_PERIOD_MS), the
 * exclusions, startAt before endAt; and builds it.
 * @throws {ValidationError} naming the field (`timer`, `timer[i]`, `exclude`, `endAt`).
 */
function checkSchedule(d: PeriodicTaskDefinition): { schedule: ScheduleSpec; timer: Timer } {
  const list = Array.isArray(d.timer) ? d.timer : [d.timer];
  list.forEach((spec, i) => {
    const field = Array.isArray(d.timer) ? `timer[${i}]` : 'timer';
    checkPeriod(checkTimer(spec, d.timezone, field), Date.now(), field);
  });
  const startAt = d.startAt === undefined ? undefined : Number(d.startAt);
  const endAt = d.endAt === undefined ? undefined : Number(d.endAt);
  if (startAt !== undefined && endAt !== undefined && endAt < startAt) {
    throw new ValidationError('endAt', 'must not be before startAt');
  }
  const union = [...new Set(list)];
  const schedule: ScheduleSpec = {
    timers: union,
    exclude: d.exclude,
    startAt,
    endAt,
    jitter: d.jitter,
    limit: d.limit,
  };
  const timer = scheduleTimer(schedule, d.timezone);
  if (union.length > 1) checkUnionPeriod(timer, Date.now());
  return { schedule, timer };
}

/**
 * Refuses timers whose union elapses closer together than {@link MIN_PERIOD_MS} (each alone may
 * be slow enough): read from the union's first 120 elapses, or those of its next two minutes.
 */
function checkUnionPeriod(timer: Timer, now: number): void {
  let last = timer.next(new Date(now))?.getTime();
  for (let k = 0; last !== undefined && k < 120; k++) {
    const t = timer.next(new Date(last))?.getTime();
    if (t === undefined || t > now + 120_000) return;
    if (t - last < MIN_PERIOD_MS) {
      throw new ValidationError(
        'timer',
        `the timers together elapse ${t - last} ms apart, more often than the shortest period a periodic task may have (${MIN_PERIOD_MS} ms)`,
      );
    }
    last = t;
  }
}

/** What a checked definition is stored as (src/redis/periodic-codec.ts), its defaults filled in. */
export function taskRecord(c: CheckedDefinition): TaskRecord {
  const d = c.def;
  return {
    id: d.id,
    task: d.task,
    timer: c.stored,
    immediately: d.immediately === true,
    timezone: d.timezone,
    kind: c.timer.kind,
    group: d.group ?? 'default',
    packedArgs: c.packedArgs,
    priority: d.priority ?? 'low',
    subject: d.subject,
    submitter: d.submitter ?? 'periodic',
    owner: d.owner,
    overlap: d.overlap ?? 'skip',
    catchup: d.catchup ?? 'latest',
    catchupWindow: d.catchupWindow ?? DEFAULT_CATCHUP_WINDOW,
    tolerance: d.tolerance,
    maxRuntime: c.maxRuntime,
    maxRetries: d.maxRetries ?? 0,
    intervalMs: c.timer.intervalMs,
    pauseOnFailure: d.pauseOnFailure === true,
    enabled: d.enabled !== false,
  };
}

/** The fields a task definition may have. */
export const DEFINITION_KEYS: Record<string, true> = Object.fromEntries(
  [
    'id',
    'task',
    'timer',
    'timezone',
    'group',
    'args',
    'priority',
    'subject',
    'submitter',
    'enabled',
    'owner',
    'overlap',
    'catchup',
    'catchupWindow',
    'tolerance',
    'maxRuntime',
    'maxRetries',
    'exclude',
    'startAt',
    'endAt',
    'limit',
    'immediately',
    'jitter',
    // --- pause on failure (issue 43, part b) ---
    'pauseOnFailure',
  ].map((k) => [k, true]),
);

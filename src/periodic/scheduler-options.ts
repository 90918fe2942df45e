/** The options and events of a scheduler replica (./scheduler.ts): the options' TSDoc, bounds and defaults in one shape (see src/options.ts). */
import { checkOptions, DAY_MS, func, HOUR_MS, keep, MIN_FALLBACK_WAKE_MS, type OptionsOf, text, whole } from '../options.js';
import { QUEUE_OPTIONS } from '../queue/options.js';
import type { ClockJump } from '../redis/server-clock.js';

/** How much run history is kept per task: newest `count` (0 to 1,000,000; default 100), each at most `age` ms (up to 100 years; default 30 days); -1 is no bound. */
const keepRuns = keep(1_000_000, { count: 100, age: 30 * DAY_MS });

/** Options of a scheduler replica. */
export const SCHEDULER_OPTIONS = {
  /** Where Redis is: a URL, ioredis options or an ioredis client. */
  connection: QUEUE_OPTIONS.connection,
  /** Replica id (for logs and events; 1 to 200 bytes); default `host:pid:random`. */
  id: text(200).optional(),
  /**
   * Clock used to decide what is due and to compute occurrences (ms since the epoch). Default: the
   * Redis server's clock (estimated locally from the offset seen at each claim). Inject one in tests.
   */
  now: func<() => number>().optional(),
  /**
   * Tasks are claimed and prepared this long before they are due (ms), so that at the occurrence
   * only the release runs: 0 to 600,000; default 2,500 (claiming and staging 10,000 tasks takes Redis a few hundred ms).
   */
  lookaheadMs: whole(0, 10 * 60_000, 'ms').default(2500),
  /**
   * A claim expires after this long (ms), so a dead replica's tasks are taken over: 1,000 to an
   * hour; default 6,000 (at least the look-ahead plus one second).
   */
  claimTtlMs: whole(1000, HOUR_MS, 'ms').default(6000),
  /** Tasks per claim and stage call, and occurrences per release call: 1 to 10,000; default 500. */
  batchSize: whole(1, 10_000).default(500),
  /**
   * No claim or release by any replica for longer than this (ms) means the schedulers were down:
   * an occurrence already this late when they resume follows the task's catch-up policy. An
   * occurrence late only because the schedulers are behind (busy: claims and releases kept
   * coming) is always submitted, however late. 0 to a day; default 15,000; keep it above
   * claimTtlMs.
   */
  misfireGraceMs: whole(0, DAY_MS, 'ms').default(15_000),
  /** Longest idle sleep (ms) before looking again anyway: 1,000 to an hour; default 60,000. */
  fallbackWakeMs: whole(MIN_FALLBACK_WAKE_MS, HOUR_MS, 'ms').default(60_000),
  /**
   * A task holding a buffer-one run, or a buffer-all backlog, is looked at this often (ms) until
   * its previous run ends: 100 to 60,000; default 1,000. (A buffer-all backlog's next run is also
   * released as soon as an executor ends the previous one.)
   */
  bufferPollMs: whole(100, 60_000, 'ms').default(1000),
  /** Run history kept per task: newest `count` (0 to 1,000,000; default 100), each at most `age` ms (default 30 days); -1 is no bound. */
  keepRuns,
  /** Events stream cap (see QueueOptions.maxEvents). */
  maxEvents: QUEUE_OPTIONS.maxEvents,
  /**
   * The queue's shard count (see QueueOptions.shards; default 1). The tasks and their runs live in
   * the queue's home shard whatever the count; a replica configured with another count than the
   * queue has refuses to start (ShardCountError).
   */
  shards: QUEUE_OPTIONS.shards,
};

/** Options of a scheduler replica. */
export type SchedulerOptions = OptionsOf<typeof SCHEDULER_OPTIONS>;

/** How much run history is kept per task. */
export type KeepRuns = NonNullable<SchedulerOptions['keepRuns']>;

/**
 * Checks a replica's options and settles them (the claim TTL at least the look-ahead plus one second).
 * @throws {ValidationError} naming the first bad option.
 */
export function schedulerSettings(options: SchedulerOptions) {
  const o = checkOptions(SCHEDULER_OPTIONS, options);
  return { ...o, claimTtlMs: Math.max(o.claimTtlMs, o.lookaheadMs + 1000) };
}

/** What a firing did, as the `fired` event reports it. */
export interface FiredInfo {
  /** Jobs submitted. */
  submitted: number;
  /** Occurrences skipped by the overlap policy. */
  skipped: number;
  /** Tasks whose claim was gone (fired elsewhere, changed or removed meanwhile). */
  lost: number;
}

/** What became of a periodic occurrence. */
export type OccurrenceOutcome = 'submitted' | 'skipped' | 'missed' | 'excluded';

/** Occurrences of periodic tasks whose jobs have task `task` that came to `outcome`. */
export interface OccurrenceCount {
  task: string;
  outcome: OccurrenceOutcome;
  count: number;
}

export interface SchedulerEvents {
  fired: [info: FiredInfo];
  /**
   * Occurrences this replica settled, per job task: submitted, skipped by the overlap policy,
   * missed (the catch-up policy dropped them after downtime) or excluded (an exclusion or the
   * schedule's bounds passed over them). Each occurrence is settled by one replica only.
   */
  occurrences: [counts: OccurrenceCount[]];
  /**
   * The Redis server's clock jumped against this process's monotonic clock (by a second or more;
   * `jumpMs` positive forward): see docs/operations.md, Time.
   */
  clockJump: [jump: ClockJump];
  error: [error: Error];
}

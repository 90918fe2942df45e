/**
 * The store of periodic tasks and event rules: define, read, enable, remove, look ahead, read
 * the run history, trigger, and emit events. Scheduler replicas ({@link Scheduler}) do the
 * submitting; this class only writes definitions (and wakes the replicas).
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { ValidationError } from '../errors.js';
import { checkOptions, func, type OptionsOf, whole } from '../options.js';
import { DEFAULT_MAX_EVENTS, QUEUE_OPTIONS } from '../queue/options.js';
import { connect } from '../redis/connection.js';
import { unpackDescription } from '../redis/job-codec.js';
import { checkQueueName, type PeriodicKeys, periodicKeys } from '../redis/keys.js';
import { decodeTask, definitionFields } from '../redis/periodic-codec.js';
import { PeriodicReads, parseStaged, type ReplicaEntry } from '../redis/periodic-reads.js';
import { PeriodicStore } from '../redis/periodic-store.js';
import { QueueStore } from '../redis/queue-store.js';
import { checkShards, homeShard } from '../redis/shards.js';
import type { Timer } from '../timers/index.js';
import { bytes, knownKeys } from '../util/check.js';
import { type BackfillOptions, type BackfillResult, checkBackfill, runBackfill } from './backfill.js';
import {
  checkDefinition,
  checkId,
  checkTimer,
  DEFINITION_KEYS,
  type PeriodicTask,
  type PeriodicTaskDefinition,
  taskRecord,
} from './definition.js';
import {
  checkEvent,
  checkRule,
  decodeRule,
  type EmittedEvent,
  type EventRule,
  type EventRuleDefinition,
  pendingId,
  pendingRunFields,
  ruleOwner,
} from './rules.js';
import { type RunRecord, readRuns } from './runs.js';
import { nextRuns, storedTimer } from './schedule.js';

export type { BackfillOptions, BackfillOverlap, BackfillResult } from './backfill.js';
export type { EmittedEvent, EventRule, EventRuleDefinition } from './rules.js';
export { pendingId } from './rules.js';
export type { RunRecord, RunStatus } from './runs.js';

/** Scheduler replicas {@link PeriodicTasks.replicas} reads at most. */
export const MAX_REPLICAS = 1000;

/** A live scheduler replica, as {@link PeriodicTasks.replicas} gives it (null: not recorded). */
export interface SchedulerReplica {
  id: string;
  host: string | null;
  pid: number | null;
  /** When it started (ms since the epoch). */
  started: number | null;
  version: string | null;
  /** Its last beat (server clock, ms). */
  lastBeat: number | null;
  /** When its entry expires unless it beats again (server clock, ms). */
  expires: number;
  /** Tasks it held claimed, not yet committed, at its last beat. */
  claims: number | null;
  /** Tasks it claimed since it started. */
  claimed: number | null;
  /** Occurrences its releases submitted since it started. */
  released: number | null;
  /** How late its last release that submitted or skipped something ran (ms after the occurrence was due). */
  lateMs: number | null;
  /** The largest such lateness within the last minute (ms). */
  maxLateMs: number | null;
}

function replicaOf(e: ReplicaEntry): SchedulerReplica {
  const r = e.record ?? {};
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  const str = (v: unknown) => (typeof v === 'string' ? v : null);
  return {
    id: e.id,
    host: str(r.host),
    pid: num(r.pid),
    started: num(r.started),
    version: str(r.version),
    lastBeat: num(r.beat),
    expires: e.expiry,
    claims: num(r.claims),
    claimed: num(r.claimed),
    released: num(r.released),
    lateMs: num(r.lateMs),
    maxLateMs: num(r.maxLateMs),
  };
}

/** Options of {@link PeriodicTasks}. */
export const PERIODIC_TASKS_OPTIONS = {
  /** Where Redis is: a URL, ioredis options or an ioredis client. */
  connection: QUEUE_OPTIONS.connection,
  /** Clock for planning first occurrences (ms since the epoch); default `Date.now`. Inject one in tests. */
  now: func<() => number>().optional(),
  /** Largest packed args accepted, in bytes: 1 to 256 MiB; default 512 KiB. */
  maxArgsBytes: QUEUE_OPTIONS.maxArgsBytes,
  /**
   * The queue's shard count (see QueueOptions.shards; default 1). The tasks and their runs live in
   * the queue's home shard whatever the count; a write made with another count than the queue
   * has is refused (ShardCountError).
   */
  shards: QUEUE_OPTIONS.shards,
};

/** Options of {@link PeriodicTasks}. */
export type PeriodicTasksOptions = OptionsOf<typeof PERIODIC_TASKS_OPTIONS>;

/** One upcoming occurrence, as {@link PeriodicTasks.upcoming} lists it. */
export interface UpcomingRun {
  /** Periodic task id. */
  id: string;
  task: string;
  group: string;
  /** Planned time (ms). */
  occurrence: number;
}

/** Most entries a list answers: 1 to 10,000; default 20. */
const listLimit = whole(1, 10_000).default(20);
/** Whose tasks {@link PeriodicTasks.list} lists. */
const LIST_OPTIONS = {
  /** Only this owner's tasks (including its rules' pending runs). */
  owner: z.string({ error: 'must be 1-200 of A-Z a-z 0-9 . _ : -' }).optional(),
};
/** How far {@link PeriodicTasks.upcoming} looks. */
const UPCOMING_OPTIONS = {
  limit: listLimit,
  /** None after this time (ms since the epoch, or a valid Date). */
  until: z
    .union([whole(0, 8.64e15, 'ms since the epoch'), z.date()], {
      error: 'must be ms since the epoch (a whole number) or a valid Date',
    })
    .optional(),
};
/** How much of a task's history {@link PeriodicTasks.runs} reads. */
const RUNS_OPTIONS = { limit: listLimit };
/** Why {@link PeriodicTasks.disable} disables a task. */
const DISABLE_OPTIONS = {
  /** Why (at most 1000 bytes), read back as the task's `note` until it is enabled. */
  note: bytes(1000).optional(),
};
/** Whose tasks {@link PeriodicTasks.list} lists. */
export type ListTasksOptions = OptionsOf<typeof LIST_OPTIONS>;
/** How far {@link PeriodicTasks.upcoming} looks. */
export type UpcomingOptions = OptionsOf<typeof UPCOMING_OPTIONS>;
/** How much of a task's history {@link PeriodicTasks.runs} reads. */
export type RunsOptions = OptionsOf<typeof RUNS_OPTIONS>;
/** Why {@link PeriodicTasks.disable} disables a task. */
export type DisableOptions = OptionsOf<typeof DISABLE_OPTIONS>;

/**
 * Periodic tasks and event rules of queue `queueName`.
 * @example
 * ```ts
 * const tasks = new PeriodicTasks('mail', { connection: 'redis://127.0.0.1:6379' });
 * await tasks.upsert({ id: 'cleanup', task: 'cleanup', timer: '*-*-* 04:00', timezone: 'Europe/Paris' });
 * await tasks.upcoming({ limit: 10 });
 * ```
 */
export class PeriodicTasks {
  readonly keys: PeriodicKeys;
  readonly client: Redis;
  /** The periodic script calls, on `client`. */
  private readonly store: PeriodicStore;
  /** @internal The periodic reads, on `client` (the dashboard's periodic pages use them too). */
  readonly reads: PeriodicReads;
  private readonly owned: boolean;
  private readonly clock: () => number;
  private readonly maxArgsBytes: number;
  private readonly injected: boolean;

  /**
   * @throws {@link ValidationError} naming the first bad option or the queue name; nothing is opened then.
   */
  constructor(queueName: string, options: PeriodicTasksOptions) {
    checkQueueName(queueName);
    const opts = checkOptions(PERIODIC_TASKS_OPTIONS, options);
    const shards = checkShards(opts.shards);
    this.keys = periodicKeys(queueName);
    const { client, owned } = connect(opts.connection);
    this.client = client;
    // (the home shard, where the tasks and their runs are)
    const home = new QueueStore(client, queueName, { maxEvents: DEFAULT_MAX_EVENTS, shard: homeShard(shards), shards });
    this.store = new PeriodicStore(home);
    this.reads = new PeriodicReads(client, this.keys, home.keys);
    this.owned = owned;
    this.injected = opts.now !== undefined;
    this.clock = opts.now ?? Date.now;
    this.maxArgsBytes = opts.maxArgsBytes;
  }

  /**
   * Creates or replaces a task. Re-upserting with the same timer and time zone keeps its planned
   * next occurrence; a new timer plans from now. Wakes the schedulers.
   * @throws {@link ValidationError} naming the bad field (`timer` for a new timer that has no occurrence
   * after now, such as a one-shot due date in the past); nothing is written then.
   */
  async upsert<A = unknown>(def: PeriodicTaskDefinition<A>): Promise<PeriodicTask<A>> {
    if (typeof def === 'object' && def !== null) knownKeys(def, DEFINITION_KEYS);
    const c = checkDefinition(def, this.maxArgsBytes);
    const now = this.clock();
    const next = c.timer.next(new Date(now))?.getTime();
    if (next === undefined) await this.refuseNeverDue(c.def.id, c.stored, c.def.timezone, now);
    await this.store.upsert({
      id: c.def.id,
      listed: true,
      nextrun: next ?? null,
      enabled: c.def.enabled !== false,
      now,
      eventAt: null,
      fields: definitionFields(taskRecord(c), now),
    });
    return (await this.get<A>(c.def.id))!;
  }

  /**
   * Refuses a new timer that has no occurrence after `now` (a one-shot due date in the past): the
   * task would never run. Upserting again the timer a task already has (one that ran) is accepted.
   */
  private async refuseNeverDue(id: string, timer: string, timezone: string | undefined, now: number): Promise<void> {
    const stored = await this.reads.taskTimer(id);
    if (stored.timer === timer && (stored.timezone || undefined) === timezone) return;
    throw new ValidationError(
      'timer',
      `"${timer}" has no occurrence after now (${new Date(now).toISOString()}): the task would never run`,
    );
  }

  /** Reads a task, or null when there is none. */
  async get<A = unknown>(id: string): Promise<PeriodicTask<A> | null> {
    return ((await this.read([checkId(id)]))[0] as PeriodicTask<A> | undefined) ?? null;
  }

  /** Every task defined with {@link PeriodicTasks.upsert} (or only an owner's, including its rules' pending runs), sorted by id. */
  async list(options: ListTasksOptions = {}): Promise<PeriodicTask[]> {
    const opts = checkOptions(LIST_OPTIONS, options, { optional: true });
    const ids = (await this.reads.taskIds(opts.owner === undefined ? undefined : checkId(opts.owner, 'owner'))).sort();
    const out: PeriodicTask[] = [];
    for (let i = 0; i < ids.length; i += 500) out.push(...(await this.read(ids.slice(i, i + 500))));
    return out;
  }

  /**
   * @internal Reads the tasks of `ids` that exist, in order (at most 500), as {@link PeriodicTasks.list} reads
   * them: the dashboard's periodic page reads a page of the ids at a time.
   */
  async byIds(ids: readonly string[]): Promise<PeriodicTask[]> {
    if (ids.length > 500) throw new ValidationError('ids', `read at most 500 tasks at once (got ${ids.length})`);
    return this.read(ids.map((id) => checkId(id)));
  }

  /**
   * Reads tasks (those that exist, in order) with their last job, and with nextrun at the earliest
   * occurrence still staged, if any (the stored nextrun is past those once they are staged).
   */
  private async read(ids: string[]): Promise<PeriodicTask[]> {
    const rows = await this.reads.tasks(ids);
    const found: Array<{ task: PeriodicTask; staged: string[] }> = [];
    for (const { hash, last, held } of rows) {
      const flat: Buffer[] = [];
      for (const [f, val] of Object.entries(hash)) flat.push(Buffer.from(f), val);
      if (!flat.length) continue;
      // (the codec's fields are a PeriodicTask's: definitionFields wrote them from a checked definition)
      const task = decodeTask(flat) as unknown as PeriodicTask;
      if (last) task.lastJobId = last;
      const raw = hash.staged?.toString();
      const staged = raw ? raw.split(',').filter((m) => m !== held) : [];
      found.push({ task, staged });
    }
    // A task without a recorded last job (policy `allow`): the newest submitted run of its history.
    const noLast = found.filter((f) => f.task.lastJobId === undefined);
    if (noLast.length) {
      const hist = await this.reads.newestRuns(
        noLast.map((f) => f.task.id),
        20,
      );
      const candidates = hist.map((members) => members.filter((m) => !m.startsWith('~')));
      const states = await this.reads.jobStates(candidates.flat());
      let at = 0;
      noLast.forEach((f, k) => {
        for (const id of candidates[k]) {
          const st = states[at++];
          if (f.task.lastJobId === undefined && st && st !== 'planned') f.task.lastJobId = id;
        }
      });
    }
    const withStaged = found.filter((f) => f.staged.length);
    const scores = await this.reads.stagedScores(withStaged.map((f) => f.staged));
    withStaged.forEach((f, k) => {
      for (let i = 0; i < f.staged.length; i++) {
        if (scores[k][i] === null) continue;
        const occ = parseStaged(f.staged[i])!.occurrence;
        if (f.task.nextrun === undefined || occ < f.task.nextrun) f.task.nextrun = occ;
      }
    });
    for (const { task } of found) task.ended = task.enabled && task.nextrun === undefined && task.rule === undefined;
    return found.map((f) => f.task);
  }

  /** Enables a task; its next occurrence is planned from now. Resolves false when there is no such task. */
  async enable(id: string): Promise<boolean> {
    const t = await this.reads.taskTimer(checkId(id));
    if (!t.timer) return false;
    const now = this.clock();
    const next = checkTimer(t.timer, t.timezone || undefined)
      .next(new Date(now))
      ?.getTime();
    return this.store.enable(id, next ?? null, now);
  }

  /**
   * Disables a task: it keeps its definition and history but does not fire (a buffer-all backlog
   * waits). `note` (at most 1000 bytes) says why: {@link PeriodicTasks.get} reads it back as `note`, until the
   * task is enabled. False when there is no such task.
   * @throws {@link ValidationError} naming a bad option; nothing is written then.
   */
  async disable(id: string, options: DisableOptions = {}): Promise<boolean> {
    const opts = checkOptions(DISABLE_OPTIONS, options, { optional: true });
    return this.store.disable(checkId(id), this.clock(), opts.note ?? '');
  }

  /**
   * Backfill: submits now every occurrence of the task's timer in [`from`, `to`) (`to` not after
   * now), each recorded in the run history as a backfill of that occurrence, in steps of 50
   * occurrences per Redis call. Each occurrence once: one that already ran (backfilled before, or
   * run by the scheduler within the history's or the jobs' retention) is left out unless
   * `force`; overlapping backfills, from any process, and a rerun of one that was interrupted
   * submit each occurrence once. With `overlap: 'buffer-all'` (default) the runs go one after
   * another, in order, released by a scheduler replica; with `allow` all at once.
   * Resolves what was done, or null when there is no such task.
   * @throws {@link ValidationError} naming a bad option; nothing is written then.
   */
  async backfill(id: string, options: BackfillOptions): Promise<BackfillResult | null> {
    const b = checkBackfill(options, this.clock());
    const t = await this.reads.taskTimer(checkId(id));
    if (!t.timer) return null;
    // the stored schedule: every timer, within startAt and endAt, exclusions left out
    const timer = checkTimer(t.timer, t.timezone || undefined);
    return runBackfill(this.store, id, timer, b, this.injected ? Math.round(this.clock()) : undefined);
  }

  /** Removes a task and its history (its jobs stay in the queue). False when there was none. */
  async remove(id: string): Promise<boolean> {
    return (await this.store.remove([checkId(id)])).length === 1;
  }

  /** Removes every task of an owner; resolves the removed ids. */
  async removeByOwner(owner: string): Promise<string[]> {
    return this.store.removeOwner(checkId(owner, 'owner'));
  }

  /**
   * Asks the schedulers to run a task now, once (through its overlap policy, without moving its
   * next occurrence). Resolves the id the job will have, or null when there is no such task.
   * A scheduler replica must be running for the job to be submitted.
   */
  async trigger(id: string): Promise<{ jobId: string; occurrence: number } | null> {
    const at = await this.store.trigger(checkId(id), this.injected ? Math.round(this.clock()) : undefined);
    if (at === null) return null;
    return { jobId: `${id}@${at}`, occurrence: at };
  }

  /**
   * The ids of the scheduler replicas running against this queue. A replica renews its entry
   * every 5 s; one that died without closing is listed for up to 15 s more. With none, nothing
   * submits the tasks' runs (see {@link Scheduler}).
   */
  async schedulers(): Promise<string[]> {
    return this.reads.replicas();
  }

  /**
   * The scheduler replicas running against this queue, by id, with what each records at its beat
   * (every 5 s): host, pid, start, last beat, claims held, lateness. At most `MAX_REPLICAS`
   * are read (`total` counts them all), so the call's work is bounded however many run. A replica
   * of a build that keeps no record is listed with its id and expiry only.
   */
  async replicas(): Promise<{ now: number; total: number; replicas: SchedulerReplica[] }> {
    const { now, total, replicas } = await this.reads.replicaRecords(MAX_REPLICAS);
    return { now, total, replicas: replicas.map(replicaOf) };
  }

  /**
   * The next occurrences across all enabled tasks (and pending event-rule runs), in time order:
   * at most `limit` (1 to 10,000; default 20), none after `until` (ms since the epoch, or a valid Date).
   * @throws {@link ValidationError} naming a bad option.
   */
  async upcoming(options: UpcomingOptions = {}): Promise<UpcomingRun[]> {
    const opts = checkOptions(UPCOMING_OPTIONS, options, { optional: true });
    const { limit } = opts;
    const until = opts.until === undefined ? Infinity : Number(opts.until);
    // Scores are the next occurrence, or up to a claim's TTL past it: read a little further.
    const ids = await this.reads.nextrunIds(until + 60_000, limit * 2 + 100);
    // Occurrences already staged (committed, due soon) come before the tasks' stored nextrun.
    const staged = await this.reads.staged(until, limit);
    const out: UpcomingRun[] = [];
    const runs: Array<{ id: string; jobId: string; occurrence: number; group: string }> = [];
    const parsed = [];
    for (let i = 0; i < staged.length; i += 2) parsed.push({ member: staged[i], run: parseStaged(staged[i]) });
    // one held back by buffer-one is not an upcoming occurrence (a jittered one is due after its occurrence)
    const held = await this.reads.heldMembers([...new Set(parsed.flatMap((p) => (p.run ? [p.run.id] : [])))]);
    const heldSet = new Set(held.filter((h): h is string => h !== null));
    for (const p of parsed) if (p.run && !heldSet.has(p.member)) runs.push(p.run);
    const descriptions = await this.reads.jobDescriptions(runs.map((r) => r.jobId));
    runs.forEach((r, i) => {
      const d = descriptions[i];
      if (d) out.push({ id: r.id, task: unpackDescription(d).task, group: r.group, occurrence: r.occurrence });
    });
    const rows = await this.reads.taskSummaries(ids);
    ids.forEach((id, i) => {
      const { nextrun, timer, timezone, task, group, enabled, runs } = rows[i];
      if (!nextrun || !timer || enabled !== '1') return;
      let t: Timer;
      try {
        t = storedTimer(timer, timezone || undefined);
      } catch {
        return;
      }
      // (excluded stretches jumped over; no more than the task's limit leaves)
      for (const o of nextRuns(t, Number(nextrun), limit, Number(runs) || 0, until)) {
        out.push({ id, task: task!, group: group!, occurrence: o });
      }
    });
    return out.sort((a, b) => a.occurrence - b.occurrence || a.id.localeCompare(b.id)).slice(0, limit);
  }

  /**
   * A task's run history, newest first (default 20 entries): each submitted run with its job's
   * times, status, executor, host, pid, log lines and error output, plus the occurrences that
   * were skipped (overlap) or missed (catch-up).
   */
  async runs(id: string, options: RunsOptions = {}): Promise<RunRecord[]> {
    const { limit } = checkOptions(RUNS_OPTIONS, options, { optional: true });
    return readRuns(this.reads, checkId(id), limit);
  }

  /**
   * Defines (or replaces) an event rule: each {@link PeriodicTasks.emit} of event `after` schedules one run
   * `delay` after the event, per subject.
   * @throws {@link ValidationError} naming the bad field; nothing is written then.
   */
  async rule<A = unknown>(def: EventRuleDefinition<A>): Promise<EventRule<A>> {
    const { fields } = checkRule(def, this.maxArgsBytes);
    const record = await this.store.rule(def.id, def.after, this.clock(), fields);
    return decodeRule<A>(record)!;
  }

  /** Reads an event rule, or null. */
  async getRule<A = unknown>(id: string): Promise<EventRule<A> | null> {
    return decodeRule<A>(await this.reads.rule(checkId(id)));
  }

  /** Every event rule, sorted by id. */
  async rules(): Promise<EventRule[]> {
    const ids = (await this.reads.ruleIds()).sort();
    const out: EventRule[] = [];
    for (const id of ids) {
      const r = await this.getRule(id);
      if (r) out.push(r);
    }
    return out;
  }

  /** Removes an event rule and its pending runs. Resolves false when there was none. */
  async removeRule(id: string): Promise<boolean> {
    return this.store.removeRule(checkId(id), ruleOwner(id));
  }

  /**
   * Records an event: for each rule following it, one run is planned at `at + delay` for this
   * subject, replacing the pending run an older event planned. Resolves the pending runs' task ids.
   */
  async emit(e: EmittedEvent): Promise<string[]> {
    checkEvent(e);
    const at = e.at === undefined ? this.clock() : Number(e.at);
    const ruleIds = await this.reads.eventRules(e.event);
    const now = this.clock();
    const out: string[] = [];
    for (const ruleId of ruleIds) {
      const rule = await this.reads.rule(ruleId);
      if (!rule.id) continue;
      const due = at + Number(rule.delayMs.toString());
      const id = pendingId(ruleId, e.subject);
      const fields = pendingRunFields(ruleId, rule, id, e, due, now);
      await this.store.upsert({ id, listed: false, nextrun: due, enabled: true, now, eventAt: at, fields });
      out.push(id);
    }
    return out;
  }

  /** Closes the connection Rota opened (a client that was passed in is left open). */
  async close(): Promise<void> {
    if (this.owned) await this.client.quit().catch(() => this.client.disconnect());
  }
}

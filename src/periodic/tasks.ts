/**
 * The store of periodic tasks and event rules: define, read, enable, remove, look ahead, read
 * the run history, trigger, and emit events. Scheduler replicas ({@link Scheduler}) do the
 * submitting; this class only writes definitions (and wakes the replicas).
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { unpack } from 'msgpackr';
import { z } from 'zod';
import { ValidationError } from '../errors.js';
import { checkOptions, PERIODIC_TASKS_OPTIONS, whole } from '../options.js';
import { type ChildCounts, decodeJobObject, type Job, type JobState, type Priority, unpackDescription } from '../queue/job.js';
import { DEFAULT_MAX_ARGS_BYTES, DEFAULT_MAX_EVENTS } from '../queue/queue.js';
import { packValue, unknownFieldError, zodError } from '../queue/validate.js';
import { type ConnectionOption, connect } from '../redis/connection.js';
import { checkQueueName, type PeriodicKeys, periodicKeys, type QueueKeys } from '../redis/keys.js';
import { PeriodicStore } from '../redis/periodic-store.js';
import { QueueStore } from '../redis/queue-store.js';
import { checkShards, homeShard } from '../redis/shards.js';
import { HISTORY_FAILED, HISTORY_MISSED, HISTORY_REPLACED, HISTORY_SKIPPED, MAX_DELAY_MS } from '../redis/wire.js';
import { MAX_DURATION_MS } from '../timers/duration.js';
import { parseTimer, type Timer } from '../timers/index.js';
import {
  checkDefinition,
  checkId,
  checkTimer,
  decodeTask,
  definitionFields,
  type PeriodicTask,
  type PeriodicTaskDefinition,
  RULE_OWNER_PREFIX,
  RULE_RUN_PREFIX,
} from './definition.js';
import { liveReplicas } from './replicas.js';

/** Options of {@link PeriodicTasks}. */
export interface PeriodicTasksOptions {
  /** Where Redis is: a URL, ioredis options or an ioredis client. */
  connection: ConnectionOption;
  /** Clock for planning first occurrences (ms since the epoch); default `Date.now`. Inject one in tests. */
  now?: () => number;
  /** Largest packed args accepted, in bytes: 1 to 256 MiB; default 512 KiB. */
  maxArgsBytes?: number;
  /**
   * The queue's shard count (see QueueOptions.shards; default 1). The tasks and their runs live in
   * the queue's home shard whatever the count; a write made with another count than the queue
   * has is refused (ShardCountError).
   */
  shards?: number;
}

/** One upcoming occurrence, as {@link PeriodicTasks.upcoming} lists it. */
export interface UpcomingRun {
  /** Periodic task id. */
  id: string;
  task: string;
  group: string;
  /** Planned time (ms). */
  occurrence: number;
}

/** Status of a run in the history: a job state, or an occurrence that never became a job. */
export type RunStatus = JobState | 'skipped' | 'missed' | 'dropped' | 'expired' | 'replaced';

/** One entry of a task's run history ({@link PeriodicTasks.runs}). Times are ms (server clock). */
export interface RunRecord {
  /** Planned time of the occurrence. */
  occurrence: number;
  /**
   * `skipped`: not submitted because an earlier run had not ended (overlap); `missed`: passed over
   * by the catch-up policy (`count` occurrences up to `until`); `dropped`: started too soon after
   * the previous run (tolerance); `expired`: its job was removed by retention; `replaced`: an event
   * rule's run that a newer event replaced before it was released; else the job's state. `failed`
   * with no job: the task's timer stopped advancing there, and a scheduler disabled the task.
   */
  status: RunStatus;
  jobId?: string;
  submitted?: number;
  started?: number;
  finished?: number;
  /** Executor id, and the host and pid it ran on. */
  worker?: string;
  host?: string;
  pid?: number;
  retries?: number;
  /** Log lines the run wrote with `ctx.log`. */
  logs?: string[];
  /** Error output of a failed run, or the reason of a drop. */
  error?: string;
  result?: unknown;
  /** For `missed`: how many occurrences, and the last of them. */
  count?: number;
  /**
   * For a run whose job fanned out (ctx.fanOut): its children by state. Such a run ends when its
   * last child ends: until then its status is `running` and it has no `finished`; then it is
   * `failed` when a child failed, else the job's state, and `finished` is when the last child ended.
   */
  children?: ChildCounts;
  until?: number;
  /**
   * An event rule's run that a newer event replaced: the occurrence of the run that replaced it.
   * On a run with a job status, the newer event came before this run was due but after it was
   * released, so it ran all the same.
   */
  replacedBy?: number;
}

/** An event rule (Toucan's "after event"): a run `delay` after each event, per subject. */
export interface EventRuleDefinition<A = unknown> {
  /** Unique id: 1–200 of `A-Z a-z 0-9 . _ : -`. */
  id: string;
  /** Event name it follows, e.g. `user.last_seen`. */
  after: string;
  /** ISO-8601 duration (`P7DT30S`), `every`-style duration text is not accepted; or ms. At most 100 years. */
  delay: string | number;
  /** Handler of the run. */
  task: string;
  group?: string;
  /** The jobs' args: what `SubmitSpec.args` takes (nested at most 100 levels deep). */
  args?: A;
  priority?: Priority;
  maxRetries?: number;
}

/** A stored event rule. */
export interface EventRule<A = unknown> extends EventRuleDefinition<A> {
  delayMs: number;
  created: number;
}

/** An event for {@link PeriodicTasks.emit}. */
export interface EmittedEvent {
  /** Event name, e.g. `user.last_seen`. */
  event: string;
  /** Who or what it is about, e.g. a user id; one pending run per rule and subject. */
  subject: string;
  /** When it happened (ms or Date, at most 9,999,999,999,999 ms: the year 2286); default now. */
  at?: number | Date;
}

const eventName = z.string().min(1, 'must not be empty').max(200, 'must be at most 200 characters');
const ruleSchema = z
  .object({
    id: z.string(),
    after: eventName,
    delay: z.union([
      z.string().min(1, 'must not be empty'),
      z.number().int().nonnegative().max(MAX_DURATION_MS, `must be at most ${MAX_DURATION_MS} ms (100 years)`),
    ]),
    task: z.string().min(1, 'must not be empty').max(200),
    group: z.string().min(1, 'must not be empty').max(200).optional(),
    args: z.unknown().optional(),
    priority: z.enum(['high', 'low']).optional(),
    maxRetries: z.number().int().min(0).max(1000).optional(),
  })
  .strict();

const emitSchema = z
  .object({
    event: eventName,
    subject: z.string().min(1, 'must not be empty').max(1000, 'must be at most 1000 characters'),
    at: z
      .union([z.number().int().nonnegative(), z.date().transform((d) => d.getTime())])
      .refine((t) => t >= 0 && t <= MAX_DELAY_MS, `must be a valid time at most ${MAX_DELAY_MS} ms (the year 2286)`)
      .optional(),
  })
  .strict();

const listLimit = whole(1, 10_000).optional();
const LIST_OPTIONS = {
  owner: z.string({ error: 'must be 1-200 of A-Z a-z 0-9 . _ : -' }).optional(),
};
const UPCOMING_OPTIONS = {
  limit: listLimit,
  until: z
    .union([whole(0, 8.64e15, 'ms since the epoch'), z.date()], {
      error: 'must be ms since the epoch (a whole number) or a valid Date',
    })
    .optional(),
};
const RUNS_OPTIONS = { limit: listLimit };

/** Checks that `obj` has only the given keys (zod's strict error names no field). */
function knownKeys(obj: object, shape: Record<string, unknown>): void {
  for (const k of Object.keys(obj)) if (!(k in shape)) throw unknownFieldError('', k, Object.keys(shape));
}

/**
 * Periodic tasks and event rules of queue `queueName`.
 * @example
 * const tasks = new PeriodicTasks('mail', { connection: 'redis://127.0.0.1:6379' });
 * await tasks.upsert({ id: 'cleanup', task: 'cleanup', timer: '*-*-* 04:00', timezone: 'Europe/Paris' });
 * await tasks.upcoming({ limit: 10 });
 */
export class PeriodicTasks {
  readonly keys: PeriodicKeys;
  private readonly qkeys: QueueKeys;
  readonly client: Redis;
  /** The periodic script calls, on `client`. */
  private readonly store: PeriodicStore;
  private readonly owned: boolean;
  private readonly clock: () => number;
  private readonly maxArgsBytes: number;
  private readonly injected: boolean;

  /**
   * @throws {ValidationError} naming the first bad option or the queue name; nothing is opened then.
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
    this.qkeys = home.keys;
    this.store = new PeriodicStore(home);
    this.owned = owned;
    this.injected = opts.now !== undefined;
    this.clock = opts.now ?? Date.now;
    this.maxArgsBytes = opts.maxArgsBytes ?? DEFAULT_MAX_ARGS_BYTES;
  }

  /**
   * Creates or replaces a task. Re-upserting with the same timer and time zone keeps its planned
   * next occurrence; a new timer plans from now. Wakes the schedulers.
   * @throws {ValidationError} naming the bad field (`timer` for a new timer that has no occurrence
   * after now, such as a one-shot due date in the past); nothing is written then.
   */
  async upsert<A = unknown>(def: PeriodicTaskDefinition<A>): Promise<PeriodicTask<A>> {
    if (typeof def === 'object' && def !== null) knownKeys(def, DEFINITION_KEYS);
    const c = checkDefinition(def, this.maxArgsBytes);
    const now = this.clock();
    const next = c.timer.next(new Date(now))?.getTime();
    if (next === undefined) await this.refuseNeverDue(c.def.id, c.def.timer, c.def.timezone, now);
    await this.store.upsert({
      id: c.def.id,
      listed: true,
      nextrun: next ?? null,
      enabled: c.def.enabled !== false,
      now,
      eventAt: null,
      fields: definitionFields(c, now),
    });
    return (await this.get<A>(c.def.id))!;
  }

  /**
   * Refuses a new timer that has no occurrence after `now` (a one-shot due date in the past): the
   * task would never run. Upserting again the timer a task already has (one that ran) is accepted.
   */
  private async refuseNeverDue(id: string, timer: string, timezone: string | undefined, now: number): Promise<void> {
    const [storedTimer, storedZone] = await this.client.hmget(this.keys.task(id), 'timer', 'timezone');
    if (storedTimer === timer && (storedZone || undefined) === timezone) return;
    throw new ValidationError(
      'timer',
      `"${timer}" has no occurrence after now (${new Date(now).toISOString()}): the task would never run`,
    );
  }

  /** Reads a task, or null when there is none. */
  async get<A = unknown>(id: string): Promise<PeriodicTask<A> | null> {
    return ((await this.read([checkId(id)]))[0] as PeriodicTask<A> | undefined) ?? null;
  }

  /** Every task defined with {@link upsert} (or only an owner's, including its rules' pending runs), sorted by id. */
  async list(options: { owner?: string } = {}): Promise<PeriodicTask[]> {
    const opts = checkOptions(LIST_OPTIONS, options, { optional: true });
    const ids = (
      opts.owner !== undefined
        ? await this.client.smembers(this.keys.owner(checkId(opts.owner, 'owner')))
        : await this.client.smembers(this.keys.all)
    ).sort();
    const out: PeriodicTask[] = [];
    for (let i = 0; i < ids.length; i += 500) out.push(...(await this.read(ids.slice(i, i + 500))));
    return out;
  }

  /**
   * Reads tasks (those that exist, in order) with their last job, and with nextrun at the earliest
   * occurrence still staged, if any (the stored nextrun is past those once they are staged).
   */
  private async read(ids: string[]): Promise<PeriodicTask[]> {
    const pipe = this.client.pipeline();
    for (const id of ids) {
      pipe.hgetallBuffer(this.keys.task(id));
      pipe.hget(this.keys.last, id);
      pipe.hget(this.keys.buf, id);
    }
    const res = (await pipe.exec())!;
    const found: Array<{ task: PeriodicTask; staged: string[] }> = [];
    for (let k = 0; k < ids.length; k++) {
      const [[err, v], [, last], [, held]] = res.slice(k * 3, k * 3 + 3);
      if (err) throw err;
      const flat: Buffer[] = [];
      for (const [f, val] of Object.entries(v as Record<string, Buffer>)) flat.push(Buffer.from(f), val);
      if (!flat.length) continue;
      const task = decodeTask(flat);
      if (last) task.lastJobId = last as string;
      const raw = (v as Record<string, Buffer>).staged?.toString();
      const staged = raw ? raw.split(',').filter((m) => m !== held) : [];
      found.push({ task, staged });
    }
    // A task without a recorded last job (policy `allow`): the newest submitted run of its history.
    const noLast = found.filter((f) => f.task.lastJobId === undefined);
    if (noLast.length) {
      const hp = this.client.pipeline();
      for (const f of noLast) hp.zrevrange(this.keys.history(f.task.id), 0, 19);
      const hist = (await hp.exec())!;
      const sp = this.client.pipeline();
      const candidates = noLast.map((_f, k) => (hist[k][1] as string[]).filter((m) => !m.startsWith('~')));
      for (const ids of candidates) for (const id of ids) sp.hget(this.qkeys.job(id), 'state');
      const states = candidates.flat().length ? (await sp.exec())! : [];
      let at = 0;
      noLast.forEach((f, k) => {
        for (const id of candidates[k]) {
          const st = states[at++][1] as string | null;
          if (f.task.lastJobId === undefined && st && st !== 'planned') f.task.lastJobId = id;
        }
      });
    }
    const withStaged = found.filter((f) => f.staged.length);
    if (withStaged.length) {
      const zp = this.client.pipeline();
      for (const f of withStaged) zp.zmscore(this.keys.staged, ...f.staged);
      const scores = (await zp.exec())!;
      withStaged.forEach((f, k) => {
        const present = scores[k][1] as Array<string | null>;
        for (let i = 0; i < f.staged.length; i++) {
          if (present[i] === null) continue;
          const occ = parseStaged(f.staged[i])!.occurrence;
          if (f.task.nextrun === undefined || occ < f.task.nextrun) f.task.nextrun = occ;
        }
      });
    }
    return found.map((f) => f.task);
  }

  /** Enables a task; its next occurrence is planned from now. Resolves false when there is no such task. */
  async enable(id: string): Promise<boolean> {
    const t = await this.get(checkId(id));
    if (!t) return false;
    const now = this.clock();
    const next = checkTimer(t.timer, t.timezone).next(new Date(now))?.getTime();
    return this.store.enable(id, next ?? null, now);
  }

  /** Disables a task: it keeps its definition and history but does not fire. False when there is no such task. */
  async disable(id: string): Promise<boolean> {
    return this.store.disable(checkId(id), this.clock());
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
    return liveReplicas(this.client, this.keys.replicas);
  }

  /**
   * The next occurrences across all enabled tasks (and pending event-rule runs), in time order:
   * at most `limit` (1 to 10,000; default 20), none after `until` (ms since the epoch, or a valid Date).
   * @throws {ValidationError} naming a bad option.
   */
  async upcoming(options: { limit?: number; until?: number | Date } = {}): Promise<UpcomingRun[]> {
    const opts = checkOptions(UPCOMING_OPTIONS, options, { optional: true });
    const limit = opts.limit ?? 20;
    const until = opts.until === undefined ? Infinity : Number(opts.until);
    // Scores are the next occurrence, or up to a claim's TTL past it: read a little further.
    const ids = await this.client.zrangebyscore(
      this.keys.nextrun,
      '-inf',
      until === Infinity ? '+inf' : until + 60_000,
      'LIMIT',
      0,
      limit * 2 + 100,
    );
    // Occurrences already staged (committed, due soon) come before the tasks' stored nextrun.
    const staged = await this.client.zrangebyscore(
      this.keys.staged,
      '-inf',
      until === Infinity ? '+inf' : until,
      'WITHSCORES',
      'LIMIT',
      0,
      limit,
    );
    const out: UpcomingRun[] = [];
    if (staged.length) {
      const sp = this.client.pipeline();
      const runs: Array<{ id: string; jobId: string; occurrence: number; group: string }> = [];
      for (let i = 0; i < staged.length; i += 2) {
        const m = parseStaged(staged[i]);
        // one held back by buffer-one is not an upcoming occurrence
        if (!m || m.occurrence !== Number(staged[i + 1])) continue;
        runs.push(m);
        sp.hgetBuffer(this.qkeys.job(m.jobId), 'd');
      }
      const rows = runs.length ? (await sp.exec())! : [];
      runs.forEach((r, i) => {
        const d = rows[i][1] as Buffer | null;
        if (d) out.push({ id: r.id, task: unpackDescription(d).task, group: r.group, occurrence: r.occurrence });
      });
    }
    if (ids.length === 0) return out.sort((a, b) => a.occurrence - b.occurrence || a.id.localeCompare(b.id)).slice(0, limit);
    const pipe = this.client.pipeline();
    for (const id of ids) pipe.hmget(this.keys.task(id), 'nextrun', 'timer', 'timezone', 'task', 'group', 'enabled');
    const rows = (await pipe.exec())!;
    ids.forEach((id, i) => {
      const [nextrun, timer, timezone, task, group, enabled] = rows[i][1] as (string | null)[];
      if (!nextrun || !timer || enabled !== '1') return;
      let t: Timer;
      try {
        t = parseTimer(timer, { timezone: timezone || undefined });
      } catch {
        return;
      }
      let o: number | null = Number(nextrun);
      for (let k = 0; k < limit && o !== null && o <= until; k++) {
        out.push({ id, task: task!, group: group!, occurrence: o });
        o = t.next(new Date(o))?.getTime() ?? null;
      }
    });
    return out.sort((a, b) => a.occurrence - b.occurrence || a.id.localeCompare(b.id)).slice(0, limit);
  }

  /**
   * A task's run history, newest first (default 20 entries): each submitted run with its job's
   * times, status, executor, host, pid, log lines and error output, plus the occurrences that
   * were skipped (overlap) or missed (catch-up).
   */
  async runs(id: string, options: { limit?: number } = {}): Promise<RunRecord[]> {
    const limit = checkOptions(RUNS_OPTIONS, options, { optional: true }).limit ?? 20;
    const key = this.keys.history(checkId(id));
    // Staged occurrences (the newest entries) are not runs yet: read on past them until `limit` runs.
    const out: RunRecord[] = [];
    for (let start = 0; out.length < limit; start += limit) {
      const raw = await this.client.zrevrange(key, start, start + limit - 1, 'WITHSCORES');
      out.push(...(await this.records(raw)));
      if (raw.length < limit * 2) break;
    }
    return out.slice(0, limit);
  }

  /** The run records of history entries (`member, score` pairs), without the staged occurrences. */
  private async records(raw: string[]): Promise<RunRecord[]> {
    const entries: Array<{ member: string; occurrence: number }> = [];
    for (let i = 0; i < raw.length; i += 2) entries.push({ member: raw[i], occurrence: Number(raw[i + 1]) });
    const jobs = entries.filter((e) => !e.member.startsWith('~'));
    const pipe = this.client.pipeline();
    for (const e of jobs) {
      pipe.hgetallBuffer(this.qkeys.job(e.member));
      pipe.lrange(this.qkeys.logs(e.member), 0, -1);
    }
    const res = jobs.length ? (await pipe.exec())! : [];
    const byId = new Map<string, { job: Record<string, Buffer>; logs: string[] }>();
    jobs.forEach((e, k) => {
      byId.set(e.member, { job: res[k * 2][1] as Record<string, Buffer>, logs: res[k * 2 + 1][1] as string[] });
    });
    // A staged occurrence (its job still `planned`) has not run yet.
    const planned = (e: { member: string }) => byId.get(e.member)?.job?.state?.toString() === 'planned';
    // `~replaced@<occurrence>@<new occurrence>`: on the run of that occurrence when it was released, else its own entry.
    const replacedBy = new Map<number, number>();
    for (const e of entries) {
      if (e.member.startsWith(HISTORY_REPLACED)) replacedBy.set(e.occurrence, Number(e.member.split('@')[2]));
    }
    const released = new Set(jobs.filter((e) => !planned(e)).map((e) => e.occurrence));
    return entries
      .filter((e) => !planned(e) && !(e.member.startsWith(HISTORY_REPLACED) && released.has(e.occurrence)))
      .map((e): RunRecord => {
        const record = this.runRecord(e, byId);
        const by = replacedBy.get(e.occurrence);
        return by === undefined || record.status === 'skipped' || record.status === 'missed'
          ? record
          : { ...record, replacedBy: by };
      });
  }

  /** One run history entry read into a record (`byId`: the jobs of the entries that name one, with their logs). */
  private runRecord(
    e: { member: string; occurrence: number },
    byId: Map<string, { job: Record<string, Buffer>; logs: string[] }>,
  ): RunRecord {
    if (e.member.startsWith(HISTORY_REPLACED)) return { occurrence: e.occurrence, status: 'replaced' };
    if (e.member.startsWith(HISTORY_SKIPPED)) return { occurrence: e.occurrence, status: 'skipped' };
    if (e.member.startsWith(HISTORY_FAILED)) {
      // `~failed@<occurrence>@<error>`: the timer stopped advancing there (the error may hold '@')
      return {
        occurrence: e.occurrence,
        status: 'failed',
        error: e.member.slice(e.member.indexOf('@', HISTORY_FAILED.length) + 1),
      };
    }
    if (e.member.startsWith(HISTORY_MISSED)) {
      const [, , count, last] = e.member.split('@');
      return { occurrence: e.occurrence, status: 'missed', count: Number(count), until: Number(last) };
    }
    const got = byId.get(e.member)!;
    const job = decodeJobObject(e.member, got.job ?? {});
    if (!job) return { occurrence: e.occurrence, status: 'expired', jobId: e.member };
    const hostPid = got.job.host ? { host: got.job.host.toString(), pid: Number(got.job.pid?.toString()) } : {};
    const dropped = got.job.dropped?.toString();
    const ended = fannedOutEnd(job);
    return {
      occurrence: e.occurrence,
      jobId: e.member,
      status: dropped ? 'dropped' : ended.status,
      submitted: job.submitted,
      started: job.started,
      finished: ended.finished,
      worker: job.worker,
      ...hostPid,
      retries: job.retries,
      logs: got.logs,
      error: dropped ?? job.error,
      result: job.result,
      ...(job.children ? { children: job.children } : {}),
    };
  }

  /**
   * Defines (or replaces) an event rule: each {@link emit} of event `after` schedules one run
   * `delay` after the event, per subject.
   * @throws {ValidationError} naming the bad field; nothing is written then.
   */
  async rule<A = unknown>(def: EventRuleDefinition<A>): Promise<EventRule<A>> {
    if (typeof def !== 'object' || def === null) throw new ValidationError('rule', 'must be an object');
    knownKeys(def, ruleSchema.shape);
    const parsed = ruleSchema.safeParse(def);
    if (!parsed.success) throw zodError('', parsed.error);
    checkId(def.id);
    const delayMs = typeof def.delay === 'number' ? def.delay : isoDelay(def.delay);
    const args = packValue(def.args, this.maxArgsBytes, 'args');
    const now = this.clock();
    const record = await this.store.rule(def.id, def.after, now, [
      'delay',
      String(def.delay),
      'delayMs',
      delayMs,
      'task',
      def.task,
      'group',
      def.group ?? 'default',
      'args',
      args,
      'priority',
      def.priority ?? 'low',
      'maxRetries',
      def.maxRetries ?? 0,
    ]);
    return decodeRule<A>(record)!;
  }

  /** Reads an event rule, or null. */
  async getRule<A = unknown>(id: string): Promise<EventRule<A> | null> {
    return decodeRule<A>(await this.client.hgetallBuffer(this.keys.rule(checkId(id))));
  }

  /** Every event rule, sorted by id. */
  async rules(): Promise<EventRule[]> {
    const ids = (await this.client.smembers(this.keys.rules)).sort();
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
    if (typeof e !== 'object' || e === null) throw new ValidationError('event', 'must be an object');
    knownKeys(e, emitSchema.shape);
    const parsed = emitSchema.safeParse(e);
    if (!parsed.success) throw zodError('', parsed.error);
    const at = e.at === undefined ? this.clock() : Number(e.at);
    const ruleIds = await this.client.smembers(this.keys.event(e.event));
    const now = this.clock();
    const out: string[] = [];
    for (const ruleId of ruleIds) {
      const rule = await this.client.hgetallBuffer(this.keys.rule(ruleId));
      if (!rule.id) continue;
      const due = at + Number(rule.delayMs.toString());
      const id = pendingId(ruleId, e.subject);
      const timer = new Date(due).toISOString();
      const fields: Array<string | number | Buffer> = [
        'id',
        id,
        'task',
        rule.task,
        'timer',
        timer,
        'timezone',
        '',
        'kind',
        'once',
        'group',
        rule.group,
        'args',
        rule.args,
        'priority',
        rule.priority,
        'subject',
        e.subject,
        'submitter',
        `rule:${ruleId}`,
        'owner',
        ruleOwner(ruleId),
        'overlap',
        'allow',
        'catchup',
        'latest',
        'catchupWindow',
        0,
        'tolerance',
        '',
        'maxRuntime',
        '',
        'maxRetries',
        rule.maxRetries,
        'interval',
        '',
        'rule',
        ruleId,
        'event',
        e.event,
        'updated',
        now,
      ];
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

const DEFINITION_KEYS: Record<string, true> = Object.fromEntries(
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
  ].map((k) => [k, true]),
);

/** An event rule from its stored record (field -> bytes), or null when there is none. */
function decodeRule<A>(h: Record<string, Buffer>): EventRule<A> | null {
  if (!h.id) return null;
  const s = (k: string) => h[k]?.toString();
  const delay = s('delay')!;
  return {
    id: s('id')!,
    after: s('after')!,
    delay: /^\d+$/.test(delay) ? Number(delay) : delay,
    delayMs: Number(s('delayMs')),
    task: s('task')!,
    group: s('group'),
    args: (h.args?.length ? unpack(h.args) : undefined) as A,
    priority: s('priority') as Priority,
    maxRetries: Number(s('maxRetries')),
    created: Number(s('created')),
  };
}

function ruleOwner(ruleId: string): string {
  return `${RULE_OWNER_PREFIX}${ruleId}`;
}

/** Reads a p:staged member: `<overlap code><task id>@<occurrence>|<h|l><group>` (see lua/periodic-stage.lua). */
function parseStaged(member: string): { id: string; occurrence: number; jobId: string; group: string } | null {
  const m = /^.(([^|@]*)@(\d+))\|.(.*)$/s.exec(member);
  return m ? { jobId: m[1], id: m[2], occurrence: Number(m[3]), group: m[4] } : null;
}

/** Task id of a rule's pending run for a subject (subjects may hold any characters, so they are hashed). */
export function pendingId(ruleId: string, subject: string): string {
  return `${RULE_RUN_PREFIX}${ruleId}:${createHash('sha1').update(subject).digest('hex').slice(0, 20)}`;
}

function isoDelay(text: string): number {
  let t: Timer;
  try {
    t = parseTimer(text);
  } catch (err) {
    throw new ValidationError('delay', (err as Error).message);
  }
  if (t.kind !== 'interval' || !t.intervalMs || !/^P/i.test(text.trim())) {
    throw new ValidationError('delay', `must be an ISO-8601 duration such as P7DT30S, or milliseconds (got "${text}")`);
  }
  return t.intervalMs;
}

/**
 * A run's status and end as the history shows them: a job that fanned out ends when its children
 * end, failed when one of them failed.
 */
function fannedOutEnd(job: Job): { status: RunStatus; finished?: number } {
  const c = job.children;
  if (!c || job.state !== 'success') return { status: job.state, finished: job.finished };
  if (c.ended === undefined) return { status: 'running' };
  return { status: c.failed > 0 ? 'failed' : 'success', finished: c.ended };
}

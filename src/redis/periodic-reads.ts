/**
 * The periodic reads: what PeriodicTasks and the dashboard's periodic pages read of the `p:*`
 * keys (and of the run jobs in the home shard), as methods, so that no code outside src/redis/
 * knows the key layout. Every read is a plain read (no script): a reader sees each key as it is
 * at the moment it is read, as the callers expect.
 */
import type { Redis } from 'ioredis';
import { serverTime } from './connection.js';
import type { PeriodicKeys, QueueKeys } from './keys.js';
import { execChecked } from './pipeline.js';

/** A live scheduler replica's entry: its id, when it expires (server clock, ms) and its record as it wrote it. */
export interface ReplicaEntry {
  id: string;
  expiry: number;
  record: Record<string, unknown> | null;
}

/** A `p:staged` member read: its task id, occurrence, job id and group. */
export interface StagedMember {
  id: string;
  occurrence: number;
  jobId: string;
  group: string;
}

/**
 * Reads a `p:staged` member: `<overlap code><task id>@<occurrence>[~<epoch>]|<h|l><group>` (see
 * lua/periodic-stage.lua).
 */
export function parseStaged(member: string): StagedMember | null {
  const m = /^.(([^|@]*)@(\d+)(?:~\d+)?)\|.(.*)$/s.exec(member);
  return m ? { jobId: m[1], id: m[2], occurrence: Number(m[3]), group: m[4] } : null;
}

/** A task's stored hash (field → bytes; empty when there is none), its last job and the staged member buffer-one holds. */
export interface TaskRow {
  hash: Record<string, Buffer>;
  last: string | null;
  held: string | null;
}

/** A run job's hash (field → bytes; empty when it is gone) and its log lines. */
export interface RunJob {
  job: Record<string, Buffer>;
  logs: string[];
}

/** What {@link PeriodicReads.taskSummaries} reads of a task (null: unset). */
export interface TaskSummary {
  nextrun: string | null;
  timer: string | null;
  timezone: string | null;
  task: string | null;
  group: string | null;
  enabled: string | null;
  /** Scheduled runs so far (for a limit). */
  runs: string | null;
}

/** Pipelines `add` for each item; answers the replies in order (none for no items). */
async function each<T>(client: Redis, items: readonly T[], add: (pipe: ReturnType<Redis['pipeline']>, item: T) => void) {
  if (items.length === 0) return [];
  const pipe = client.pipeline();
  for (const item of items) add(pipe, item);
  return execChecked(pipe);
}

/**
 * One queue's periodic reads. `jobs` are the keys of the queue's home shard, where the runs' jobs are.
 * @example
 * const reads = new PeriodicReads(client, periodicKeys('mail'), queueKeys('mail'));
 */
export class PeriodicReads {
  constructor(
    readonly client: Redis,
    readonly keys: PeriodicKeys,
    private readonly jobs: QueueKeys,
  ) {}

  /** A task's stored timer and time zone (null: no such task, or unset). */
  async taskTimer(id: string): Promise<{ timer: string | null; timezone: string | null }> {
    const [timer, timezone] = await this.client.hmget(this.keys.task(id), 'timer', 'timezone');
    return { timer, timezone };
  }

  /** The ids of every task defined through upsert, or of an owner's tasks (unsorted). */
  taskIds(owner?: string): Promise<string[]> {
    return this.client.smembers(owner === undefined ? this.keys.all : this.keys.owner(owner));
  }

  /**
   * One step of a scan of the ids of the tasks defined through upsert (SSCAN of `p:all`, about
   * `count` ids): the cursor to go on from (`'0'`: the scan is over) and the ids, unsorted.
   */
  async scanTaskIds(cursor: string, count: number): Promise<{ cursor: string; ids: string[] }> {
    const [next, ids] = await this.client.sscan(this.keys.all, cursor, 'COUNT', count);
    return { cursor: next, ids };
  }

  /** How many tasks are defined through upsert. */
  taskCount(): Promise<number> {
    return this.client.scard(this.keys.all);
  }

  /** One step of a scan of the event rules' ids (as {@link scanTaskIds}). */
  async scanRuleIds(cursor: string, count: number): Promise<{ cursor: string; ids: string[] }> {
    const [next, ids] = await this.client.sscan(this.keys.rules, cursor, 'COUNT', count);
    return { cursor: next, ids };
  }

  /** How many event rules there are. */
  ruleCount(): Promise<number> {
    return this.client.scard(this.keys.rules);
  }

  /** Per task id: its hash, its last job and its held staged member. */
  async tasks(ids: readonly string[]): Promise<TaskRow[]> {
    const rows = await each(this.client, ids, (p, id) => {
      p.hgetallBuffer(this.keys.task(id));
      p.hget(this.keys.last, id);
      p.hget(this.keys.buf, id);
    });
    return ids.map((_id, k) => ({
      hash: rows[k * 3] as Record<string, Buffer>,
      last: rows[k * 3 + 1] as string | null,
      held: rows[k * 3 + 2] as string | null,
    }));
  }

  /** Per task id: the members of its newest `count` run history entries, newest first. */
  async newestRuns(ids: readonly string[], count: number): Promise<string[][]> {
    return (await each(this.client, ids, (p, id) => p.zrevrange(this.keys.history(id), 0, count - 1))) as string[][];
  }

  /** A task's run history entries `start` to `stop` (ranks, newest first) as `member, score` pairs. */
  history(id: string, start: number, stop: number): Promise<string[]> {
    return this.client.zrevrange(this.keys.history(id), start, stop, 'WITHSCORES');
  }

  /** The states of run jobs (null: gone). */
  async jobStates(jobIds: readonly string[]): Promise<Array<string | null>> {
    return (await each(this.client, jobIds, (p, id) => p.hget(this.jobs.job(id), 'state'))) as Array<string | null>;
  }

  /** The packed descriptions (`d`) of run jobs (null: gone). */
  async jobDescriptions(jobIds: readonly string[]): Promise<Array<Buffer | null>> {
    return (await each(this.client, jobIds, (p, id) => p.hgetBuffer(this.jobs.job(id), 'd'))) as Array<Buffer | null>;
  }

  /** Run jobs with their log lines. */
  async runJobs(jobIds: readonly string[]): Promise<RunJob[]> {
    const rows = await each(this.client, jobIds, (p, id) => {
      p.hgetallBuffer(this.jobs.job(id));
      p.lrange(this.jobs.logs(id), 0, -1);
    });
    return jobIds.map((_id, k) => ({ job: rows[k * 2] as Record<string, Buffer>, logs: rows[k * 2 + 1] as string[] }));
  }

  /** Per task id: the `p:staged` member buffer-one holds back for it, or null. */
  async heldMembers(taskIds: readonly string[]): Promise<Array<string | null>> {
    return taskIds.length ? this.client.hmget(this.keys.buf, ...taskIds) : [];
  }

  /** Per list of `p:staged` members: each one's score, or null when it is not staged (any more). */
  async stagedScores(lists: readonly string[][]): Promise<Array<Array<string | null>>> {
    return (await each(this.client, lists, (p, members) => p.zmscore(this.keys.staged, ...members))) as Array<
      Array<string | null>
    >;
  }

  /** Staged members scored up to `until` (ms; Infinity: all), at most `limit`, as `member, score` pairs in score order. */
  staged(until: number, limit: number): Promise<string[]> {
    return this.client.zrangebyscore(
      this.keys.staged,
      '-inf',
      until === Infinity ? '+inf' : until,
      'WITHSCORES',
      'LIMIT',
      0,
      limit,
    );
  }

  /** The ids of the tasks whose `p:nextrun` score is at most `until` (ms; Infinity: all), at most `limit`, in score order. */
  nextrunIds(until: number, limit: number): Promise<string[]> {
    return this.client.zrangebyscore(this.keys.nextrun, '-inf', until === Infinity ? '+inf' : until, 'LIMIT', 0, limit);
  }

  /** The `count` tasks soonest in `p:nextrun`, with their scores. */
  async soonest(count: number): Promise<Array<{ id: string; score: number }>> {
    const flat = await this.client.zrange(this.keys.nextrun, 0, count - 1, 'WITHSCORES');
    const out: Array<{ id: string; score: number }> = [];
    for (let i = 0; i < flat.length; i += 2) out.push({ id: flat[i], score: Number(flat[i + 1]) });
    return out;
  }

  /** Per task id: the fields the upcoming list needs. */
  async taskSummaries(ids: readonly string[]): Promise<TaskSummary[]> {
    const rows = (await each(this.client, ids, (p, id) =>
      p.hmget(this.keys.task(id), 'nextrun', 'timer', 'timezone', 'task', 'group', 'enabled', 'runs'),
    )) as Array<Array<string | null>>;
    return rows.map(([nextrun, timer, timezone, task, group, enabled, runs]) => ({
      nextrun,
      timer,
      timezone,
      task,
      group,
      enabled,
      runs,
    }));
  }

  /** How many tasks each owner has. */
  async ownerSizes(owners: readonly string[]): Promise<number[]> {
    return (await each(this.client, owners, (p, o) => p.scard(this.keys.owner(o)))).map(Number);
  }

  /** An event rule's stored record (field → bytes; empty when there is none). */
  rule(id: string): Promise<Record<string, Buffer>> {
    return this.client.hgetallBuffer(this.keys.rule(id));
  }

  /** The ids of every event rule (unsorted). */
  ruleIds(): Promise<string[]> {
    return this.client.smembers(this.keys.rules);
  }

  /** The ids of the rules that follow event `event`. */
  eventRules(event: string): Promise<string[]> {
    return this.client.smembers(this.keys.event(event));
  }

  /**
   * The scheduler replicas whose entry has not expired (server clock), sorted by id: at most
   * `max` of them (the latest to expire first), with their records (null: none, a replica of an
   * older build or one whose record expired first), the server's time and how many are live.
   */
  async replicaRecords(max: number): Promise<{ now: number; total: number; replicas: ReplicaEntry[] }> {
    const now = await serverTime(this.client);
    const [flat, total] = (await execChecked(
      this.client
        .multi()
        .zrevrangebyscore(this.keys.replicas, '+inf', `(${now}`, 'WITHSCORES', 'LIMIT', 0, max)
        .zcount(this.keys.replicas, `(${now}`, '+inf'),
    )) as [string[], number];
    const ids: string[] = [];
    const expiries: number[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      ids.push(flat[i]);
      expiries.push(Number(flat[i + 1]));
    }
    const raw = ids.length ? await this.client.mget(ids.map((id) => this.keys.replica(id))) : [];
    const replicas = ids.map((id, i): ReplicaEntry => {
      let record: Record<string, unknown> | null = null;
      try {
        const v = raw[i] ? (JSON.parse(raw[i] as string) as unknown) : null;
        if (v && typeof v === 'object' && !Array.isArray(v)) record = v as Record<string, unknown>;
      } catch {
        record = null;
      }
      return { id, expiry: expiries[i], record };
    });
    replicas.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return { now, total: Number(total), replicas };
  }

  /** The ids of the scheduler replicas whose entry has not expired (server clock), sorted. */
  async replicas(): Promise<string[]> {
    const now = await serverTime(this.client);
    return (await this.client.zrangebyscore(this.keys.replicas, `(${now}`, '+inf')).sort();
  }
}

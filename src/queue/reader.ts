/**
 * A queue's reads (jobs by state, one job and its logs, counts, stats, groups, executors, events),
 * made over every shard and merged; {@link Queue} delegates its read methods here. The Redis
 * reads themselves are src/redis/job-read-store.ts's.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { ValidationError } from '../errors.js';
import { checkOptions, checkValue, type OptionsOf, type SettingsOf, text, whole } from '../options.js';
import type { ConnectionOption } from '../redis/connection.js';
import { EMPTY_GROUP } from '../redis/group-state.js';
import { JobReadStore } from '../redis/job-read-store.js';
import type { QueueStore } from '../redis/queue-store.js';
import { checkReadLayout } from '../redis/schema.js';
import { shardNumbers, shardOfGroup, shardOfId, shardsOfGroup } from '../redis/shards.js';
import { type QueueEvent, readShardEvents } from './events.js';
import { JOB_STATES, type Job, type JobState, LIST_ORDER } from './job.js';

/** Per-group view, as {@link Queue.groups} gives it. */
export interface GroupInfo {
  group: string;
  waiting: number;
  running: number;
  stuck: number;
  paused: boolean;
  /** Concurrency limit across all executors; 0 means none. */
  limit: number;
  /** Turns per round-robin round. */
  weight: number;
  /** Rate limit across all executors (at most `max` starts in any `perMs` ms), or null: none. */
  rate: { max: number; perMs: number } | null;
}

/** What {@link Queue.stats} gives. */
export interface QueueStats {
  windowMs: number;
  counts: Record<JobState, number>;
  /** Jobs that ended in each final state within the window. */
  finished: { success: number; failed: number; cancelled: number };
  /** Finished jobs per second over the window. */
  perSecond: number;
  /** Submit-to-start waits of jobs that succeeded in the window, in ms (from the due time for a delayed job). */
  waitMs: { p50?: number; p90?: number; p99?: number; max?: number };
}

/** A live executor, as {@link Queue.workers} gives it. */
export interface WorkerInfo {
  id: string;
  host: string;
  pid: number;
  started: number;
  concurrency: number;
  /**
   * Runs it holds now (scheduled or running), counted from the queue's leases at the time of the
   * call; when a shard holds more than `MAX_LEASES_READ` runs, at least what its last
   * heartbeat said.
   */
  running: number;
  /** The ids of the jobs it holds now, the earliest lease expiry first (those read within the bound). */
  jobs: string[];
}

/** Runs in progress {@link Queue.workers} reads at most per shard (with their executor), so the call's work is bounded. */
export const MAX_LEASES_READ = 2000;

/** Most bytes of a job id a read, cancel or retry looks up (a caller's id is at most 200, a fan-out child's or periodic run's longer). */
const MAX_JOB_ID_BYTES = 1000;

/** Checks a job id given to a read, cancel or retry. @throws {@link ValidationError} (`id`). */
export function checkJobId(id: unknown): void {
  checkValue(text(MAX_JOB_ID_BYTES), id, 'id');
}

/** What {@link Queue.jobs} lists. */
/** Most jobs one `Queue.jobs` call lists (and `rota jobs --limit` asks for). */
export const MAX_JOBS_LISTED = 10_000;

const JOBS_OPTIONS = {
  /** The state of the jobs listed. */
  state: z.enum(JOB_STATES, { error: `must be one of ${JOB_STATES.join(', ')}` }),
  /** Only this group's jobs. */
  group: text(200).optional(),
  /** Most jobs listed: 1 to 10,000; default 50. */
  limit: whole(1, MAX_JOBS_LISTED).default(50),
};
/** What {@link Queue.jobs} lists. */
export type JobsOptions = OptionsOf<typeof JOBS_OPTIONS>;
const STATS_WINDOW = whole(1, 30 * 86_400_000, 'ms');
/** A stream id (`$`, `<ms>` or `<ms>-<seq>`) per shard, joined by `,`. */
const STREAM_PLACES = /^(\$|\d{1,20}(-\d{1,20})?)(,(\$|\d{1,20}(-\d{1,20})?))*$/;
/** Where {@link Queue.events} reads from, and what stops it. */
const EVENTS_OPTIONS = {
  /** An event's `streamId`: the events after it (default: only new events). */
  from: z.string({ error: 'must be a string' }).regex(STREAM_PLACES, "must be an event's streamId").optional(),
  /** Ends the iteration when aborted. */
  signal: z.instanceof(AbortSignal, { error: 'must be an AbortSignal' }).optional(),
};
/** Where {@link Queue.events} reads from, and what stops it. */
export type EventsOptions = OptionsOf<typeof EVENTS_OPTIONS>;

/** Orders by group name. */
export function byGroupName(a: { group: string }, b: { group: string }): number {
  return a.group < b.group ? -1 : a.group > b.group ? 1 : 0;
}

/**
 * The shards that may hold job `id` of a queue of `shards` shards: its shard, for an id Rota made
 * (or a fan-out child of one); every shard for another id (a caller's id is unique within a
 * shard, and any shard may hold it; the home shard holds periodic runs).
 */
export function shardsOfJob(id: string, shards: number): number[] {
  const shard = shardOfId(id, shards);
  return shard === null ? shardNumbers(shards) : [shard];
}

/** The first non-null answer of `call` on `shards` (asked at once). */
export async function firstAnswer<S, R>(shards: readonly S[], call: (shard: S) => Promise<R | null>): Promise<R | null> {
  const answers = await Promise.all(shards.map(call));
  return answers.find((a) => a !== null) ?? null;
}

/** The reads of one queue (see {@link Queue} for each method's contract). */
export class QueueReader {
  /** Each shard's reads, by shard number. */
  private readonly reads: JobReadStore[];

  constructor(
    private readonly name: string,
    private readonly client: Redis,
    private readonly connection: ConnectionOption,
    /** The queue's shard count. */
    private readonly shards: number,
    /** Each shard's store, by shard number. */
    private readonly stores: readonly QueueStore[],
  ) {
    this.reads = stores.map((s) => new JobReadStore(s));
  }

  /**
   * Checks, before each read, the queue's layout (read only: a read records nothing; the script
   * calls check it themselves): a read made with a wrong count would miss shards, and so would one
   * made while a reshard is under way (or was killed), the jobs it moved being in the other
   * layout. Not kept between reads: a reshard may begin after the first.
   * @throws {@link ShardCountError} when the queue records another shard count.
   * @throws {@link ReshardInProgressError} while the queue's shard count is being changed.
   */
  layoutChecked(): Promise<void> {
    return checkReadLayout(this.client, this.name, this.shards);
  }

  /** The reads of the shards that may hold jobs of group `group` (its shard's, and the home shard's). */
  private readsOfGroup(group: string): JobReadStore[] {
    return shardsOfGroup(group, this.shards).map((shard) => this.reads[shard]);
  }

  /** The reads of the shards that may hold job `id`. */
  private readsOf(id: string): JobReadStore[] {
    return shardsOfJob(id, this.shards).map((shard) => this.reads[shard]);
  }

  async getJob<A>(id: string): Promise<Job<A> | null> {
    checkJobId(id);
    await this.layoutChecked();
    return firstAnswer(this.readsOf(id), (r) => r.job(id) as Promise<Job<A> | null>);
  }

  /**
   * The jobs of `ids` (without their attempts), in their order (null: none), each read from the
   * shards that may hold it, a batch of pipelined reads a shard.
   */
  async jobsById(ids: readonly string[]): Promise<Array<Job | null>> {
    await this.layoutChecked();
    const out: Array<Job | null> = ids.map(() => null);
    const byShard = new Map<number, number[]>();
    ids.forEach((id, i) => {
      for (const shard of shardsOfJob(id, this.shards)) {
        const at = byShard.get(shard);
        if (at) at.push(i);
        else byShard.set(shard, [i]);
      }
    });
    await Promise.all(
      [...byShard].map(async ([shard, at]) => {
        const jobs = await this.reads[shard].jobs(at.map((i) => ids[i]));
        jobs.forEach((job, k) => {
          if (job && (job.state as string) !== 'planned') out[at[k]] ??= job;
        });
      }),
    );
    return out;
  }

  /** Job `id` as shard `shard` holds it, or null (no layout check: for the submit's read back). */
  readJob<A>(shard: number, id: string): Promise<Job<A> | null> {
    return this.reads[shard].job(id) as Promise<Job<A> | null>;
  }

  async jobLogs(id: string): Promise<string[]> {
    checkJobId(id);
    await this.layoutChecked();
    const logs = await firstAnswer(this.readsOf(id), async (r) => {
      const lines = await r.logs(id);
      return lines.length > 0 ? lines : null;
    });
    return logs ?? [];
  }

  async jobs(options: JobsOptions): Promise<Job[]> {
    const opts = checkOptions(JOBS_OPTIONS, options);
    await this.layoutChecked();
    if (this.reads.length === 1) return this.shardJobs(this.reads[0], opts);
    const { limit } = opts;
    const reads = opts.group !== undefined ? this.readsOfGroup(opts.group) : this.reads;
    const parts = await Promise.all(reads.map((r) => this.shardJobs(r, opts)));
    const all = parts.flat();
    // (each shard's part is in order: merged by the same order; a stable sort keeps ties in it)
    const key = LIST_ORDER[opts.state];
    if (key) all.sort((a, b) => key(a) - key(b));
    else if (opts.state === 'waiting') all.sort(byGroupName);
    return all.slice(0, limit);
  }

  /** {@link jobs} of one shard. */
  private async shardJobs(reads: JobReadStore, opts: SettingsOf<typeof JOBS_OPTIONS>): Promise<Job[]> {
    const { limit } = opts;
    let ids: string[];
    switch (opts.state) {
      case 'success':
      case 'failed':
      case 'cancelled':
        ids = await reads.finishedIds(opts.state, opts.group ? undefined : limit);
        break;
      case 'scheduled':
      case 'running':
        ids = await reads.leasedIds();
        break;
      case 'stuck':
      case 'delayed':
        ids = await reads.dueIds();
        break;
      case 'waiting': {
        const groups = opts.group ? [opts.group] : [...(await reads.groupStates()).keys()].sort();
        ids = [];
        for (const g of groups) {
          if (ids.length >= limit) break;
          ids.push(...(await reads.groupHeads(g, limit)));
        }
        break;
      }
      case 'waiting-children':
        return this.waitingChildren(reads, limit, opts.group);
      default:
        throw new ValidationError('state', `must be one of ${JOB_STATES.join(', ')}`);
    }
    const out: Job[] = [];
    for (let i = 0; i < ids.length && out.length < limit; i += 200) {
      for (const job of await reads.jobs(ids.slice(i, i + 200))) {
        if (job && job.state === opts.state && (!opts.group || job.group === opts.group) && out.length < limit) out.push(job);
      }
    }
    return out;
  }

  /**
   * The first `limit` jobs of one shard waiting for children (of group `group`), in submit order:
   * their index is read 200 ids a call, and the walk stops once the list is full.
   */
  private async waitingChildren(reads: JobReadStore, limit: number, group?: string): Promise<Job[]> {
    const out: Job[] = [];
    const chunk = group ? 200 : Math.min(limit, 200);
    for (let at = 0; out.length < limit; at += chunk) {
      const ids = await reads.waitingChildrenIds(at, chunk);
      for (const job of await reads.jobs(ids)) {
        if (job && job.state === 'waiting-children' && (!group || job.group === group) && out.length < limit) out.push(job);
      }
      if (ids.length < chunk) break;
    }
    return out;
  }

  async stats(windowMs: number): Promise<QueueStats> {
    checkValue(STATS_WINDOW, windowMs, 'windowMs');
    await this.layoutChecked();
    const now = Math.floor((await this.reads[0].serverTime()) / 1000) * 1000;
    const since = now - windowMs;
    const finished = { success: 0, failed: 0, cancelled: 0 };
    const waits: number[] = [];
    // (each shard samples its share of the 1,000)
    const sampled = Math.ceil(1000 / this.reads.length);
    await Promise.all(
      this.reads.map(async (r) => {
        const counted = await r.finishedSince(since);
        for (const s of ['success', 'failed', 'cancelled'] as const) finished[s] += counted[s];
        waits.push(...(await r.successWaits(since, sampled)));
      }),
    );
    const { success, failed, cancelled } = finished;
    waits.sort((a, b) => a - b);
    const pct = (p: number) =>
      waits.length ? waits[Math.min(waits.length - 1, Math.floor((p / 100) * waits.length))] : undefined;
    return {
      windowMs,
      counts: await this.counts(),
      finished: { success, failed, cancelled },
      perSecond: (success + failed + cancelled) / (windowMs / 1000),
      waitMs: { p50: pct(50), p90: pct(90), p99: pct(99), max: waits.at(-1) },
    };
  }

  async counts(): Promise<Record<JobState, number>> {
    await this.layoutChecked();
    const raws = await Promise.all(this.reads.map((r) => r.counts()));
    const out = {} as Record<JobState, number>;
    for (const s of JOB_STATES) out[s] = raws.reduce((n, raw) => n + Number(raw[s] ?? 0), 0);
    return out;
  }

  async groups(): Promise<GroupInfo[]> {
    await this.layoutChecked();
    const parts = await Promise.all(this.stores.map((s, shard) => this.shardGroups(s, this.reads[shard])));
    // A group lives in its shard; its periodic runs (home shard) and fan-out children (their
    // parent's shard) may be elsewhere: their counts add up, its settings are its shard's.
    const merged = new Map<string, GroupInfo>();
    parts.forEach((part, shard) => {
      for (const g of part) {
        const seen = merged.get(g.group);
        if (!seen) merged.set(g.group, g);
        else {
          const own = shardOfGroup(g.group, this.shards) === shard ? g : seen;
          merged.set(g.group, {
            ...own,
            waiting: seen.waiting + g.waiting,
            running: seen.running + g.running,
            stuck: seen.stuck + g.stuck,
          });
        }
      }
    });
    return [...merged.values()].sort(byGroupName);
  }

  /** {@link groups} of one shard. */
  private async shardGroups(store: QueueStore, reads: JobReadStore): Promise<GroupInfo[]> {
    // Runs in progress are counted from the leases: a group keeps its own count only while it
    // has a limit, and a group with runs but nothing waiting is not in the hash.
    const [states, running] = await Promise.all([reads.groupStates(), store.running()]);
    const names = new Set([...states.keys(), ...running.keys()]);
    return [...names].map((group) => {
      const g = states.get(group) ?? EMPTY_GROUP;
      return {
        group,
        // The preferred list holds released jobs (waiting) and due stuck jobs.
        waiting: g.nh + g.nl + Math.max(0, g.nr - g.stuck),
        running: running.get(group) ?? 0,
        stuck: g.stuck,
        paused: g.paused === 1,
        limit: g.limit,
        weight: g.weight,
        rate: g.rate > 0 ? { max: g.rate, perMs: g.per } : null,
      };
    });
  }

  async workers(): Promise<WorkerInfo[]> {
    await this.layoutChecked();
    // Registry expiries are the Redis server's clock (heartbeat.lua), so compare with it.
    const now = await this.reads[0].serverTime();
    // (an executor registers in every shard: each lists it once)
    const out = new Map<string, WorkerInfo>();
    for (const r of this.reads) {
      for (const { id, info } of await r.workers(now, new Set(out.keys()))) {
        out.set(id, { ...(info as Omit<WorkerInfo, 'id' | 'jobs'>), id, jobs: [] });
      }
    }
    // What each holds now, from the leases (a heartbeat's count is up to a third of a lease old).
    const held = new Map<string, string[]>();
    let complete = true;
    for (const r of this.reads) {
      const { total, runs } = await r.runsInProgress(MAX_LEASES_READ);
      if (runs.length < total) complete = false;
      for (const run of runs) {
        const mine = held.get(run.worker);
        if (mine) mine.push(run.id);
        else held.set(run.worker, [run.id]);
      }
    }
    for (const w of out.values()) {
      w.jobs = held.get(w.id) ?? [];
      w.running = complete ? w.jobs.length : Math.max(w.jobs.length, Number(w.running) || 0);
    }
    return [...out.values()];
  }

  events(options: EventsOptions): AsyncIterable<QueueEvent> {
    const opts = checkOptions(EVENTS_OPTIONS, options, { optional: true });
    return readShardEvents(
      this.connection,
      this.stores.map((s) => s.keys.events),
      opts,
    );
  }
}

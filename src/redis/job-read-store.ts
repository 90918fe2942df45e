/**
 * The queue's reads: one shard's jobs by state, one job and its logs, counts, group states,
 * finished-job figures, the executor registry, each a few plain commands, and the runs in
 * progress by executor (lua/dashboard-executor-runs.lua, a read-only script: it reads each leased
 * job's executor in the same call). Every key it reads comes from ./keys.ts; callers outside src/redis/ know no
 * key. It shares its shard's QueueStore (client and keys); the queue's layout, which every read
 * checks first, is read by {@link readLayout} (./schema.ts).
 */
import type { Redis } from 'ioredis';
import { ATTEMPTS_KEPT, attemptsOf } from './attempts.js';
import { serverTime } from './connection.js';
import { type GroupState, readGroupStates } from './group-state.js';
import { decodeJob, decodeJobObject, type Job } from './job-codec.js';
import { leaseJobId, type QueueKeys } from './keys.js';
import { execChecked } from './pipeline.js';
import type { QueueStore } from './queue-store.js';
import { GROUP_DUE_MARK } from './wire.js';

/** A final state: its jobs are in a finished set. */
export type FinishedState = 'success' | 'failed' | 'cancelled';

const FINISHED: readonly FinishedState[] = ['success', 'failed', 'cancelled'];

/** Most job hashes one pipelined read asks for. */
const READ_BATCH = 200;

/** An executor's registry entry: its id and the info its heartbeat stored (host, pid, started, concurrency, running). */
export interface WorkerEntry {
  id: string;
  info: Record<string, unknown>;
}

/** A run in progress. */
export interface ExecutorRun {
  id: string;
  /** The executor that holds it. */
  worker: string;
  state: string;
  group: string;
  /** The packed description (task, ...). */
  d: Buffer;
  started?: number;
}

const text = (b: Buffer | null | undefined) => (b ? b.toString() : '');

/**
 * One queue shard's reads.
 * @example
 * ```ts
 * const reads = new JobReadStore(new QueueStore(client, 'mail', { maxEvents: 0 }));
 * const job = await reads.job('lx3k0001abcdef.0');
 * ```
 */
export class JobReadStore {
  constructor(readonly store: QueueStore) {}

  private get client(): Redis {
    return this.store.client;
  }

  private get keys(): QueueKeys {
    return this.store.keys;
  }

  /** The Redis server's clock, ms (the clock leases, registry entries and finished times are in). */
  async serverTime(): Promise<number> {
    return serverTime(this.client);
  }

  /**
   * Job `id` with its attempts, or null when there is none or it is a periodic occurrence staged
   * ahead (`planned`: not submitted yet).
   */
  async job(id: string): Promise<Job | null> {
    const [flat, entries] = await execChecked(
      this.client
        .pipeline()
        .callBuffer('HGETALL', this.keys.job(id))
        .lrangeBuffer(this.keys.attempts(id), 0, ATTEMPTS_KEPT - 1),
    );
    if (!(flat as Buffer[]).length) return null;
    const job = decodeJob(id, flat as Buffer[]);
    if ((job.state as string) === 'planned') return null;
    job.attempts = attemptsOf(job, entries as Buffer[]);
    return job;
  }

  /** The jobs of `ids`, in their order (null: no hash), read a batch of pipelined reads at a time. */
  async jobs(ids: readonly string[]): Promise<Array<Job | null>> {
    const out: Array<Job | null> = [];
    for (let i = 0; i < ids.length; i += READ_BATCH) {
      const slice = ids.slice(i, i + READ_BATCH);
      const pipe = this.client.pipeline();
      for (const id of slice) pipe.hgetallBuffer(this.keys.job(id));
      for (const [k, obj] of (await execChecked(pipe)).entries()) {
        out.push(decodeJobObject(slice[k], obj as Record<string, Buffer>));
      }
    }
    return out;
  }

  /** Job `id`'s log lines, oldest first. */
  async logs(id: string): Promise<string[]> {
    return this.client.lrange(this.keys.logs(id), 0, -1);
  }

  /** The ids of the jobs finished in `state`, newest first: the first `limit`, or all (`limit` absent). */
  async finishedIds(state: FinishedState, limit?: number): Promise<string[]> {
    return this.client.zrevrange(this.keys.done(state), 0, limit === undefined ? -1 : limit - 1);
  }

  /** The ids of `count` jobs waiting for children from rank `from`, in submit order (their index). */
  async waitingChildrenIds(from: number, count: number): Promise<string[]> {
    return this.client.zrange(this.keys.waitingChildren, from, from + count - 1);
  }

  /** The ids of the jobs holding a lease (scheduled or running), in lease expiry order. */
  async leasedIds(): Promise<string[]> {
    const leased = await this.client.zrange(this.keys.leases, 0, -1);
    return leased.map(leaseJobId).filter((id) => id !== null);
  }

  /** The ids of the jobs with a due time (stuck and delayed), in due order; the groups parked at their rate are left out. */
  async dueIds(): Promise<string[]> {
    return (await this.client.zrange(this.keys.delayed, 0, -1)).filter((id) => !id.startsWith(GROUP_DUE_MARK));
  }

  /**
   * The first `limit` ids of each of group `group`'s lists, in take order: the preferred list
   * (released and due stuck jobs), then high, then low priority.
   */
  async groupHeads(group: string, limit: number): Promise<string[]> {
    const [r, h, l] = await Promise.all(
      (['r', 'h', 'l'] as const).map((list) => this.client.lrange(this.keys.groupList(group, list), 0, limit - 1)),
    );
    return [...r.reverse(), ...h.reverse(), ...l.reverse()];
  }

  /** Every group the shard keeps a state for, with it. */
  async groupStates(): Promise<Map<string, GroupState>> {
    return readGroupStates(this.client, this.keys.groups);
  }

  /** The shard's job counts per state, as its `counts` hash holds them. */
  async counts(): Promise<Record<string, string>> {
    return this.client.hgetall(this.keys.counts);
  }

  /** The jobs that finished in each final state at or after `since` (ms). */
  async finishedSince(since: number): Promise<Record<FinishedState, number>> {
    const counted = await Promise.all(FINISHED.map((s) => this.client.zcount(this.keys.done(s), since, '+inf')));
    return { success: counted[0], failed: counted[1], cancelled: counted[2] };
  }

  /**
   * The submit-to-start waits (ms; from the due time for a delayed job) of at most `most` of the
   * jobs that succeeded at or after `since`, the newest first.
   */
  async successWaits(since: number, most: number): Promise<number[]> {
    const sample = await this.client.zrevrangebyscore(this.keys.done('success'), '+inf', since, 'LIMIT', 0, most);
    const pipe = this.client.pipeline();
    for (const id of sample) pipe.hmget(this.keys.job(id), 'submitted', 'started', 'runAt');
    const waits: number[] = [];
    for (const v of await execChecked(pipe)) {
      const [sub, start, runAt] = v as (string | null)[];
      if (sub && start) waits.push(Number(start) - Math.max(Number(sub), Number(runAt ?? 0)));
    }
    return waits;
  }

  /**
   * dashboard-executor-runs.lua: up to `max` runs in progress (the leases of the earliest expiry
   * first), each with the executor that holds it; how many there are in all; the server time (ms).
   */
  async runsInProgress(max: number): Promise<{ now: number; total: number; runs: ExecutorRun[] }> {
    const k = this.keys;
    const [now, total, flat] = await this.store.scripts.fcall<[number, number, Buffer[]]>(
      'dashboard-executor-runs',
      k.leases,
      [k.prefix, max],
      true,
    );
    const runs: ExecutorRun[] = [];
    for (let i = 0; i + 6 <= flat.length; i += 6) {
      const started = text(flat[i + 5]);
      runs.push({
        id: text(flat[i]),
        worker: text(flat[i + 1]),
        state: text(flat[i + 2]),
        group: text(flat[i + 3]),
        d: flat[i + 4],
        started: started ? Number(started) : undefined,
      });
    }
    return { now: Number(now), total: Number(total), runs };
  }

  /** The executors whose registry entry has not expired at `now` (server clock, ms), but those of `skip`. */
  async workers(now: number, skip: ReadonlySet<string> = new Set()): Promise<WorkerEntry[]> {
    const ids = (await this.client.zrangebyscore(this.keys.workers, now, '+inf')).filter((id) => !skip.has(id));
    if (ids.length === 0) return [];
    const infos = await this.client.mget(ids.map((id) => this.keys.worker(id)));
    const out: WorkerEntry[] = [];
    ids.forEach((id, i) => {
      const raw = infos[i];
      if (raw) out.push({ id, info: JSON.parse(raw) as Record<string, unknown> });
    });
    return out;
  }
}

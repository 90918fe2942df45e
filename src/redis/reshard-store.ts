/**
 * A reshard's storage contract (src/queue/reshard.ts): one method per reshard script of a shard
 * (lua/reshard-*.lua), named arguments in, a decoded reply out, and the plain reads a reshard
 * makes of a shard (its group lists and sets, job records, registry, leases) and writes of the
 * queue's layout ({@link ReshardLayout}). It shares its shard's QueueStore (client, keys, script
 * runner); that store is made with `resharding`, so that it works while the queue's layout names
 * a reshard under way. Every key a reshard touches is named here, from ./keys.ts.
 */

import type { Redis } from 'ioredis';
import { UnexpectedReplyError } from '../errors.js';
import { serverTime } from './connection.js';
import { type GroupState, readGroupStates } from './group-state.js';
import { type GroupList, leaseJobId, type QueueKeys, queueKeys } from './keys.js';
import { execChecked } from './pipeline.js';
import type { QueueStore } from './queue-store.js';
import { LAYOUT, type Layout, readLayout } from './schema.js';
import { packStrings, type StringValue } from './string-array.js';
import { GROUP_DUE_MARK, RESHARD_OUT } from './wire.js';

export type { GroupList } from './keys.js';

/** Most commands one pipelined read of a reshard sends. */
const PIPELINE = 1000;
/** Jobs whose copies one pipeline reads (three reads a job). */
const COPY_READS = Math.floor(PIPELINE / 3);

/** A set jobs are taken out of: due times (delayed and stuck jobs), or a finished state's. */
export type JobSet = 'delayed' | 'waiting-children' | 'done:success' | 'done:failed' | 'done:cancelled';

/** The sets {@link ReshardStore.outSet} takes from, in the order a reshard walks them. */
export const JOB_SETS: readonly JobSet[] = ['delayed', 'waiting-children', 'done:success', 'done:failed', 'done:cancelled'];

/**
 * A job taken out of a shard and not forgotten there yet: its destination shard, and where it
 * was (`:h`, `:l`, `:r`: its group's list; or a set, with its score there, else '').
 */
export interface MovingJob {
  id: string;
  dest: number;
  place: string;
  score: string;
}

/** The answer of a take-out: the jobs taken, or those taken before and not forgotten (nothing taken), or a list changed (nothing taken). */
export interface OutStep {
  status: keyof typeof RESHARD_OUT;
  jobs: MovingJob[];
}

/**
 * The jobs to pop from the tail of a group list, in the order they are popped (the next to run
 * first), each with its destination shard (null: it stays, set aside and put back at the tail);
 * `close`: put back the jobs set aside after this step (no job further up the list leaves).
 */
export interface ListStep {
  group: string;
  list: GroupList;
  close: boolean;
  jobs: ReadonlyArray<{ id: string; dest: number | null }>;
}

/** A job as a destination shard gets it: its hash (field, value, ...), log lines and attempts as read from its shard. */
export interface JobCopy {
  id: string;
  place: string;
  score: string;
  fields: Buffer[];
  logs: Buffer[];
  /** Its earlier attempts, newest first (see lua/includes/attempts). */
  attempts: Buffer[];
}

type RawOut = Array<string>;

const OUT_STATUS = new Map<string, keyof typeof RESHARD_OUT>(
  Object.entries(RESHARD_OUT).map(([status, code]) => [code, status as keyof typeof RESHARD_OUT]),
);

function decodeOut(raw: RawOut): OutStep {
  const status = OUT_STATUS.get(raw[0]);
  if (!status) throw new UnexpectedReplyError(`reshard-out answered an unknown code: ${raw[0]}`);
  const jobs: MovingJob[] = [];
  for (let i = 1; i + 3 < raw.length; i += 4) {
    jobs.push({ id: raw[i], dest: Number(raw[i + 1]), place: raw[i + 2], score: raw[i + 3] });
  }
  return { status, jobs };
}

/**
 * One shard's reshard script calls.
 * @example
 * const shard = new ReshardStore(new QueueStore(client, 'mail', { maxEvents: 0, shard: 0, shards: 4, resharding: true }));
 * const { jobs } = await shard.pending();
 */
export class ReshardStore {
  constructor(readonly store: QueueStore) {}

  get keys(): QueueKeys {
    return this.store.keys;
  }

  private get client(): Redis {
    return this.store.client;
  }

  /** The data format version the shard records (its `meta` hash), or null when it records none. */
  async schema(): Promise<string | null> {
    return this.client.hget(this.keys.meta, 'schema');
  }

  /** The executors whose registry entry has not expired at `now` (server clock, ms). */
  async liveExecutors(now: number): Promise<string[]> {
    return this.client.zrangebyscore(this.keys.workers, `(${now}`, '+inf');
  }

  /** The jobs whose lease has not expired at `now` (runs in progress), and whether some lease has expired. */
  async leases(now: number): Promise<{ live: string[]; expired: boolean }> {
    const [live, expired] = await Promise.all([
      this.client.zrangebyscore(this.keys.leases, `(${now}`, '+inf'),
      this.client.zrangebyscore(this.keys.leases, '-inf', now),
    ]);
    return {
      live: live.map(leaseJobId).filter((id) => id !== null),
      expired: expired.some((m) => leaseJobId(m) !== null),
    };
  }

  /** Up to 20 batches of the shard not completed yet (docs/jobs.md#batches): a reshard moves none. */
  async openBatches(): Promise<string[]> {
    const ids = await this.client.zrange(this.keys.batches, 0, 19);
    if (ids.length === 0) return [];
    const pipe = this.client.pipeline();
    for (const id of ids) pipe.exists(this.keys.batch(id));
    const found = (await pipe.exec()) ?? [];
    // (a batch expired before it completed is no longer open)
    return ids.filter((_, i) => found[i]?.[1] === 1);
  }

  /** Every group the shard keeps a state for, with it. */
  async groupStates(): Promise<Map<string, GroupState>> {
    return readGroupStates(this.client, this.keys.groups);
  }

  /** Ids `start` to `stop` (LRANGE indexes: negative from the tail) of group `group`'s list `list`. */
  async listRange(group: string, list: GroupList, start: number, stop: number): Promise<string[]> {
    return this.client.lrange(this.keys.groupList(group, list), start, stop);
  }

  /** {@link listRange} of each of `lists`, pipelined. */
  async listRanges(lists: ReadonlyArray<{ group: string; list: GroupList }>, start: number, stop: number): Promise<string[][]> {
    const out: string[][] = [];
    for (let i = 0; i < lists.length; i += PIPELINE) {
      const pipe = this.client.pipeline();
      for (const l of lists.slice(i, i + PIPELINE)) pipe.lrange(this.keys.groupList(l.group, l.list), start, stop);
      for (const ids of await execChecked(pipe)) out.push(ids as string[]);
    }
    return out;
  }

  /**
   * Members `start` to `stop` of set `set`, in score order: how many there are (`members`) and the
   * job ids among them (`ids`; the set of due times also holds groups parked at their rate).
   */
  async setRange(set: JobSet, start: number, stop: number): Promise<{ members: number; ids: string[] }> {
    const members = await this.client.zrange(this.setKey(set), start, stop);
    return { members: members.length, ids: members.filter((m) => !m.startsWith(GROUP_DUE_MARK)) };
  }

  private setKey(set: JobSet): string {
    if (set === 'waiting-children') return this.keys.waitingChildren;
    return set === 'delayed'
      ? this.keys.delayed
      : this.keys.done(set.slice('done:'.length) as 'success' | 'failed' | 'cancelled');
  }

  /** Whether a job of each of `ids` is here. */
  async exist(ids: readonly string[]): Promise<boolean[]> {
    const out: boolean[] = [];
    for (let i = 0; i < ids.length; i += PIPELINE) {
      const pipe = this.client.pipeline();
      for (const id of ids.slice(i, i + PIPELINE)) pipe.exists(this.keys.job(id));
      for (const n of await execChecked(pipe)) out.push(n === 1);
    }
    return out;
  }

  /**
   * The fields of each job of `ids` that say where it goes: its periodic task (`tracker`), its
   * group, and its fan-out child count (`ct`, a fan-out parent's); all null when there is no job.
   */
  async origins(ids: readonly string[]): Promise<Array<{ tracker: string | null; group: string | null; ct: string | null }>> {
    const out: Array<{ tracker: string | null; group: string | null; ct: string | null }> = [];
    for (let i = 0; i < ids.length; i += PIPELINE) {
      const pipe = this.client.pipeline();
      for (const id of ids.slice(i, i + PIPELINE)) pipe.hmget(this.keys.job(id), 'tracker', 'group', 'ct');
      for (const rec of await execChecked(pipe)) {
        const [tracker, group, ct] = rec as Array<string | null>;
        out.push({ tracker, group, ct });
      }
    }
    return out;
  }

  /** Whether job `id` is here and a fan-out parent (has a child count). */
  async isFanOutParent(id: string): Promise<boolean> {
    return (await this.client.hexists(this.keys.job(id), 'ct')) === 1;
  }

  /** Group `group`'s rate log: [member, score, ...]. */
  async rateLog(group: string): Promise<string[]> {
    return this.client.zrange(this.keys.rateLog(group), 0, -1, 'WITHSCORES');
  }

  /** Adds starts to group `group`'s rate log: [score, member, ...]. */
  async addRateLog(group: string, entries: readonly string[]): Promise<void> {
    if (entries.length > 0) await this.client.zadd(this.keys.rateLog(group), ...entries);
  }

  /** The hash (field, value, ...), log lines and attempts of each job of `ids`, as Buffers (an empty hash: no job). */
  async copies(ids: readonly string[]): Promise<Array<{ fields: Buffer[]; logs: Buffer[]; attempts: Buffer[] }>> {
    const out: Array<{ fields: Buffer[]; logs: Buffer[]; attempts: Buffer[] }> = [];
    for (let i = 0; i < ids.length; i += COPY_READS) {
      const part = ids.slice(i, i + COPY_READS);
      const pipe = this.client.pipeline();
      for (const id of part) {
        pipe.hgetallBuffer(this.keys.job(id));
        pipe.lrangeBuffer(this.keys.logs(id), 0, -1);
        pipe.lrangeBuffer(this.keys.attempts(id), 0, -1);
      }
      const read = await execChecked(pipe);
      part.forEach((_, k) => {
        const [hash, logs, attempts] = [read[3 * k], read[3 * k + 1], read[3 * k + 2]];
        const fields: Buffer[] = [];
        for (const [f, v] of Object.entries(hash as Record<string, Buffer>)) fields.push(Buffer.from(f), v);
        out.push({ fields, logs: logs as Buffer[], attempts: attempts as Buffer[] });
      });
    }
    return out;
  }

  /** reshard-out.lua: the jobs taken out and not forgotten yet. */
  async pending(): Promise<MovingJob[]> {
    return (await this.out('pending', '')).jobs;
  }

  /** reshard-out.lua: puts back at their lists' tails the jobs set aside by list steps not closed. */
  async close(): Promise<void> {
    await this.out('close', '');
  }

  /** reshard-out.lua: takes the leaving jobs of list steps out (each list at most once a call). */
  async outLists(steps: readonly ListStep[]): Promise<OutStep> {
    const f: StringValue[] = [];
    for (const s of steps) {
      f.push(s.group, s.list, s.close ? '1' : '0', String(s.jobs.length));
      for (const j of s.jobs) f.push(j.id, j.dest === null ? '' : String(j.dest));
    }
    return this.out('lists', packStrings(f, Infinity, 'steps'));
  }

  /** reshard-out.lua: takes jobs of set `set` out, each to its destination shard. */
  async outSet(set: JobSet, jobs: ReadonlyArray<{ id: string; dest: number }>): Promise<OutStep> {
    const f: StringValue[] = [];
    for (const j of jobs) f.push(j.id, String(j.dest));
    return this.out(set, packStrings(f, Infinity, 'jobs'));
  }

  private async out(what: string, packed: Buffer | string): Promise<OutStep> {
    const raw = await this.store.scripts.fcall<RawOut>('reshard-out', this.keys.counts, [this.keys.prefix, what, packed]);
    return decodeOut(raw);
  }

  /**
   * reshard-in.lua: puts jobs copied from another shard in (a job already here from an earlier
   * step is not added again). `held`: ids another job holds here (nothing was written then).
   */
  async in(jobs: readonly JobCopy[]): Promise<{ added: number; held: string[] }> {
    const f: StringValue[] = [];
    for (const j of jobs) {
      f.push(j.id, j.place, j.score, String(j.fields.length / 2), ...j.fields, String(j.logs.length), ...j.logs);
      f.push(String(j.attempts.length), ...j.attempts);
    }
    const [added, held] = await this.store.scripts.fcall<[number, string[]]>('reshard-in', this.keys.counts, [
      this.keys.prefix,
      packStrings(f, Infinity, 'jobs'),
    ]);
    return { added: Number(added), held };
  }

  /**
   * reshard-forget.lua: deletes the jobs taken out (`ids`: all of them, in their order) once they
   * are copied. Null when the shard held other jobs as taken out (nothing was done).
   */
  async forget(ids: readonly string[]): Promise<number | null> {
    const n = await this.store.scripts.fcall<number>('reshard-forget', this.keys.counts, [
      this.keys.prefix,
      packStrings([...ids], Infinity, 'ids'),
    ]);
    return Number(n) < 0 ? null : Number(n);
  }

  /** reshard-drop.lua: deletes the shard, holding no job any more; '' when done, else what it still holds. */
  async drop(): Promise<string> {
    return String(await this.store.scripts.fcall<string>('reshard-drop', this.keys.meta, [this.keys.prefix]));
  }
}

/**
 * The queue's layout as a reshard reads and writes it (the unsharded queue's `meta` hash, see
 * LAYOUT in ./schema.ts): the count it has, the count a reshard goes to, the step it is at.
 * @example
 * const layout = new ReshardLayout(client, 'mail');
 * const { shards, reshard } = await layout.read();
 */
export class ReshardLayout {
  private readonly key: string;

  constructor(
    private readonly client: Redis,
    queue: string,
  ) {
    this.key = queueKeys(queue).meta;
  }

  /** The layout as recorded. */
  read(): Promise<Layout> {
    return readLayout(this.client, this.key);
  }

  /** The Redis server's clock, ms. */
  async serverTime(): Promise<number> {
    return serverTime(this.client);
  }

  /**
   * Records a reshard to `to` shards as under way unless one is already (HSETNX: of two begun at
   * once, one starts and the other goes on with it). Resolves the count of the reshard under way.
   */
  async begin(to: number): Promise<number> {
    if (await this.client.hsetnx(this.key, LAYOUT.reshard, String(to))) return to;
    return Number(await this.client.hget(this.key, LAYOUT.reshard));
  }

  /** Records the step the reshard under way is at. */
  async step(step: string): Promise<void> {
    await this.client.hset(this.key, LAYOUT.reshardStep, step);
  }

  /** Records the new count `to` and that no reshard is under way, at once. */
  async finish(to: number): Promise<void> {
    await execChecked(
      this.client.multi().hset(this.key, LAYOUT.shards, String(to)).hdel(this.key, LAYOUT.reshard, LAYOUT.reshardStep),
    );
  }
}

/**
 * A reshard's storage contract (src/queue/reshard.ts): one method per reshard script of a shard
 * (lua/reshard-*.lua), named arguments in, a decoded reply out. It shares its shard's QueueStore
 * (client, schema check, function calls); that store is made with `resharding`, so that it works
 * while the queue's layout names a reshard under way.
 */
import type { QueueKeys } from './keys.js';
import type { QueueStore } from './queue-store.js';
import { packStrings, type StringValue } from './string-array.js';
import { RESHARD_OUT } from './wire.js';

/** A group list: high priority, low priority, preferred (due stuck and released jobs). */
export type GroupList = 'h' | 'l' | 'r';

/** A set jobs are taken out of: due times (delayed and stuck jobs), or a finished state's. */
export type JobSet = 'delayed' | 'done:success' | 'done:failed' | 'done:cancelled';

/** The sets {@link ReshardStore.outSet} takes from, in the order a reshard walks them. */
export const JOB_SETS: readonly JobSet[] = ['delayed', 'done:success', 'done:failed', 'done:cancelled'];

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

/** A job as a destination shard gets it: its hash (field, value, ...) and log lines as read from its shard. */
export interface JobCopy {
  id: string;
  place: string;
  score: string;
  fields: Buffer[];
  logs: Buffer[];
}

type RawOut = Array<string>;

const OUT_STATUS = new Map<string, keyof typeof RESHARD_OUT>(
  Object.entries(RESHARD_OUT).map(([status, code]) => [code, status as keyof typeof RESHARD_OUT]),
);

function decodeOut(raw: RawOut): OutStep {
  const status = OUT_STATUS.get(raw[0]);
  if (!status) throw new Error(`reshard-out answered an unknown code: ${raw[0]}`);
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

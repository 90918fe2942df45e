/**
 * Changing a queue's shard count (`rota reshard`; the procedure is in docs/operations.md): a
 * drain-and-switch. With the queue's executors and producers stopped, every job that is not a
 * periodic run moves from its shard in the old layout to its shard in the new one (a job whose id
 * Rota made to the shard its id names, a fan-out child to its parent's, any other job to its
 * group's), keeping its state, its place (its group's list, in order; its due time; its finished
 * time) and its hash and logs; group settings go with their groups; then the layout records the
 * new count and the shards the new count does not have are deleted. Periodic tasks and their
 * runs stay in the home shard.
 *
 * Crash safety: each step is an atomic script on one shard. Jobs leave their shard into its
 * `moving` list (reshard-out.lua), are copied to their destinations (reshard-in.lua, which adds a
 * job once however often it is sent) and only then deleted at the source (reshard-forget.lua).
 * The layout names the reshard under way from its first write to its last (its `reshard` field,
 * which keeps every other client off the queue, and `reshardStep`), so a reshard killed at any
 * point is finished by running it again: it copies what `moving` holds first, then goes on.
 */
import type { Redis } from 'ioredis';
import { ReshardRefusedError, SchemaMismatchError } from '../errors.js';
import { checkOptions, func, type OptionsOf, whole } from '../options.js';
import { type ConnectionOption, checkConnection, connect } from '../redis/connection.js';
import type { GroupState } from '../redis/group-state.js';
import { checkQueueName } from '../redis/keys.js';
import { QueueStore } from '../redis/queue-store.js';
import {
  type GroupList,
  JOB_SETS,
  type JobCopy,
  type JobSet,
  type ListStep,
  type MovingJob,
  type OutStep,
  ReshardLayout,
  ReshardStore,
} from '../redis/reshard-store.js';
import { homeShard, MAX_SHARDS, shardNumbers, shardOfGroup, shardOfId, shardTag } from '../redis/shards.js';
import { SCHEMA_VERSION } from '../redis/wire.js';

/** Options of {@link reshard}. */
export const RESHARD_OPTIONS = {
  /** The shard count to go to: a whole number from 1 to 1024. */
  to: whole(1, MAX_SHARDS),
  /** Most jobs one step takes out of a shard (1 to 10,000; default 500): each step is one short script call. */
  batch: whole(1, 10_000).default(500),
  /** Called after each step that moved jobs, with the number moved so far. */
  onProgress: func<(moved: number) => void>().optional(),
};

/** Options of {@link reshard}. */
export type ReshardOptions = OptionsOf<typeof RESHARD_OPTIONS>;

/** What a reshard did. */
export interface ReshardReport {
  queue: string;
  /** The shard count the queue had. */
  from: number;
  /** The shard count it has now. */
  to: number;
  /** Jobs moved to another shard (by this call; a call that finished an earlier one counts its own). */
  moved: number;
  /** Groups whose settings (pause, limits, weight, rate) were copied to their new shard. */
  groups: number;
  /** Runs whose lease had expired (their executor died), ended as failed attempts before the move, as an executor's recovery would. */
  recovered: number;
  /** Shards deleted: those of the old count that the new one does not have. */
  dropped: number;
  /** Whether this call finished a reshard that an earlier call began (and was stopped). */
  resumed: boolean;
}

/** Most bytes of job hashes and logs one reshard-in call carries. */
const COPY_BYTES = 4 << 20;
/** The retry backoff base of runs recovered before the move: an executor's default (WorkerOptions.retryDelay). */
const RETRY_DELAY_MS = 1000;
/** The step a reshard is at once every job is moved (LAYOUT.reshardStep; absent: moving jobs). */
const TIDYING = 'tidying';
/** A fan-out child's id: its parent's id, '/', its index. */
const CHILD_ID = /^([\s\S]*)\/\d+$/;

/**
 * Changes the shard count of queue `queue` to `opts.to`: moves every job that is not a periodic
 * run to its shard in the new layout, copies group settings to their groups' new shards, records
 * the new count and deletes the shards it no longer has. Run it with the queue's executors and
 * producers stopped (schedulers may run); then start them with `shards: to`. Until it is done,
 * every other client refuses the queue with a ReshardInProgressError. Killed at any point, it
 * finishes when called again with the same `to`; no job is lost or doubled.
 * @throws {@link ValidationError} naming a bad option; nothing is written then.
 * @throws {@link ReshardRefusedError} while an executor is live or a run is in progress (`reason`
 * `executors`, `runs`), while a batch is not completed (`batches`), when two jobs of one id would meet in one shard (`ids`), or when another
 * reshard of the queue to another count is under way (`underway`); nothing is written then. With
 * `changed` when the queue changed under it (a producer or an executor still running): what it
 * moved stays moved, and it goes on when run again once they are stopped.
 * @example
 * ```ts
 * const report = await reshard('redis://127.0.0.1:6379', 'mail', { to: 4 });
 * // then start executors, producers and schedulers with shards: 4
 * ```
 */
export async function reshard(connection: ConnectionOption, queue: string, opts: ReshardOptions): Promise<ReshardReport> {
  checkQueueName(queue);
  const { to, batch, onProgress } = checkOptions(RESHARD_OPTIONS, opts);
  checkConnection(connection);
  const { client, owned } = connect(connection, { reuse: true });
  try {
    const { shards, reshard: underway, reshardStep: step } = await new ReshardLayout(client, queue).read();
    const from = shards ?? 1;
    if (underway !== null && underway !== to) throw underwayError(queue, from, underway);
    const r = new Resharder(client, queue, from, to, batch, onProgress);
    if (underway === null && from === to) return r.report;
    return await r.run(underway !== null, step === TIDYING);
  } finally {
    if (owned) {
      if (client.status === 'ready') await client.quit().catch(() => client.disconnect());
      else client.disconnect();
    }
  }
}

function underwayError(queue: string, from: number, to: number): ReshardRefusedError {
  return new ReshardRefusedError(
    queue,
    'underway',
    `a reshard from ${from} to ${to} shards is under way; run it again with --to ${to} to finish it (nothing was written)`,
  );
}

/** Whether a group has settings of its own (they go with it to its new shard). */
function hasSettings(g: GroupState): boolean {
  return g.paused === 1 || g.limit > 0 || g.weight !== 1 || g.rate > 0;
}

/** A few of `items`, for a message. */
function some(items: readonly string[]): string {
  return items.length <= 5 ? items.join(', ') : `${items.slice(0, 5).join(', ')}, ... (${items.length})`;
}

/** The index of the last job of `dests` that leaves (-1: none). */
function lastLeaving(dests: ReadonlyArray<number | null>): number {
  for (let i = dests.length - 1; i >= 0; i--) if (dests[i] !== null) return i;
  return -1;
}

const range = (from: number, to: number) => Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i);

/** One reshard of one queue from `from` to `to` shards. */
class Resharder {
  readonly report: ReshardReport;
  private readonly stores = new Map<string, ReshardStore>();
  /** Where the fan-out parents of caller-given ids go (by source shard and id; null: nowhere known). */
  private readonly parents = new Map<string, number | null>();
  private readonly layout: ReshardLayout;

  constructor(
    private readonly client: Redis,
    private readonly queue: string,
    private readonly from: number,
    private readonly to: number,
    private readonly batch: number,
    private readonly onProgress?: (moved: number) => void,
  ) {
    this.layout = new ReshardLayout(client, queue);
    this.report = { queue, from, to, moved: 0, groups: 0, recovered: 0, dropped: 0, resumed: false };
  }

  /** The store of shard `shard` of a layout of `shards` shards (one per shard, whatever layout names it). */
  private store(shard: number, shards: number): ReshardStore {
    const tag = shardTag(this.queue, shard, shards);
    let s = this.stores.get(tag);
    if (!s) {
      s = new ReshardStore(new QueueStore(this.client, this.queue, { maxEvents: 0, shard, shards, resharding: true }));
      this.stores.set(tag, s);
    }
    return s;
  }

  private old(shard: number): ReshardStore {
    return this.store(shard, this.from);
  }

  private new(shard: number): ReshardStore {
    return this.store(shard, this.to);
  }

  /** Whether shard `dest` of the new layout is shard `source` of the old one (the same keys). */
  private same(source: number, dest: number): boolean {
    return shardTag(this.queue, source, this.from) === shardTag(this.queue, dest, this.to);
  }

  /** The old layout's shards that hold jobs to move (the only one, the home, when it had one). */
  private get sources(): number[] {
    return range(0, this.from);
  }

  /** Every shard of the old layout, its home included. */
  private get oldShards(): number[] {
    return shardNumbers(this.from);
  }

  async run(resumed: boolean, tidying: boolean): Promise<ReshardReport> {
    this.report.resumed = resumed;
    await this.checkSchemas();
    const expired = await this.checkIdle();
    if (!resumed) {
      await this.checkIds();
      // (HSETNX: of two reshards begun at once, one starts and the other goes on with it)
      const to = await this.layout.begin(this.to);
      if (to !== this.to) throw underwayError(this.queue, this.from, to);
    }
    for (const s of expired) await this.recover(s);
    for (const s of this.sources) {
      await this.submitFannedOut(s);
      // (once tidying, settings moved away are lifted at their source: they are not copied again)
      if (!tidying) await this.copySettings(s);
      // (again when tidying: jobs that a producer left running added meanwhile move too)
      await this.moveShard(s);
    }
    if (!tidying) await this.layout.step(TIDYING);
    await this.tidy();
    await this.layout.finish(this.to);
    return this.report;
  }

  /** Refuses a shard, of either layout, that holds data of another schema (before anything is written). */
  private async checkSchemas(): Promise<void> {
    const stores = [...this.oldShards.map((s) => this.old(s)), ...shardNumbers(this.to).map((s) => this.new(s))];
    for (const store of stores) {
      const found = await store.schema();
      if (found !== null && found !== String(SCHEMA_VERSION)) {
        // (a reshard copies records as this build writes them: it wants its own schema exactly)
        throw new SchemaMismatchError(this.queue, found, SCHEMA_VERSION, Number(found) < SCHEMA_VERSION ? 'migrate' : 'upgrade');
      }
    }
  }

  /**
   * Refuses while an executor is live (its registry entry not expired, by the server's clock) or a
   * run is in progress (a lease not expired) in any shard of the old layout. Answers the shards
   * with expired leases: runs whose executor died, recovered before the move.
   */
  private async checkIdle(): Promise<number[]> {
    const now = await this.layout.serverTime();
    const executors = new Set<string>();
    const runs: string[] = [];
    const expired: number[] = [];
    for (const s of this.oldShards) {
      for (const id of await this.old(s).liveExecutors(now)) executors.add(id);
      const leases = await this.old(s).leases(now);
      runs.push(...leases.live);
      if (leases.expired) expired.push(s);
    }
    if (executors.size > 0) {
      throw new ReshardRefusedError(
        this.queue,
        'executors',
        `${executors.size} executor${executors.size === 1 ? ' is' : 's are'} live (${some([...executors])}): stop them, or scale them to 0, and run it again (nothing was written)`,
      );
    }
    const batches: string[] = [];
    for (const s of this.oldShards) batches.push(...(await this.old(s).openBatches()));
    if (batches.length > 0) {
      throw new ReshardRefusedError(
        this.queue,
        'batches',
        `batches are open or running (${some(batches)}): a reshard moves no batch. Let them complete, and run it again (nothing was written)`,
      );
    }
    if (runs.length > 0) {
      throw new ReshardRefusedError(
        this.queue,
        'runs',
        `${runs.length} run${runs.length === 1 ? ' is' : 's are'} in progress (jobs ${some(runs)}): let them end, or their leases expire, and run it again (nothing was written)`,
      );
    }
    return expired;
  }

  /** Ends the runs of expired leases in shard `s` as failed attempts (recover.lua), as an executor's recovery would. */
  private async recover(s: number): Promise<void> {
    for (;;) {
      const { recovered } = await this.old(s).store.recover({
        retryDelay: RETRY_DELAY_MS,
        maxLeases: 1000,
        keepSucceededAgeMs: -1,
        keepFailedAgeMs: -1,
        maxRemoved: 0,
      });
      this.report.recovered += recovered.length;
      if (recovered.length === 0) return;
    }
  }

  /**
   * Refuses when two jobs of one id would be in one shard: caller-given ids are unique only within
   * a shard (Rota-made ones everywhere), so jobs of groups in two shards may share one. Reads every
   * id of the shards that move jobs; writes nothing.
   */
  private async checkIds(): Promise<void> {
    const arriving = new Map<number, Map<string, number>>();
    const clashes: string[] = [];
    for (const s of this.sources) {
      for await (const ids of this.ids(s)) {
        const caller = ids.filter((id) => shardOfId(id, 2) === null);
        if (caller.length === 0) continue;
        const dests = await this.dests(s, caller);
        caller.forEach((id, i) => {
          const d = dests[i];
          if (d === null || d < 0) return;
          let there = arriving.get(d);
          if (!there) {
            there = new Map();
            arriving.set(d, there);
          }
          if (there.has(id)) clashes.push(id);
          else there.set(id, s);
        });
      }
    }
    for (const [d, ids] of arriving) {
      const list = [...ids.keys()];
      (await this.new(d).exist(list)).forEach((found, k) => {
        if (found) clashes.push(list[k]);
      });
    }
    if (clashes.length > 0) {
      throw new ReshardRefusedError(
        this.queue,
        'ids',
        `${clashes.length} job id${clashes.length === 1 ? ' is' : 's are'} held by two jobs that would be in one shard (${some(clashes)}): a caller-given id is unique within a shard only. Remove one of each (cancel, clean) with the current count, and run it again (nothing was written)`,
      );
    }
  }

  /** The ids of shard `s`'s jobs in its group lists and sets, a batch at a time (read only). */
  private async *ids(s: number): AsyncGenerator<string[]> {
    const src = this.old(s);
    const lists = await this.lists(s);
    for (let i = 0; i < lists.length; i += 200) {
      const part = lists.slice(i, i + 200);
      const heads = await src.listRanges(part, 0, this.batch - 1);
      for (const [k, ids] of heads.entries()) {
        yield ids;
        for (let at = this.batch; ids.length === this.batch; at += this.batch) {
          const more = await src.listRange(part[k].group, part[k].list, at, at + this.batch - 1);
          if (more.length === 0) break;
          yield more;
          if (more.length < this.batch) break;
        }
      }
    }
    for (const set of JOB_SETS) {
      for (let at = 0; ; at += this.batch) {
        const { members, ids } = await src.setRange(set, at, at + this.batch - 1);
        yield ids;
        if (members < this.batch) break;
      }
    }
  }

  /** The group lists of shard `s` that hold jobs, by its group records. */
  private async lists(s: number): Promise<Array<{ group: string; list: GroupList }>> {
    const out: Array<{ group: string; list: GroupList }> = [];
    for (const [group, g] of await this.old(s).groupStates()) {
      if (g.nr > 0) out.push({ group, list: 'r' });
      if (g.nh > 0) out.push({ group, list: 'h' });
      if (g.nl > 0) out.push({ group, list: 'l' });
    }
    return out;
  }

  /**
   * Where each job of `ids` in shard `s` of the old layout goes: a shard of the new layout; null
   * when that is where it is (it stays); -1 when no job has the id (a member left behind, dropped).
   * A job whose id Rota made goes to the shard its id names; a periodic run to the home shard; a
   * fan-out child to its parent's shard; any other job to its group's.
   */
  private async dests(s: number, ids: readonly string[]): Promise<Array<number | null>> {
    const out: Array<number | null> = new Array(ids.length);
    const lookups: number[] = [];
    ids.forEach((id, i) => {
      const made = this.to === 1 ? 0 : shardOfId(id, this.to);
      if (made === null) lookups.push(i);
      else out[i] = made;
    });
    if (lookups.length > 0) {
      const records = await this.old(s).origins(lookups.map((i) => ids[i]));
      for (const [k, { tracker, group }] of records.entries()) {
        out[lookups[k]] = await this.destOf(s, ids[lookups[k]], tracker, group);
      }
    }
    return out.map((d) => (d !== null && d >= 0 && this.same(s, d) ? null : d));
  }

  /** {@link dests} of a job with a caller-given id, from its `tracker` and `group` (both null: no job). */
  private async destOf(s: number, id: string, tracker: string | null, group: string | null): Promise<number> {
    if (tracker === null && group === null) return -1;
    if (tracker) return homeShard(this.to);
    const parent = CHILD_ID.exec(id)?.[1];
    const viaParent = parent === undefined ? null : await this.parentDest(s, parent);
    return viaParent ?? shardOfGroup(group ?? '', this.to);
  }

  /**
   * Where fan-out parent `parent` of a child in shard `s` goes: read from its hash in `s`, or,
   * when it has left `s` already, the shard of the new layout that holds it; null when it is no
   * fan-out parent (the id only looks like a child's) or is gone (removed).
   */
  private async parentDest(s: number, parent: string): Promise<number | null> {
    const key = `${s}\0${parent}`;
    if (this.parents.has(key)) return this.parents.get(key) ?? null;
    let dest: number | null = null;
    const made = this.to === 1 ? 0 : shardOfId(parent, this.to);
    if (made !== null) dest = made;
    else {
      const [{ tracker, group, ct: total }] = await this.old(s).origins([parent]);
      if (total !== null) dest = await this.destOf(s, parent, tracker, group);
      else if (tracker === null && group === null) {
        for (const d of shardNumbers(this.to)) {
          if (await this.new(d).isFanOutParent(parent)) {
            dest = d;
            break;
          }
        }
      }
    }
    this.parents.set(key, dest);
    return dest;
  }

  /** Submits the committed children of fan-out parents still waiting in shard `s` (fanout.lua), so that they move as jobs. */
  private async submitFannedOut(s: number): Promise<void> {
    while ((await this.old(s).store.fanout()).parent !== null) {
      // one chunk a call
    }
  }

  /** Copies the settings of shard `s`'s groups to their new shards (their rate logs first). */
  private async copySettings(s: number): Promise<void> {
    const src = this.old(s);
    for (const [group, g] of await src.groupStates()) {
      if (shardOfGroup(group, this.from) !== s || !hasSettings(g)) continue;
      const d = shardOfGroup(group, this.to);
      if (this.same(s, d)) continue;
      const dest = this.new(d);
      if (g.rate > 0) {
        // (members renamed: the destination numbers its own starts from 1)
        const log = await src.rateLog(group);
        const args: string[] = [];
        for (let i = 0; i < log.length; i += 2) args.push(log[i + 1], `~${log[i]}`);
        await dest.addRateLog(group, args);
      }
      await dest.store.group(group, {
        paused: g.paused === 1,
        limit: g.limit,
        weight: g.weight,
        rate: g.rate > 0 ? { max: g.rate, perMs: g.per } : null,
      });
      this.report.groups++;
    }
  }

  /** Moves every job of source shard `s` that goes elsewhere. */
  private async moveShard(s: number): Promise<void> {
    const src = this.old(s);
    const pending = await src.pending();
    if (pending.length > 0) await this.copy(s, pending);
    await src.close();
    const lists = await this.lists(s);
    let steps: ListStep[] = [];
    let stepped = 0;
    const flush = async () => {
      if (steps.length === 0) return;
      const out = steps;
      steps = [];
      stepped = 0;
      await this.takeOut(s, () => src.outLists(out));
    };
    for (let i = 0; i < lists.length; i += 200) {
      const part = lists.slice(i, i + 200);
      // (in the order they are popped: the tail first)
      const tails = (await src.listRanges(part, -this.batch, -1)).map((ids) => ids.reverse());
      const dests = await this.dests(s, tails.flat());
      let at = 0;
      for (const [k, tail] of tails.entries()) {
        const own = dests.slice(at, at + tail.length);
        at += tail.length;
        if (tail.length >= this.batch) {
          await this.moveLongList(s, part[k].group, part[k].list);
          continue;
        }
        const last = lastLeaving(own);
        if (last < 0) continue;
        steps.push({ ...part[k], close: true, jobs: tail.slice(0, last + 1).map((id, j) => ({ id, dest: own[j] })) });
        stepped += last + 1;
        if (stepped >= this.batch) await flush();
      }
    }
    await flush();
    for (const set of JOB_SETS) await this.moveSet(s, set);
  }

  /**
   * Moves the leaving jobs of a group list longer than a batch: read from its tail a batch at a
   * time; the jobs that stay below the next one that leaves are popped and set aside, and put
   * back at the tail when no job further up leaves.
   */
  private async moveLongList(s: number, group: string, list: GroupList): Promise<void> {
    const src = this.old(s);
    // jobs at the tail known to stay, not popped
    let below = 0;
    for (;;) {
      const chunk = (await src.listRange(group, list, -(below + this.batch), -(below + 1))).reverse();
      if (chunk.length === 0) break;
      const dests = await this.dests(s, chunk);
      const last = lastLeaving(dests);
      if (last < 0) {
        below += chunk.length;
        if (chunk.length < this.batch) break;
        continue;
      }
      while (below > 0) {
        const n = Math.min(this.batch, below);
        const stay = (await src.listRange(group, list, -n, -1)).reverse().map((id) => ({ id, dest: null }));
        await this.takeOut(s, () => src.outLists([{ group, list, close: false, jobs: stay }]));
        below -= n;
      }
      const jobs = chunk.slice(0, last + 1).map((id, j) => ({ id, dest: dests[j] }));
      await this.takeOut(s, () => src.outLists([{ group, list, close: false, jobs }]));
    }
    await src.close();
  }

  /** Moves the leaving jobs of set `set` of shard `s`, a batch at a time in score order. */
  private async moveSet(s: number, set: JobSet): Promise<void> {
    const src = this.old(s);
    // members known to stay, before the next batch
    let staying = 0;
    for (;;) {
      const { members, ids } = await src.setRange(set, staying, staying + this.batch - 1);
      if (members === 0) return;
      const dests = await this.dests(s, ids);
      const leaving: Array<{ id: string; dest: number }> = [];
      ids.forEach((id, i) => {
        const d = dests[i];
        if (d !== null) leaving.push({ id, dest: d });
      });
      if (leaving.length > 0) await this.takeOut(s, () => src.outSet(set, leaving));
      staying += members - leaving.length;
      if (members < this.batch) return;
    }
  }

  /** Runs a take-out step on shard `s` and copies what it took (first what an earlier step left, then the step again). */
  private async takeOut(s: number, step: () => Promise<OutStep>): Promise<void> {
    let out = await step();
    if (out.status === 'pending') {
      await this.copy(s, out.jobs);
      out = await step();
    }
    if (out.status !== 'taken') {
      throw new ReshardRefusedError(
        this.queue,
        'changed',
        'a group list changed while it was read: is a producer or an executor running? Stop it and run the command again (the jobs moved so far stay moved)',
      );
    }
    await this.copy(s, out.jobs);
  }

  /**
   * Copies the jobs shard `s` took out to their destinations (their hashes, logs and attempts, a few MiB a
   * call), then has `s` forget them.
   */
  private async copy(s: number, jobs: readonly MovingJob[]): Promise<void> {
    if (jobs.length === 0) return;
    const src = this.old(s);
    const byDest = new Map<number, JobCopy[]>();
    for (let i = 0; i < jobs.length; i += 200) {
      const part = jobs.slice(i, i + 200);
      const read = await src.copies(part.map((j) => j.id));
      part.forEach((j, k) => {
        const { fields, logs, attempts } = read[k];
        // (no hash: an earlier run of this reshard copied and forgot it; the forget below says so)
        if (fields.length === 0) return;
        let list = byDest.get(j.dest);
        if (!list) {
          list = [];
          byDest.set(j.dest, list);
        }
        list.push({ id: j.id, place: j.place, score: j.score, fields, logs, attempts });
      });
    }
    for (const [d, copies] of byDest) {
      let chunk: JobCopy[] = [];
      let bytes = 0;
      const send = async () => {
        if (chunk.length === 0) return;
        const { held } = await this.new(d).in(chunk);
        if (held.length > 0) {
          throw new ReshardRefusedError(
            this.queue,
            'ids',
            `shard ${d} holds other jobs of ids ${some(held)}; they stay where they were (in shard ${s}, taken out): remove the other jobs and run it again`,
          );
        }
        chunk = [];
        bytes = 0;
      };
      for (const c of copies) {
        const size = [...c.fields, ...c.logs, ...c.attempts].reduce((n, b) => n + b.length, 0);
        if (chunk.length > 0 && (bytes + size > COPY_BYTES || chunk.length >= this.batch)) await send();
        chunk.push(c);
        bytes += size;
      }
      await send();
    }
    if ((await src.forget(jobs.map((j) => j.id))) === null) {
      throw new ReshardRefusedError(this.queue, 'changed', 'another reshard of the queue is running: let it finish');
    }
    this.report.moved += jobs.length;
    this.onProgress?.(this.report.moved);
  }

  /**
   * After the move: the settings of groups that left a shard the new layout keeps are lifted there
   * (they live in their new shard); the shards the new layout does not have are deleted.
   */
  private async tidy(): Promise<void> {
    if (this.from > 1 && this.to > 1) {
      for (const s of range(0, Math.min(this.from, this.to))) {
        const store = this.old(s);
        for (const [group, g] of await store.groupStates()) {
          if (shardOfGroup(group, this.to) === s || !hasSettings(g)) continue;
          await store.store.group(group, { paused: false, limit: 0, weight: 1, rate: null });
        }
      }
    }
    const gone = this.from === 1 ? [] : range(this.to === 1 ? 0 : this.to, this.from);
    for (const s of gone) {
      const left = await this.old(s).drop();
      if (left !== '') {
        throw new ReshardRefusedError(
          this.queue,
          'changed',
          `shard ${s} still holds ${left} after the move: is a producer or an executor running? Stop it and run the command again (it moves what was added)`,
        );
      }
      this.report.dropped++;
    }
  }
}

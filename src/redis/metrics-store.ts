/**
 * The metrics' storage contract: the read-only scripts of the metrics' sweep
 * (lua/metrics-shard.lua, lua/metrics-autoscale.lua, lua/metrics-running.lua) and the HSCAN of
 * the group records, named arguments in, decoded replies out. Every read but the shard's
 * figures is one bounded step of a scan, so a sweep of a shard of any size is many short calls.
 * It reads a queue shard's keys, so a metrics store shares its shard's store: the same client
 * and the same schema check.
 */

import { decodeGroupState, type GroupState } from './group-state.js';
import type { QueueStore } from './queue-store.js';

/** What one call of lua/metrics-shard.lua reads of a shard. */
export interface ShardRead {
  /** Redis server time, ms. */
  now: number;
  /** Jobs per state, as the shard counts them. */
  counts: Record<string, number>;
  /** Entries of `delayed` due by now + the window: jobs, and the groups parked at their rate. */
  dueEntries: number;
  /** Live executors registered in the shard, with their info as stored (JSON). */
  executors: Array<{ id: string; info: Record<string, unknown> }>;
  /** Jobs that ended cancelled so far, per task (the shard's `tally`, lua/includes/tally.lua). */
  cancelled: Map<string, number>;
}

/** What one step of lua/metrics-autoscale.lua reads of a shard's groups. */
export interface AutoscaleStep {
  /** Cursor of the sweep to pass next ('0' when the sweep ended its round). */
  cursor: string;
  /** Fields of the `groups` hash the step read. */
  fields: number;
  /** Of the groups swept: waiting jobs of paused groups. */
  pausedWaiting: number;
  /** Of the groups swept: waiting jobs of groups at their concurrency limit or parked at their rate. */
  heldWaiting: number;
  /** Of the runnable groups swept: when their oldest waiting job could first start (ms; undefined: none). */
  oldestStart?: number;
  /** Of the groups swept: their entries in `delayed` (parked at their rate) due within the window. */
  parkedDue: number;
}

/** A step of a scan: where to go on from, and what it read. */
export interface ScanStep<T> {
  /** The cursor to pass next ('0': the round ended). */
  cursor: string;
  items: T;
}

/** The metrics' reads of one queue shard. */
export class MetricsStore {
  constructor(private readonly queue: QueueStore) {}

  /** metrics-shard.lua: the shard's counts, entries due within `dueWindowMs`, and at most `maxExecutors` live executors. */
  async shard(o: { maxExecutors: number; dueWindowMs: number }): Promise<ShardRead> {
    const k = this.queue.keys;
    const [now, counts, due, executors, tally] = await this.queue.scripts.fcall<[number, string[], number, string[], string[]]>(
      'metrics-shard',
      k.counts,
      [k.prefix, o.maxExecutors, o.dueWindowMs],
    );
    const c: Record<string, number> = {};
    for (let i = 0; i < counts.length; i += 2) c[counts[i]] = Number(counts[i + 1]);
    const ex: ShardRead['executors'] = [];
    for (let i = 0; i < executors.length; i += 2) {
      let info: Record<string, unknown> = {};
      try {
        info = JSON.parse(executors[i + 1]) as Record<string, unknown>;
      } catch {
        // an entry that is not JSON counts no slots
      }
      ex.push({ id: executors[i], info });
    }
    const cancelled = new Map<string, number>();
    for (let i = 0; i < tally.length; i += 2) {
      if (tally[i].startsWith('cancelled:')) cancelled.set(tally[i].slice('cancelled:'.length), Number(tally[i + 1]));
    }
    return { now: Number(now), counts: c, dueEntries: Math.max(0, Number(due)), executors: ex, cancelled };
  }

  /** metrics-autoscale.lua: one step (about `fields` fields) of the autoscaling sweep of the shard's groups. */
  async autoscaleStep(o: { cursor: string; fields: number; dueWindowMs: number }): Promise<AutoscaleStep> {
    const k = this.queue.keys;
    const [cursor, read, swept] = await this.queue.scripts.fcall<[string, number, [number, number, number, number]]>(
      'metrics-autoscale',
      k.groups,
      [k.prefix, o.cursor, o.fields, o.dueWindowMs],
    );
    return {
      cursor: String(cursor),
      fields: Number(read),
      pausedWaiting: Number(swept[0]),
      heldWaiting: Number(swept[1]),
      oldestStart: Number(swept[2]) > 0 ? Number(swept[2]) : undefined,
      parkedDue: Number(swept[3]),
    };
  }

  /**
   * One HSCAN (about `fields` fields) of the shard's group records, decoded. The field with the
   * empty name (the hash's pad) is left out.
   */
  async groupsStep(cursor: string, fields: number): Promise<ScanStep<Array<[string, GroupState]>>> {
    const [next, flat] = await this.queue.client.hscanBuffer(this.queue.keys.groups, cursor, 'COUNT', fields);
    const items: Array<[string, GroupState]> = [];
    for (let i = 0; i < flat.length; i += 2) {
      if (flat[i].length > 0) items.push([flat[i].toString(), decodeGroupState(flat[i + 1])]);
    }
    return { cursor: next.toString(), items };
  }

  /** metrics-running.lua: one step (about `members` leases) of the count of runs in progress per group. */
  async runningStep(cursor: string, members: number): Promise<ScanStep<Array<[string, number]>>> {
    const k = this.queue.keys;
    const [next, flat] = await this.queue.scripts.fcall<[string, Array<string | number>]>('metrics-running', k.leases, [
      k.prefix,
      cursor,
      members,
    ]);
    const items: Array<[string, number]> = [];
    for (let i = 0; i < flat.length; i += 2) items.push([String(flat[i]), Number(flat[i + 1])]);
    return { cursor: String(next), items };
  }
}

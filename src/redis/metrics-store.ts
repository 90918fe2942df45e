/**
 * The metrics' storage contract: the read-only script of the autoscaling gauges
 * (lua/metrics-autoscale.lua), named arguments in, a decoded reply out. It reads a queue shard's
 * keys, so a metrics store shares its shard's store: the same client and the same schema check.
 */

import type { QueueStore } from './queue-store.js';

/** What one call of lua/metrics-autoscale.lua reads of a shard. */
export interface AutoscaleRead {
  /** Redis server time, ms. */
  now: number;
  /** Jobs per state, as the shard counts them. */
  counts: Record<string, number>;
  /** Cursor of the groups sweep to pass next ('0' when the sweep ended its round). */
  cursor: string;
  /** Of the groups swept: waiting jobs of paused groups. */
  pausedWaiting: number;
  /** Of the groups swept: waiting jobs of groups at their concurrency limit or parked at their rate. */
  heldWaiting: number;
  /** Of the runnable groups swept: when their oldest waiting job could first start (ms; undefined: none). */
  oldestStart?: number;
  /** Jobs in `delayed` due by now + the window (delayed jobs, retries of stuck jobs; overdue ones included). */
  dueSoon: number;
  /** Live executors registered in the shard, with their info as stored (JSON). */
  executors: Array<{ id: string; info: Record<string, unknown> }>;
}

/** Options of a read. */
export interface AutoscaleOptions {
  /** Sweep the `groups` hash from this cursor ('0' starts a round). */
  cursor: string;
  /** Fields of the `groups` hash the call reads at most. */
  maxFields: number;
  /** Most executors listed. */
  maxExecutors: number;
  /** The due window, ms. */
  dueWindowMs: number;
}

/** The metrics' reads of one queue shard. */
export class MetricsStore {
  constructor(private readonly queue: QueueStore) {}

  /** metrics-autoscale.lua: the autoscaling gauges' read of the shard. */
  async autoscale(o: AutoscaleOptions): Promise<AutoscaleRead> {
    const k = this.queue.keys;
    const [now, counts, cursor, swept, due, executors] = await this.queue.scripts.fcall<
      [number, string[], string, [number, number, number], number, string[]]
    >('metrics-autoscale', k.counts, [k.prefix, o.cursor, o.maxFields, o.maxExecutors, o.dueWindowMs]);
    const c: Record<string, number> = {};
    for (let i = 0; i < counts.length; i += 2) c[counts[i]] = Number(counts[i + 1]);
    const ex: AutoscaleRead['executors'] = [];
    for (let i = 0; i < executors.length; i += 2) {
      let info: Record<string, unknown> = {};
      try {
        info = JSON.parse(executors[i + 1]) as Record<string, unknown>;
      } catch {
        // an entry that is not JSON counts no slots
      }
      ex.push({ id: executors[i], info });
    }
    return {
      now: Number(now),
      counts: c,
      cursor: String(cursor),
      pausedWaiting: Number(swept[0]),
      heldWaiting: Number(swept[1]),
      oldestStart: Number(swept[2]) > 0 ? Number(swept[2]) : undefined,
      dueSoon: Math.max(0, Number(due)),
      executors: ex,
    };
  }
}

/**
 * The Redis reads behind a metrics scrape, made at most once per interval and shared by every
 * scraper: a sweep reads each shard's figures (one script call), a bounded part of the
 * autoscaling sweep of its groups, and, when group labels are wanted, every group record and
 * run in progress, all in short steps (one HSCAN or ZSCAN of a few hundred entries each), so
 * neither Redis nor the process's event loop is held for long by a queue of any size.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { JOB_STATES, type JobState } from '../queue/job.js';
import type { GroupInfo } from '../queue/reader.js';
import { EMPTY_GROUP, type GroupState } from '../redis/group-state.js';
import type { MetricsStore } from '../redis/metrics-store.js';
import { shardOfGroup } from '../redis/shards.js';

/** Which groups get series of their own: none, the `top` deepest (most waiting jobs), or all. */
export type GroupLabels = 'none' | 'all' | { top: number };

/** Fields of a shard's `groups` hash the autoscaling sweep reads at most a sweep (a larger hash takes several sweeps a round). */
export const AUTOSCALE_SWEEP_FIELDS = 2000;
/** Fields of the `groups` hash one step reads (one HSCAN; for the autoscaling sweep, one script call). */
export const STEP_FIELDS = 250;
/** Members of `leases` one step of the runs' count reads (one script call). */
export const STEP_LEASES = 250;
/** Groups handled between two turns of the event loop when they are picked for their labels. */
const PICK_CHUNK = 2000;
/** Executors the shard read lists at most. */
const MAX_EXECUTORS = 10_000;
/** The window of `rota_queue_due_soon_jobs`, ms. */
export const DUE_WINDOW_MS = 60_000;

/** What the autoscaling gauges show of a queue, summed over its shards. */
export interface Autoscale {
  runnable: number;
  held: number;
  /** Seconds. */
  oldestWait: number;
  running: number;
  dueSoon: number;
  slots: number;
  busySlots: number;
}

/** What one sweep read of a queue. */
export interface Snapshot {
  counts: Record<JobState, number>;
  autoscale: Autoscale;
  /** The groups that get series, as {@link GroupLabels} picks them (none: empty). */
  groups: GroupInfo[];
  /** Jobs that ended cancelled so far, per task, summed over shards (a count that only grows). */
  cancelled: Map<string, number>;
}

/** The sums of a shard's autoscaling sweep of its groups. */
interface Swept {
  paused: number;
  held: number;
  /** ms; undefined: none. */
  oldestStart?: number;
}

export interface SweepOptions {
  /** One store per shard, in shard order. */
  stores: MetricsStore[];
  /** The queue's shard count (where a group's settings live). */
  shards: number;
  groups: GroupLabels;
  /** A sweep starts at most once per this many ms; a read within it gets the last sweep's snapshot. */
  intervalMs: number;
  /** Fields of a shard's hash the autoscaling sweep reads at most a sweep (default {@link AUTOSCALE_SWEEP_FIELDS}). */
  autoscaleFields?: number;
  /** Fields (and leases) a step reads (default {@link STEP_FIELDS}). */
  stepFields?: number;
  /** Monotonic clock, ms (default performance.now). */
  now?: () => number;
}

/**
 * The shared, cached sweep of a queue's metrics. {@link read} resolves the snapshot of the
 * sweep in flight, or of the last one while it started less than `intervalMs` ago, or starts a
 * sweep: concurrent scrapes and scrapes within the interval cost Redis nothing more.
 */
export class MetricsSweep {
  /** Sweeps started so far. */
  sweeps = 0;
  private current: Promise<Snapshot> | undefined;
  private inFlight = false;
  private startedAt = 0;
  private readonly now: () => number;
  private readonly autoscale: Array<{ cursor: string; round: Swept; last: Swept | undefined }>;

  constructor(private readonly opts: SweepOptions) {
    this.now = opts.now ?? (() => performance.now());
    this.autoscale = opts.stores.map(() => ({ cursor: '0', round: { paused: 0, held: 0 }, last: undefined }));
  }

  /**
   * The latest snapshot: shared with every other read in flight or within the interval. A sweep
   * that fails rejects every read that shares it, until the interval has passed.
   */
  read(): Promise<Snapshot> {
    if (this.current && (this.inFlight || this.now() - this.startedAt < this.opts.intervalMs)) return this.current;
    this.startedAt = this.now();
    this.sweeps++;
    this.inFlight = true;
    this.current = this.sweep().finally(() => {
      this.inFlight = false;
    });
    return this.current;
  }

  private async sweep(): Promise<Snapshot> {
    const [autoscale, counts, cancelled] = await this.readAutoscale();
    const labels = this.opts.groups;
    const groups = labels === 'none' ? [] : await pick(await this.readGroups(), labels);
    return { counts, autoscale, groups, cancelled };
  }

  /** The shards' figures and a bounded part of each shard's autoscaling sweep, shard after shard. */
  private async readAutoscale(): Promise<[Autoscale, Record<JobState, number>, Map<string, number>]> {
    const budget = this.opts.autoscaleFields ?? AUTOSCALE_SWEEP_FIELDS;
    const step = Math.min(budget, this.opts.stepFields ?? STEP_FIELDS);
    const out: Autoscale = { runnable: 0, held: 0, oldestWait: 0, running: 0, dueSoon: 0, slots: 0, busySlots: 0 };
    const counts = Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>;
    // (an executor registers in every shard it takes from: its slots count once)
    const executors = new Map<string, Record<string, unknown>>();
    const cancelled = new Map<string, number>();
    for (const [i, store] of this.opts.stores.entries()) {
      const shard = await store.shard({ maxExecutors: MAX_EXECUTORS, dueWindowMs: DUE_WINDOW_MS });
      for (const [task, n] of shard.cancelled) cancelled.set(task, (cancelled.get(task) ?? 0) + n);
      const sweep = this.autoscale[i];
      let read = 0;
      let parkedDue = 0;
      do {
        const r = await store.autoscaleStep({ cursor: sweep.cursor, fields: step, dueWindowMs: DUE_WINDOW_MS });
        read += Math.max(1, r.fields);
        parkedDue += r.parkedDue;
        const { round } = sweep;
        round.paused += r.pausedWaiting;
        round.held += r.heldWaiting;
        if (r.oldestStart !== undefined && (round.oldestStart === undefined || r.oldestStart < round.oldestStart))
          round.oldestStart = r.oldestStart;
        sweep.cursor = r.cursor;
        if (r.cursor === '0') {
          sweep.last = round;
          sweep.round = { paused: 0, held: 0 };
        }
      } while (sweep.cursor !== '0' && read < budget);
      // The group sums are the last whole round's (the round in progress until one ended).
      const groups = sweep.last ?? sweep.round;
      for (const s of JOB_STATES) counts[s] += shard.counts[s] ?? 0;
      out.runnable += Math.max(0, (shard.counts.waiting ?? 0) - groups.paused - groups.held);
      out.held += groups.held;
      if (groups.oldestStart !== undefined)
        out.oldestWait = Math.max(out.oldestWait, Math.max(0, shard.now - groups.oldestStart) / 1000);
      out.running += shard.counts.running ?? 0;
      // (the entries of the groups swept parked at their rate are no jobs)
      out.dueSoon += Math.max(0, shard.dueEntries - parkedDue);
      for (const e of shard.executors) executors.set(e.id, e.info);
    }
    for (const info of executors.values()) {
      out.slots += Number(info.concurrency) || 0;
      out.busySlots += Number(info.running) || 0;
    }
    return [out, counts, cancelled];
  }

  /**
   * Every group of every shard with its depth, runs and settings, step by step. A group lives in
   * its shard; its periodic runs (home shard) and fan-out children (their parent's shard) may be
   * elsewhere: their counts add up, its settings are its shard's.
   */
  private async readGroups(): Promise<Map<string, GroupInfo>> {
    const step = this.opts.stepFields ?? STEP_FIELDS;
    const merged = new Map<string, GroupInfo>();
    const add = (name: string, shard: number, g: GroupState): GroupInfo => {
      const info = groupInfo(name, g);
      const seen = merged.get(name);
      if (!seen) {
        merged.set(name, info);
        return info;
      }
      const own = shardOfGroup(name, this.opts.shards) === shard ? info : seen;
      const sum = { ...own, waiting: seen.waiting + info.waiting, running: seen.running, stuck: seen.stuck + info.stuck };
      merged.set(name, sum);
      return sum;
    };
    for (const [shard, store] of this.opts.stores.entries()) {
      // (an HSCAN may return a field twice while the hash is rehashed: each counts once a shard)
      const seen = new Set<string>();
      let cursor = '0';
      do {
        const r = await store.groupsStep(cursor, step);
        cursor = r.cursor;
        for (const [name, g] of r.items) {
          if (seen.has(name)) continue;
          seen.add(name);
          add(name, shard, g);
        }
      } while (cursor !== '0');
      // Runs in progress are counted from the leases: a group keeps its own count only while it
      // has a limit, and a group with runs but nothing waiting is not in the hash.
      cursor = '0';
      do {
        const r = await store.runningStep(cursor, this.opts.stepFields ?? STEP_LEASES);
        cursor = r.cursor;
        for (const [name, n] of r.items) (merged.get(name) ?? add(name, shard, EMPTY_GROUP)).running += n;
      } while (cursor !== '0');
    }
    return merged;
  }
}

/** A group's view from its record (its runs are counted apart). */
function groupInfo(group: string, g: GroupState): GroupInfo {
  return {
    group,
    // The preferred list holds released jobs (waiting) and due stuck jobs.
    waiting: g.nh + g.nl + Math.max(0, g.nr - g.stuck),
    running: 0,
    stuck: g.stuck,
    paused: g.paused === 1,
    limit: g.limit,
    weight: g.weight,
    rate: g.rate > 0 ? { max: g.rate, perMs: g.per } : null,
  };
}

/** Deeper first: more waiting jobs, then more running, then by name. */
function deeper(a: GroupInfo, b: GroupInfo): number {
  return b.waiting - a.waiting || b.running - a.running || (a.group < b.group ? -1 : a.group > b.group ? 1 : 0);
}

/**
 * The groups `labels` keeps, the deepest first: every group, or the `top` deepest (a heap of
 * `top`, fed a chunk at a time with a turn of the event loop between chunks).
 */
async function pick(groups: Map<string, GroupInfo>, labels: Exclude<GroupLabels, 'none'>): Promise<GroupInfo[]> {
  if (labels === 'all') return [...groups.values()];
  const n = labels.top;
  // A heap whose root is the shallowest group kept.
  const heap: GroupInfo[] = [];
  const below = (i: number, j: number) => deeper(heap[i], heap[j]) > 0;
  const swap = (i: number, j: number) => {
    [heap[i], heap[j]] = [heap[j], heap[i]];
  };
  const down = (from: number) => {
    for (let i = from; ; ) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && below(l, m)) m = l;
      if (r < heap.length && below(r, m)) m = r;
      if (m === i) return;
      swap(i, m);
      i = m;
    }
  };
  let handled = 0;
  for (const g of groups.values()) {
    if (heap.length < n) {
      heap.push(g);
      for (let i = heap.length - 1; i > 0 && below(i, (i - 1) >> 1); i = (i - 1) >> 1) swap(i, (i - 1) >> 1);
    } else if (deeper(g, heap[0]) < 0) {
      heap[0] = g;
      down(0);
    }
    if (++handled % PICK_CHUNK === 0) await nextTurn();
  }
  return heap.sort(deeper);
}

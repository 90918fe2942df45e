/**
 * The dashboard's reads of a sharded queue: each read is made on every shard's store (the home
 * shard's included), or on the shards a group's jobs are in, and merged into what one store would
 * answer. A queue of one shard has one store, and its reads pass through unchanged.
 */

import { type JobState, LIST_ORDER } from '../queue/job.js';
import type { DashboardStore, GroupRow, GroupsRead, JobRow, JobsQuery, Tick } from '../redis/dashboard-store.js';
import { shardNumbers, shardOfGroup, shardsOfGroup } from '../redis/shards.js';
import { mergeGroupStates } from './group-index.js';

/** A queue's shard stores, by shard number (the home shard last when there are several), and its shard count. */
export interface ShardStores {
  readonly stores: readonly DashboardStore[];
  readonly shards: number;
}

/**
 * The shard numbers of the stores a job list reads: every shard's, or for one group its own
 * shard's and the home shard's (where its periodic runs are), as Queue reads a group's jobs.
 */
export function storesOfGroup(q: ShardStores, group?: string): number[] {
  return group === undefined ? shardNumbers(q.shards) : shardsOfGroup(group, q.shards);
}

/**
 * One tick of the queue from its shards' ticks: the counts and finished jobs added up, the
 * executors listed once each (an executor may be registered in several shards), the newest events
 * of every shard (their ids together, so that it changes when any shard's does), the latest
 * server time, and the server figures of the tick that read them. The sweeps are each shard's
 * own (see GroupIndex): the merged tick holds none.
 */
export function mergeTicks(ticks: readonly Tick[]): Tick {
  if (ticks.length === 1) return ticks[0];
  const counts: Record<string, number> = {};
  const finished = { success: 0, failed: 0, cancelled: 0 };
  const executors = new Map<string, Tick['executors'][number]>();
  let live = 0;
  for (const t of ticks) {
    for (const [state, n] of Object.entries(t.counts)) counts[state] = (counts[state] ?? 0) + n;
    finished.success += t.finished.success;
    finished.failed += t.finished.failed;
    finished.cancelled += t.finished.cancelled;
    for (const e of t.executors) {
      const seen = executors.get(e.id);
      if (!seen || e.expiry > seen.expiry) executors.set(e.id, e);
    }
    live = Math.max(live, t.liveExecutors);
  }
  return {
    now: Math.max(...ticks.map((t) => t.now)),
    counts,
    finished,
    executors: [...executors.values()],
    liveExecutors: Math.max(live, executors.size),
    lastEvent: ticks.map((t) => t.lastEvent).join(' '),
    cursor: '',
    swept: [],
    oldestCursor: '',
    oldest: [],
    server: ticks.find((t) => t.server)?.server,
    // (the home shard's, last)
    layout: ticks[ticks.length - 1].layout,
    heldCursor: '',
    held: [],
  };
}

/** A groups page's read over the shards: merged, and each shard's rows (for the group index). */
export interface ShardedGroupsRead extends GroupsRead {
  /** Each shard's rows, by shard number (the same groups as `rows`). */
  byShard: GroupRow[][];
}

/**
 * The page's groups as they are now over every shard: a group's counts (waiting, running, stuck)
 * added up over the shards that hold it, its settings its own shard's; the runs in progress
 * added up over the shards.
 */
export async function readGroups(q: ShardStores, names: readonly string[]): Promise<ShardedGroupsRead> {
  const reads = await Promise.all(q.stores.map((s) => s.groups(names)));
  if (reads.length === 1) return { ...reads[0], byShard: [reads[0].rows] };
  const rows = names.map((name, k): GroupRow => {
    const parts = reads.map((r) => r.rows[k]);
    const oldest = parts.map((p) => p.oldest).filter((at) => at !== undefined);
    const parked = parts.map((p) => p.parkedUntil).filter((at) => at !== undefined);
    return {
      state: mergeGroupStates(
        parts.map((p) => p.state),
        shardOfGroup(name, q.shards),
      ),
      running: parts.reduce((n, p) => n + p.running, 0),
      oldest: oldest.length ? Math.min(...oldest) : undefined,
      // (the latest: each shard that holds its jobs keeps its own rate log)
      parkedUntil: parked.length ? Math.max(...parked) : undefined,
    };
  });
  const running = new Map<string, number>();
  for (const r of reads) {
    for (const [g, n] of r.running) running.set(g, (running.get(g) ?? 0) + n);
  }
  return {
    now: Math.max(...reads.map((r) => r.now)),
    rows,
    running,
    byShard: reads.map((r) => r.rows),
  };
}

/** A job list page to read: as {@link JobsQuery}, with `start` a page's place over the shards ({@link JobsPage.next}). */
export interface JobsPageQuery extends Omit<JobsQuery, 'start'> {
  /** Where the page starts: '' or '0' for the first page, else a page's `next`. */
  start: string;
}

/** A job list page over the shards. */
export interface JobsPage {
  listable: boolean;
  jobs: JobRow[];
  /** Where the next page starts: a candidate position, or one per shard joined by `.` (a sharded queue). */
  next: string;
  /** Candidates are left (the next page may hold more jobs). */
  more: boolean;
  /** Candidates looked at. */
  looked: number;
}

/** A candidate position the scripts give: a whole number, or `cursor-index-offset` (see JobsQuery.start). */
const POSITION = /^(\d{1,15}|\d{1,19}-\d{1,15}-\d{1,15})$/;

/** Each shard's candidate position from a page's `start` (every shard's first when it is not one of ours). */
function positions(start: string, n: number): string[] {
  const parts = start.split('.');
  if (parts.length !== n || !parts.every((p) => POSITION.test(p))) return new Array<string>(n).fill('0');
  return parts;
}

/** Whether `start` is the first page's. */
export function isFirstPage(start: string): boolean {
  return /^[0.-]*$/.test(start);
}

/**
 * A page of a job list over the shards: each shard's store reads a page from its own place (by
 * its own script), and the pages are merged in the list's order; the next page goes on in each
 * shard from the first job this page did not show. A shard whose read stopped at its bound of
 * candidates (a filter that matches few of its jobs) goes on from there on the next page, so its
 * later jobs may show on a page after jobs of other shards that sort after them.
 */
export async function readJobs(q: ShardStores, query: JobsPageQuery): Promise<JobsPage> {
  const start = positions(query.start, q.stores.length);
  const which = storesOfGroup(q, query.group);
  const reads = await Promise.all(which.map((i) => q.stores[i].jobs({ ...query, start: start[i] })));
  const looked = reads.reduce((n, r) => n + r.looked, 0);
  if (reads.length === 1) {
    const [r] = reads;
    return { listable: r.listable, jobs: r.jobs, next: String(r.next), more: r.more, looked };
  }
  if (!reads[0].listable) return { listable: false, jobs: [], next: query.start, more: false, looked: 0 };
  // (a k-way merge: each shard's jobs are shown in their order, so the next page goes on from the first one not shown)
  // (a state without a sort key, listed in take order, takes the shards in turn, as executors do)
  const key = LIST_ORDER[query.state as JobState] ?? (() => 0);
  const shown = reads.map(() => 0);
  const jobs: JobRow[] = [];
  while (jobs.length < query.limit) {
    let best = -1;
    for (let k = 0; k < reads.length; k++) {
      const job = reads[k].jobs[shown[k]];
      if (!job) continue;
      if (best < 0) best = k;
      else {
        const other = reads[best].jobs[shown[best]];
        const d = key(job) - key(other) || shown[k] - shown[best];
        if (d < 0) best = k;
      }
    }
    if (best < 0) break;
    jobs.push(reads[best].jobs[shown[best]]);
    shown[best]++;
  }
  const next = [...start];
  let more = false;
  reads.forEach((r, k) => {
    const left = r.jobs[shown[k]];
    next[which[k]] = left ? left.pos : r.next;
    more ||= Boolean(left) || r.more;
  });
  return { listable: true, jobs, next: next.join('.'), more, looked };
}

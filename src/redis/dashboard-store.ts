/**
 * The dashboard's storage contract: one method per read-only script of the dashboard
 * (lua/dashboard-*.lua), named arguments in, a decoded reply out. The scripts read a queue's keys,
 * so a dashboard store shares its queue's store: the same client and the same schema check.
 */

import { DashboardDetailStore } from './dashboard-detail-store.js';
import { decodeGroupState, type GroupState } from './group-state.js';
import { HistoryStore } from './history-store.js';
import type { JobState } from './job-codec.js';
import type { QueueKeys } from './keys.js';
import type { QueueStore } from './queue-store.js';

/** What one tick of the dashboard's shared reader reads of a queue. */
export interface Tick {
  /** Redis server time, ms. */
  now: number;
  /** Jobs per state, as the queue counts them (every state the counts hold, known or not). */
  counts: Record<string, number>;
  /** Jobs that finished after the `since` of the call, per final state. */
  finished: { success: number; failed: number; cancelled: number };
  /** Live executors (at most the number asked for): id, registry expiry (ms) and info as stored. */
  executors: Array<{ id: string; expiry: number; info: Record<string, unknown> }>;
  /** Live executors in all. */
  liveExecutors: number;
  /** Id of the newest events entry ('' when none): it changes when any job changes. */
  lastEvent: string;
  /** Cursor of the groups sweep to pass next ('0' when the sweep went round; '' when none ran). */
  cursor: string;
  /** Groups the sweep read this tick. */
  swept: Array<[string, GroupState]>;
  /** Cursor of the oldest-wait sweep to pass next ('0' when it went round; '' when none ran). */
  oldestCursor: string;
  /** Groups the oldest-wait sweep read this tick, with the submitted time of each one's oldest waiting job (ms), if any. */
  oldest: Array<[string, number | undefined]>;
  /** The server's memory (bytes) and commands per second, when asked for. */
  server?: { usedMemory: number; opsPerSec: number };
  /**
   * The `shards` and `reshard` fields of the shard's `meta` (null when absent): in the home shard
   * the queue's layout (see src/redis/schema.ts), which the reader checks every tick.
   */
  layout: { shards: number | null; reshard: number | null };
  /** When asked for: the history hashes (./history.ts) of the current minute (by the server's clock) and the one before. */
  history?: TickHistory;
  /** Cursor of the held sweep to pass next ('0' when it went round; '' when none ran). */
  heldCursor: string;
  /** Groups the held sweep met this tick: they hold delayed or finished jobs (lua/includes/heldScan.lua). */
  held: string[];
}

/** The history of a shard's current minute and of the one before, as a tick reads it. */
export interface TickHistory {
  /** The current minute (since the epoch). */
  minute: number;
  previous: Record<string, string>;
  current: Record<string, string>;
}

/** Options of a tick. */
export interface TickOptions {
  /** Count finished jobs after this time (ms); undefined counts none. */
  since?: number;
  /** Sweep the `groups` hash from this cursor ('0' starts a round); undefined sweeps nothing. */
  cursor?: string;
  /** Fields the sweep reads at most. */
  sweepCount: number;
  /** Sweep the groups' oldest waiting jobs from this cursor ('0' starts a round); undefined: none. */
  oldestCursor?: string;
  /** Groups the oldest-wait sweep reads at most. */
  oldestCount: number;
  /** Most executors listed. */
  maxExecutors: number;
  /** Also read the server's memory and ops/s. */
  server: boolean;
  /** Also read the history of the current minute and the one before. */
  history?: boolean;
  /** Sweep the groups holding delayed or finished jobs from this cursor ('0' starts a round); undefined: none. */
  heldCursor?: string;
  /** Members that sweep reads at most. */
  heldCount?: number;
}

/** A group of a groups page as it is now. */
export interface GroupRow {
  /** Its record; undefined when the `groups` hash no longer holds it. */
  state?: GroupState;
  /** Runs in progress (counted from the leases). */
  running: number;
  /** Submit time of its oldest waiting job (ms). */
  oldest?: number;
  /** When its rate limit parks it until (ms): it reached its rate and waits for its window to free. */
  parkedUntil?: number;
}

/** The groups page's read: its rows, and the runs in progress per group. */
export interface GroupsRead {
  now: number;
  rows: GroupRow[];
  /** Runs in progress of every group that has some (a group with runs and nothing waiting has no record). */
  running: Map<string, number>;
}

/** A job of a job list page: the hash fields the list shows, as stored. */
export interface JobRow {
  id: string;
  /** Its position among the candidates of the list (a page that starts there shows it first). */
  pos: string;
  state: string;
  group: string;
  /** The packed description (task, group, ..., args). */
  d: Buffer;
  submitted?: number;
  started?: number;
  finished?: number;
  retries: number;
  worker?: string;
  error?: string;
  /** When a delayed job becomes waiting (ms). */
  runAt?: number;
  /** When a stuck job may run again (ms). */
  due?: number;
  progress?: number;
}

/** A job list page's read. */
export interface JobsRead {
  /** False when jobs of this state cannot be listed (a state the dashboard does not know). */
  listable: boolean;
  jobs: JobRow[];
  /** Position of the candidate after the last one looked at: where the next page starts. */
  next: string;
  /** Candidates are left (the next page may hold more jobs). */
  more: boolean;
  /** Candidates looked at. */
  looked: number;
  /** Commands the call sent (its work: at most about twice `maxRead`, whatever the query). */
  calls: number;
}

/** Filter and page of a job list. */
export interface JobsQuery {
  state: JobState | string;
  group?: string;
  task?: string;
  /**
   * Position of the first candidate among the ids of the set or lists that hold the state ('' or
   * '0': the first page; a page's `next` for the page after it): a whole number, or for the
   * waiting jobs of every group an HSCAN cursor, an index and an offset (`cursor-index-offset`).
   * Any other text is the first page's.
   */
  start: string;
  limit: number;
  /** Most candidates looked at. */
  maxRead: number;
}

/**
 * The job hash fields a job list page reads per job, in the order dashboard-jobs.lua answers
 * them after the job's id (it is given them; it filters on the first three).
 */
const JOB_ROW_FIELDS = [
  'state',
  'group',
  'd',
  'submitted',
  'started',
  'finished',
  'retries',
  'worker',
  'error',
  'runAt',
  'due',
  'progress',
] as const;

const text = (b: Buffer | null | undefined) => (b ? b.toString() : '');
const optNumber = (b: Buffer | null | undefined) => (b?.length ? Number(b.toString()) : undefined);

/** The oldest-wait sweep's flat reply (group, ms or 0, ...) as pairs. */
function oldestOf(flat: Array<Buffer | number>): Array<[string, number | undefined]> {
  const out: Array<[string, number | undefined]> = [];
  for (let i = 0; i < flat.length; i += 2) {
    const at = Number(flat[i + 1]);
    out.push([flat[i].toString(), at > 0 ? at : undefined]);
  }
  return out;
}

/** The dashboard's script calls on one queue shard's store. */
export class DashboardStore {
  /** The shard's history reads. */
  readonly history: HistoryStore;
  /** The detail views' reads on the same shard (why a job waits, runs by executor, the server). */
  readonly detail: DashboardDetailStore;

  constructor(private readonly queue: QueueStore) {
    this.history = new HistoryStore(queue);
    this.detail = new DashboardDetailStore(queue);
  }

  /** The keys of the queue shard it reads. */
  get keys(): QueueKeys {
    return this.queue.keys;
  }

  /** dashboard-tick.lua: a tick of the shared reader. */
  async tick(o: TickOptions): Promise<Tick> {
    const k = this.queue.keys;
    const [
      now,
      counts,
      finished,
      executors,
      live,
      lastEvent,
      cursor,
      swept,
      server,
      oldestCursor,
      oldestFlat,
      layout,
      history,
      heldCursor,
      held,
    ] = await this.queue.scripts.fcall<
      [
        number,
        Buffer[],
        number[],
        Buffer[],
        number,
        Buffer,
        Buffer,
        Buffer[],
        Buffer[] | null,
        Buffer,
        Array<Buffer | number>,
        Array<Buffer | null>,
        [number, Buffer[], Buffer[]] | null,
        Buffer,
        Buffer[],
      ]
    >(
      'dashboard-tick',
      k.counts,
      [
        k.prefix,
        o.since ?? '',
        o.cursor ?? '',
        o.sweepCount,
        o.maxExecutors,
        o.server ? '1' : '0',
        o.oldestCursor ?? '',
        o.oldestCount,
        o.history ? '1' : '0',
        o.heldCursor ?? '',
        o.heldCount ?? 0,
      ],
      true,
    );
    const c: Record<string, number> = {};
    for (let i = 0; i < counts.length; i += 2) c[counts[i].toString()] = Number(counts[i + 1].toString());
    const ex: Tick['executors'] = [];
    for (let i = 0; i < executors.length; i += 3) {
      let info: Record<string, unknown> = {};
      try {
        info = JSON.parse(executors[i + 2].toString()) as Record<string, unknown>;
      } catch {
        // an entry that is not JSON shows with its id alone
      }
      ex.push({ id: executors[i].toString(), expiry: Number(executors[i + 1].toString()), info });
    }
    const groups: Tick['swept'] = [];
    for (let i = 0; i < swept.length; i += 2) {
      if (swept[i].length > 0) groups.push([swept[i].toString(), decodeGroupState(swept[i + 1])]);
    }
    return {
      now: Number(now),
      counts: c,
      finished: { success: Number(finished[0]), failed: Number(finished[1]), cancelled: Number(finished[2]) },
      executors: ex,
      liveExecutors: Number(live),
      lastEvent: text(lastEvent),
      cursor: text(cursor),
      swept: groups,
      oldestCursor: text(oldestCursor),
      oldest: oldestOf(oldestFlat),
      server: server ? { usedMemory: Number(server[0].toString()), opsPerSec: Number(server[1].toString()) } : undefined,
      layout: { shards: layout[0] ? Number(layout[0]) : null, reshard: layout[1] ? Number(layout[1]) : null },
      history: history
        ? { minute: Number(history[0]), previous: flatHash(history[1]), current: flatHash(history[2]) }
        : undefined,
      heldCursor: text(heldCursor),
      held: (held ?? []).map((b) => b.toString()),
    };
  }

  /** dashboard-groups.lua: the page's groups as they are now, and the runs in progress per group. */
  async groups(names: readonly string[]): Promise<GroupsRead> {
    const k = this.queue.keys;
    const [now, rows, runs] = await this.queue.scripts.fcall<
      [number, Array<[Buffer | null, number, number | null, number | null]>, Buffer[]]
    >('dashboard-groups', k.groups, [k.prefix, ...names], true);
    const running = new Map<string, number>();
    for (let i = 0; i < runs.length; i += 2) running.set(runs[i].toString(), Number(runs[i + 1]));
    return {
      now: Number(now),
      rows: rows.map(([record, running, oldest, parked]) => ({
        state: record ? decodeGroupState(record) : undefined,
        running: Number(running),
        oldest: oldest === null ? undefined : Number(oldest),
        parkedUntil: parked === null || parked === undefined ? undefined : Number(parked),
      })),
      running,
    };
  }

  /** dashboard-jobs.lua: a page of jobs of one state, optionally of one group and task. */
  async jobs(q: JobsQuery): Promise<JobsRead> {
    const k = this.queue.keys;
    const [listable, flat, next, left, looked, calls] = await this.queue.scripts.fcall<
      [number, Array<Buffer | number>, Buffer, number, number, number]
    >(
      'dashboard-jobs',
      k.counts,
      [k.prefix, q.state, q.group ?? '', q.task ?? '', q.start, q.limit, q.maxRead, ...JOB_ROW_FIELDS],
      true,
    );
    const jobs: JobRow[] = [];
    const width = JOB_ROW_FIELDS.length + 2;
    for (let i = 0; i + width <= flat.length; i += width) {
      const f = (name: (typeof JOB_ROW_FIELDS)[number]) => flat[i + 2 + JOB_ROW_FIELDS.indexOf(name)] as Buffer;
      jobs.push({
        id: text(flat[i] as Buffer),
        pos: text(flat[i + 1] as Buffer),
        state: text(f('state')),
        group: text(f('group')),
        d: f('d'),
        submitted: optNumber(f('submitted')),
        started: optNumber(f('started')),
        finished: optNumber(f('finished')),
        retries: optNumber(f('retries')) ?? 0,
        worker: text(f('worker')) || undefined,
        error: text(f('error')) || undefined,
        runAt: optNumber(f('runAt')),
        due: optNumber(f('due')),
        progress: optNumber(f('progress')),
      });
    }
    return {
      listable: listable === 1,
      jobs,
      next: text(next),
      more: left === 1,
      looked: Number(looked),
      calls: Number(calls),
    };
  }
}

/** A hash read as a flat list (field, value, ...). */
function flatHash(flat: Buffer[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < flat.length; i += 2) out[flat[i].toString()] = flat[i + 1].toString();
  return out;
}

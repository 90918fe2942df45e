/**
 * The dashboard's reads for its detail views, on one queue shard: why a waiting job waits
 * (lua/dashboard-job-wait.lua), the runs in progress by executor (./job-read-store.ts, which
 * `Queue.workers` shares), and the server's report (./server-store.ts). Named arguments in, a
 * decoded reply out.
 */
import { decodeGroupState, type GroupState } from './group-state.js';
import { type ExecutorRun, JobReadStore } from './job-read-store.js';
import type { QueueStore } from './queue-store.js';
import { type ServerReport, serverReport } from './server-store.js';

/** Where a waiting job stands in its group, and the group's state. */
export interface JobWait {
  /** Redis server time, ms. */
  now: number;
  /** The list that holds it: `r` (released or due, taken first), `h` (high), `l` (low); undefined: not found within the bound. */
  list?: 'r' | 'h' | 'l';
  /** Its place in that list: 1 is taken next. */
  place?: number;
  /** Lengths of the group's lists. */
  lengths: { r: number; h: number; l: number };
  /** The group's record (undefined: the groups hash holds none). */
  state?: GroupState;
  /** The group's runs in progress. */
  running: number;
  /** When its rate limit parks it until (ms). */
  parkedUntil?: number;
}

export type { ExecutorRun } from './job-read-store.js';

const text = (b: Buffer | null | undefined) => (b ? b.toString() : '');

/** The detail views' script calls on one queue shard's store. */
export class DashboardDetailStore {
  constructor(private readonly queue: QueueStore) {}

  /** dashboard-job-wait.lua: job `id` of group `group` in its group's lists (each looked at up to `maxLen` entries). */
  async jobWait(id: string, group: string, maxLen: number): Promise<JobWait> {
    const k = this.queue.keys;
    const [now, list, place, lengths, record, running, parked] = await this.queue.scripts.fcall<
      [number, Buffer, number, number[], Buffer | null, number, number | null]
    >('dashboard-job-wait', k.groups, [k.prefix, id, group, maxLen], true);
    const found = text(list);
    return {
      now: Number(now),
      list: found === 'r' || found === 'h' || found === 'l' ? found : undefined,
      place: found ? Number(place) : undefined,
      lengths: { r: Number(lengths[0]), h: Number(lengths[1]), l: Number(lengths[2]) },
      state: record ? decodeGroupState(record) : undefined,
      running: Number(running),
      parkedUntil: parked === null || parked === undefined ? undefined : Number(parked),
    };
  }

  /**
   * dashboard-held.lua: a step of the sweep of the groups holding delayed or finished jobs, from
   * `cursor` ('0' starts a round), about `count` members: the next cursor ('0': the round is over)
   * and the groups met.
   */
  async held(cursor: string, count: number): Promise<{ cursor: string; groups: string[] }> {
    const k = this.queue.keys;
    const [next, groups] = await this.queue.scripts.fcall<[Buffer, Buffer[]]>(
      'dashboard-held',
      k.delayed,
      [k.prefix, cursor, count],
      true,
    );
    return { cursor: text(next), groups: groups.map((g) => g.toString()) };
  }

  /** The report of the server this shard lives on (see {@link serverReport}). */
  server(slowEntries: number): Promise<ServerReport> {
    return serverReport(this.queue.client, slowEntries);
  }

  /** The runs in progress ({@link JobReadStore.runsInProgress}). */
  executorRuns(max: number): Promise<{ now: number; total: number; runs: ExecutorRun[] }> {
    return new JobReadStore(this.queue).runsInProgress(max);
  }
}

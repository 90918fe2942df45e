/**
 * Reads of a queue shard's history (see ./history.ts): its minute and day hashes, each range in
 * one pipeline; and its per-group minute hashes, summed within a bound of fields read.
 */
import { GROUP_MINUTES_KEPT } from './history.js';
import type { QueueKeys } from './keys.js';
import { execChecked } from './pipeline.js';
import type { QueueStore } from './queue-store.js';

/** Most hashes one read asks for (a day of minutes). */
const MOST = 24 * 60;
/** Rounds of HSCAN a per-group read makes at most (each one pipeline over the minutes still open). */
const GROUP_ROUNDS = 4;

/** The runs per group that ended in a span of minutes, as {@link HistoryStore.groupMinutes} sums them. */
export interface GroupCounts {
  counts: Map<string, number>;
  /** False when the bound of fields read was reached before every minute's hash was read through. */
  complete: boolean;
}

/**
 * One shard's history reads.
 * @example
 * const minutes = await new HistoryStore(store).minutes(29_000_000, 29_000_059);
 */
export class HistoryStore {
  constructor(private readonly queue: QueueStore) {}

  private get keys(): QueueKeys {
    return this.queue.keys;
  }

  /** The hashes of minutes `from` to `to` (minutes since the epoch), in order ({} for a minute with none). */
  minutes(from: number, to: number): Promise<Array<Record<string, string>>> {
    return this.read(from, to, (m) => this.keys.historyMinute(m));
  }

  /** The hashes of days `from` to `to` (days since the epoch), in order. */
  days(from: number, to: number): Promise<Array<Record<string, string>>> {
    return this.read(from, to, (d) => this.keys.historyDay(d));
  }

  /**
   * The runs per group that ended in minutes `from` to `to` (minutes since the epoch; the last
   * {@link GROUP_MINUTES_KEPT} at most), summed: every minute's hash scanned (HSCAN) until about
   * `maxFields` fields were read in all, in at most {@link GROUP_ROUNDS} pipelines, so the read's
   * work is bounded however many groups ran. Past the bound the sums are a part (`complete`
   * false).
   */
  async groupMinutes(from: number, to: number, maxFields: number): Promise<GroupCounts> {
    const counts = new Map<string, number>();
    if (to < from) return { counts, complete: true };
    if (to - from >= GROUP_MINUTES_KEPT) from = to - GROUP_MINUTES_KEPT + 1;
    let open = Array.from({ length: to - from + 1 }, (_, i) => ({ key: this.keys.historyGroups(from + i), cursor: '0' }));
    let budget = maxFields;
    for (let round = 0; round < GROUP_ROUNDS && open.length > 0 && budget > 0; round++) {
      const per = Math.max(10, Math.ceil(budget / open.length));
      const pipe = this.queue.client.pipeline();
      for (const o of open) pipe.hscan(o.key, o.cursor, 'COUNT', per);
      const replies = (await execChecked(pipe)) as Array<[string, string[]]>;
      replies.forEach(([cursor, flat], i) => {
        open[i].cursor = cursor;
        budget -= flat.length / 2;
        for (let k = 0; k + 1 < flat.length; k += 2) {
          const n = Number(flat[k + 1]);
          if (Number.isFinite(n)) counts.set(flat[k], (counts.get(flat[k]) ?? 0) + n);
        }
      });
      open = open.filter((o) => o.cursor !== '0');
    }
    return { counts, complete: open.length === 0 };
  }

  private async read(from: number, to: number, key: (n: number) => string): Promise<Array<Record<string, string>>> {
    if (to < from) return [];
    if (to - from >= MOST) from = to - MOST + 1;
    const pipe = this.queue.client.pipeline();
    for (let n = from; n <= to; n++) pipe.hgetall(key(n));
    return (await execChecked(pipe)) as Array<Record<string, string>>;
  }
}

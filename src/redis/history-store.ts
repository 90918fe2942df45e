/**
 * Reads of a queue shard's history (see ./history.ts): its minute and day hashes, each range in
 * one pipeline.
 */
import type { QueueKeys } from './keys.js';
import { execChecked } from './pipeline.js';
import type { QueueStore } from './queue-store.js';

/** Most hashes one read asks for (a day of minutes). */
const MOST = 24 * 60;

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

  private async read(from: number, to: number, key: (n: number) => string): Promise<Array<Record<string, string>>> {
    if (to < from) return [];
    if (to - from >= MOST) from = to - MOST + 1;
    const pipe = this.queue.client.pipeline();
    for (let n = from; n <= to; n++) pipe.hgetall(key(n));
    return (await execChecked(pipe)) as Array<Record<string, string>>;
  }
}

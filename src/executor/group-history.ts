/**
 * The runs each group ended, added up over a few seconds and then sent to the queue's per-group
 * history (the dashboard's fairness view) in one call per shard, apart from the finish calls: so
 * a finish call costs nothing more for them, however many groups it ends runs of. A crash loses
 * at most the last few seconds' counts of this executor, which a view of shares can bear.
 */
import type { StringValue } from '../redis/string-array.js';

/** How often the counts are sent (ms). */
export const GROUP_HISTORY_FLUSH_MS = 5000;

/**
 * The most groups one send carries: a call adds one hash field a group, so an executor that ended
 * runs of 100,000 groups in a few seconds holds Redis a few milliseconds a call, not half a second.
 */
export const GROUP_HISTORY_CHUNK = 1000;

export class GroupHistory {
  /** Per shard: group → runs ended since the last send. */
  private readonly counts = new Map<number, Map<string, number>>();
  private timer: NodeJS.Timeout | null = null;
  private sending: Promise<void> = Promise.resolve();

  constructor(
    private readonly send: (shard: number, counts: StringValue[]) => Promise<unknown>,
    private readonly onError: (err: unknown) => void,
    private readonly flushMs = GROUP_HISTORY_FLUSH_MS,
  ) {}

  /** Counts one run of `group` on shard `shard` ended. */
  add(shard: number, group: string): void {
    let groups = this.counts.get(shard);
    if (!groups) {
      groups = new Map();
      this.counts.set(shard, groups);
    }
    groups.set(group, (groups.get(group) ?? 0) + 1);
    if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = null;
        void this.flush();
      }, this.flushMs);
      this.timer.unref();
    }
  }

  /** Sends what is counted now (after the send before it); resolves when sent or given up. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = [...this.counts];
    this.counts.clear();
    this.sending = this.sending.then(() =>
      Promise.all(
        batch.map(async ([shard, groups]) => {
          let fields: StringValue[] = [];
          for (const [group, n] of groups) {
            fields.push(group, String(n));
            if (fields.length === 2 * GROUP_HISTORY_CHUNK) {
              await this.sendOrReport(shard, fields);
              fields = [];
            }
          }
          if (fields.length > 0) await this.sendOrReport(shard, fields);
        }),
      ).then(() => undefined),
    );
    return this.sending;
  }

  private async sendOrReport(shard: number, fields: StringValue[]): Promise<void> {
    try {
      await this.send(shard, fields);
    } catch (err) {
      this.onError(err);
    }
  }
}

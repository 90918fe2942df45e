/**
 * The relay of a flow's children in other queues (docs/architecture.md#flows, "Cross-queue
 * children"). Two queues are two Cluster slots, so each crossing is two calls: the receiving
 * queue's script, which refuses a repeat (xsub-in.lua: a child id received before; xend-in.lua:
 * an end not newer than the last delivered), then the removal of the entry from the sending
 * queue's outbox. Killed between the two, the next relay repeats the first call, which changes
 * nothing. Any number of relays may run at once; each pass does a bounded amount of work.
 */
import type { Redis } from 'ioredis';
import { unpack } from 'msgpackr';
import { QueueStore } from '../redis/queue-store.js';
import { readShardCount } from '../redis/schema.js';
import { shardOfGroup, shardOfId } from '../redis/shards.js';
import { submitCommitted } from './fanout.js';

/** Most outbox entries one relay pass moves, per outbox. */
export const RELAY_BATCH = 100;

/** A queue shard's ref, as the outboxes and job hashes keep it: `<queue> <shard> <shards>`. */
export function queueRef(queue: string, shard: number, shards: number): string {
  return `${queue} ${shard} ${shards}`;
}

/** The queue, shard and shard count a {@link queueRef} names. */
export function parseQueueRef(ref: string): { queue: string; shard: number; shards: number } {
  const [queue, shard, shards] = ref.split(' ');
  return { queue, shard: Number(shard), shards: Number(shards) };
}

/** The shard of queue `queue` (of `shards`) that holds flow child `id` of group `group`. */
export function childShard(id: string, group: string, shards: number): number {
  return shardOfId(id, shards) ?? shardOfGroup(group, shards);
}

/** The shard counts of queues `queues` as their layouts record them (1 when none is). */
export async function shardCounts(client: Redis, queues: Iterable<string>): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const q of queues) out.set(q, Number((await readShardCount(client, q)) ?? 1));
  return out;
}

/** The relay of one client: the stores of the queue shards it delivers to, by ref. */
export class CrossRelay {
  private readonly stores = new Map<string, QueueStore>();

  constructor(
    private readonly client: Redis,
    private readonly maxEvents: number,
  ) {}

  /** The store of the shard `ref` names. */
  store(ref: string): QueueStore {
    let s = this.stores.get(ref);
    if (!s) {
      const { queue, shard, shards } = parseQueueRef(ref);
      s = new QueueStore(this.client, queue, { maxEvents: this.maxEvents, shard, shards });
      this.stores.set(ref, s);
    }
    return s;
  }

  /**
   * Submits, in their queues, at most `max` children of `own`'s `xsub` outbox (each with its
   * subtree, pumped at once), removing each entry once its queue has it. Answers how many moved.
   */
  async submits(own: QueueStore, max = RELAY_BATCH): Promise<number> {
    const entries = await own.crossSubmitOutbox(max);
    for (const entry of entries) {
      const [child, ref] = unpack(entry) as [string, string];
      const target = this.store(ref);
      await target.crossSubmit(entry);
      await own.crossSubmitDone(entry);
      await submitCommitted(target, child);
    }
    return entries.length;
  }

  /**
   * Delivers at most `max` entries of `own`'s `xend` outbox (ends and re-opens of children whose
   * parents are in other queues), one call per parent shard, removing them once delivered.
   * Answers how many moved.
   */
  async ends(own: QueueStore, max = RELAY_BATCH): Promise<number> {
    const entries = await own.crossEndOutbox(max);
    const byRef = new Map<string, Buffer[]>();
    for (const entry of entries) {
      const ref = (unpack(entry) as [string])[0];
      const list = byRef.get(ref);
      if (list) list.push(entry);
      else byRef.set(ref, [entry]);
    }
    for (const [ref, list] of byRef) {
      await this.store(ref).crossEnds(list);
      await own.crossEndsDone(list);
    }
    return entries.length;
  }
}

/**
 * Where a sharded queue keeps what. A queue of `shards: N` is N independent queues ("shards")
 * under one name, each in its own Cluster slot (hash tag `{rota:<queue>:<i>}`), and, when N > 1,
 * a home shard under the unsharded tag `{rota:<queue>}`: it holds the queue's layout (its shard
 * count), the periodic tasks and their runs, so that staging a run stays one atomic call beside
 * its task. An unsharded queue (N = 1) is its own home. A submitted job lives in its group's
 * shard, chosen by the group's bucket (a stable hash of its name into {@link BUCKETS} buckets,
 * bucket mod N); a fan-out child lives with its parent. A job id that Rota makes carries its
 * group's bucket, so it names its shard under any shard count.
 */
import { ValidationError } from '../errors.js';

/** Most shards a queue may have. */
export const MAX_SHARDS = 1024;

/** Buckets a group hashes into (36³: three base-36 digits in a job id). */
export const BUCKETS = 46_656;

/** Checks a shard count: a whole number from 1 to {@link MAX_SHARDS}; answers it (default 1). */
export function checkShards(shards: number | undefined): number {
  if (shards === undefined) return 1;
  if (!Number.isInteger(shards) || shards < 1 || shards > MAX_SHARDS) {
    throw new ValidationError('shards', `must be a whole number from 1 to ${MAX_SHARDS}`);
  }
  return shards;
}

/** The bucket of group `group`: FNV-1a (32 bits) over its UTF-16 code units, mod {@link BUCKETS}. */
export function groupBucket(group: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < group.length; i++) {
    h ^= group.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % BUCKETS;
}

/** The shard of group `group` in a queue of `shards` shards. */
export function shardOfGroup(group: string, shards: number): number {
  return shards === 1 ? 0 : groupBucket(group) % shards;
}

/** The bucket as a job id's suffix: three base-36 digits. */
export function bucketSuffix(bucket: number): string {
  return bucket.toString(36).padStart(3, '0');
}

/**
 * A job id Rota made: 18 base-36 digits, `.`, the group's bucket (three base-36 digits); a
 * fan-out child adds `/<n>` to its parent's id.
 */
const MADE_ID = /^[0-9a-z]{18,19}\.([0-9a-z]{3})(?:\/\d+)*$/;

/**
 * The shard a job id names, for an id Rota made (or a fan-out child of one); null for another id
 * (a caller's), which any shard may hold.
 */
export function shardOfId(id: string, shards: number): number | null {
  if (shards === 1) return 0;
  const m = MADE_ID.exec(id);
  return m ? Number.parseInt(m[1], 36) % shards : null;
}

/** The number of the home shard of a queue of `shards` shards: the only one, or the one after the last. */
export function homeShard(shards: number): number {
  return shards === 1 ? 0 : shards;
}

/** The hash tag of shard `shard` of queue `queue` with `shards` shards (the home shard: the unsharded tag). */
export function shardTag(queue: string, shard: number, shards: number): string {
  return shard === homeShard(shards) ? `{rota:${queue}}` : `{rota:${queue}:${shard}}`;
}

/** Every shard number of a queue of `shards` shards, the home shard last (one shard: [0]). */
export function shardNumbers(shards: number): number[] {
  return Array.from({ length: homeShard(shards) + 1 }, (_, i) => i);
}

/**
 * The shards that may hold jobs of group `group`: its own, and the home shard (where its
 * periodic runs are) when the queue has more than one.
 */
export function shardsOfGroup(group: string, shards: number): number[] {
  return shards === 1 ? [0] : [shardOfGroup(group, shards), homeShard(shards)];
}

/**
 * `items` by shard (`shardOf(item)`), each part in their order; with one shard (`count` 1), one
 * part without a look at the items.
 */
export function byShard<I>(items: I[], count: number, shardOf: (item: I) => number): Array<[number, I[]]> {
  if (count === 1) return [[0, items]];
  const parts = new Map<number, I[]>();
  for (const item of items) {
    const i = shardOf(item);
    const part = parts.get(i);
    if (part) part.push(item);
    else parts.set(i, [item]);
  }
  return [...parts];
}

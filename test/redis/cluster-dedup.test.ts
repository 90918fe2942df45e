/**
 * Deduplication on a sharded queue over a Redis Cluster of three primaries: a dedup key lives in
 * its group's shard (the slot of the job it guards), so the submit that takes it, the finish that
 * releases it and every duplicate are one slot's scripts, exact across primaries.
 */
import { describe, expect, it } from 'vitest';
import { type Job, Queue, Worker } from '../../src/index.js';
import { shardOfGroup, shardTag } from '../../src/redis/shards.js';
import { fileCluster } from '../helpers/file-cluster.js';

const SHARDS = 4;
const own = fileCluster(3, 0);

describe('deduplication on a sharded queue over a Redis Cluster', () => {
  it('adds one job per group and key on every shard, answers the duplicates, and releases every key as its job ends', async () => {
    const name = 'dedup';
    const q = new Queue(name, { connection: own.connect(), shards: SHARDS });
    const groups = Array.from({ length: 24 }, (_, i) => `tenant-${i}`);
    const specs = (n: number) =>
      groups.flatMap((group) =>
        Array.from({ length: 3 }, (_, k) => ({ task: 'work', group, args: n, dedup: { key: `report-${k}` } })),
      );
    const done = new Set<string>();
    let allDone = () => {};
    const finished = new Promise<void>((resolve) => {
      allDone = resolve;
    });
    let w: Worker | undefined;
    try {
      const first = await q.submitBulk(specs(1));
      expect(new Set(first.map((j) => shardOfGroup(j.group, SHARDS))).size).toBe(SHARDS);
      expect(new Set(first.map((j) => j.id)).size).toBe(first.length);
      const primaries = new Set(
        await Promise.all(Array.from({ length: SHARDS }, (_, i) => own.cluster.primaryOf(`${shardTag(name, i, SHARDS)}:x`))),
      );
      expect(primaries.size).toBeGreaterThan(1);
      // each key in its job's shard
      const admin = own.connect();
      for (const j of first) {
        const key = `${shardTag(name, shardOfGroup(j.group, SHARDS), SHARDS)}:dd:${j.group.length}:${j.group}${j.dedupKey}`;
        expect(await admin.get(key)).toBe(`e${j.id}`);
      }
      const again = await q.submitBulk(specs(2));
      expect(again.map((j) => j.id)).toEqual(first.map((j) => j.id));
      expect(again.every((j: Job) => j.deduplicated === true)).toBe(true);
      w = new Worker(name, { work: async () => 'ok' }, { connection: own.connect(), shards: SHARDS, concurrency: 8 });
      w.on('completed', (job) => {
        done.add(job.id);
        if (done.size === first.length) allDone();
      });
      await finished;
      for (const j of first) {
        const key = `${shardTag(name, shardOfGroup(j.group, SHARDS), SHARDS)}:dd:${j.group.length}:${j.group}${j.dedupKey}`;
        expect(await admin.exists(key)).toBe(0);
      }
      const next = await q.submitBulk(specs(3));
      expect(next.filter((j, i) => j.id === first[i].id)).toEqual([]);
    } finally {
      await w?.close();
      await q.close();
    }
  });
});

/** A reshard on a Redis Cluster of three primaries: the shards of each count spread over the primaries, and every job moves to its own. */
import { describe, expect, it } from 'vitest';
import { type Job, Queue, reshard, Worker } from '../../src/index.js';
import { homeShard, shardOfGroup, shardOfId } from '../../src/redis/shards.js';
import { fileCluster } from '../helpers/file-cluster.js';
import { eventually } from '../helpers/setup.js';

const own = fileCluster(3, 0);

describe('reshard on a Redis Cluster', () => {
  it('moves jobs between shards on different primaries, 1 -> 6 -> 2 shards, and executors of the new count run them', async () => {
    const conn = own.connect();
    const name = 'resharded';
    const groups = Array.from({ length: 30 }, (_, i) => `tenant-${i}`);
    try {
      const q = new Queue(name, { connection: conn });
      const done = await q.submitBulk(groups.slice(0, 5).map((group) => ({ task: 'work', group })));
      const w = new Worker(name, { work: async () => 'ok' }, { connection: conn });
      await eventually(async () => (await q.counts()).success === 5);
      await w.close();
      const waiting = await q.submitBulk(groups.flatMap((group) => [0, 1].map((i) => ({ task: 'work', group, args: i }))));
      const later = await q.submitBulk(groups.slice(0, 6).map((group) => ({ task: 'work', group, delay: 3_600_000 })));
      const all = [...done, ...waiting, ...later];
      const before = new Map<string, Job | null>();
      for (const j of all) before.set(j.id, await q.getJob(j.id));
      await q.close();

      for (const to of [6, 2]) {
        const report = await reshard(conn, name, { to });
        expect(report.to).toBe(to);
        const sharded = new Queue(name, { connection: conn, shards: to });
        const primaries = new Set<number>();
        for (const j of all) {
          const shard = shardOfId(j.id, to) ?? shardOfGroup(j.group, to);
          expect(await conn.exists(sharded.shardKeys[shard].job(j.id)), j.id).toBe(1);
          expect(await sharded.getJob(j.id)).toEqual(before.get(j.id));
          primaries.add((await own.cluster.primaryOf(sharded.shardKeys[shard].meta)).port);
        }
        expect(primaries.size, 'primaries holding the jobs').toBeGreaterThan(1);
        expect(await sharded.counts()).toMatchObject({ success: 5, waiting: 60, delayed: 6 });
        expect(sharded.shardKeys.length).toBe(homeShard(to) + 1);
        await sharded.close();
      }
      const ran: string[] = [];
      const executor = new Worker(
        name,
        { work: async (ctx) => void ran.push(ctx.job.id) },
        { connection: conn, shards: 2, concurrency: 8 },
      );
      await eventually(async () => ran.length >= 60, 20_000);
      await executor.close();
      expect(ran.sort()).toEqual(waiting.map((j) => j.id).sort());
    } finally {
      conn.disconnect();
    }
  });
});

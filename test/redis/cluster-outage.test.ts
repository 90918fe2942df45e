/**
 * A sharded queue on a Redis Cluster of three primaries with a replica each, configured as
 * docs/operations.md says (`cluster-require-full-coverage no`), while one primary is down and not
 * yet replaced: the shards on the other primaries keep running, and submits to their groups are
 * written at once, not held back behind a submit to a struck shard, nor refused.
 */
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { shardOfGroup, shardTag } from '../../src/redis/shards.js';
import { fileCluster } from '../helpers/file-cluster.js';
import { until } from '../helpers/setup.js';

const SHARDS = 6;

const own = fileCluster(3, 1);

describe('a sharded queue on a Cluster with a primary down', () => {
  it('keeps running the other shards and takes submits to their groups at once', async () => {
    for (const { port } of own.cluster.startupNodes) {
      const c = new Redis(port, '127.0.0.1');
      await c.config('SET', 'cluster-require-full-coverage', 'no');
      c.disconnect();
    }
    const name = 'outage-submits';
    const owners = await Promise.all(
      Array.from({ length: SHARDS }, (_, i) => own.cluster.primaryOf(`${shardTag(name, i, SHARDS)}:x`)),
    );
    const victim = owners[0];
    const struck = new Set(owners.flatMap((o, i) => (o === victim ? [i] : [])));
    expect(struck.size).toBeLessThan(SHARDS);
    const groups = Array.from({ length: 60 }, (_, i) => `tenant-${i}`);
    // groups of their own, so that the rotation comes to them within a turn
    const fresh = Array.from({ length: 200 }, (_, i) => `fresh-${i}`)
      .filter((g) => !struck.has(shardOfGroup(g, SHARDS)))
      .slice(0, 20);
    const struckGroup = groups.find((g) => struck.has(shardOfGroup(g, SHARDS)))!;

    const q = new Queue(name, { connection: own.connect(), shards: SHARDS });
    const w = new Worker(
      name,
      { work: () => new Promise((r) => setTimeout(r, 2)) },
      { connection: own.connect(), shards: SHARDS, concurrency: 20 },
    );
    w.on('error', () => {});
    let down = false;
    let warmed = () => {};
    const warm = new Promise<void>((resolve) => (warmed = resolve));
    let completed = 0;
    let othersWhileDown = 0;
    const ended = new Set<string>();
    w.on('completed', (job) => {
      if (++completed === 300) warmed();
      if (down && !struck.has(shardOfGroup(job.group, SHARDS))) othersWhileDown++;
      ended.add(job.id);
    });
    try {
      await q.submitBulk(Array.from({ length: 6000 }, (_, i) => ({ task: 'work', group: groups[i % groups.length] })));
      await warm;
      await victim.kill();
      down = true;
      // A submit to a struck shard waits for the promotion (or fails); one to another shard is
      // written meanwhile.
      let struckSettled = false;
      const toStruck = q.submit({ task: 'work', group: struckGroup }).finally(() => (struckSettled = true));
      toStruck.catch(() => {});
      await new Promise((r) => setImmediate(r));
      const settledBefore: boolean[] = [];
      const during = await Promise.allSettled(
        fresh.map((group) => q.submit({ task: 'work', group }).finally(() => settledBefore.push(struckSettled))),
      );
      expect(during.filter((r) => r.status === 'rejected')).toEqual([]);
      expect(settledBefore).toEqual(settledBefore.map(() => false));
      const ids = during.map((r) => (r as PromiseFulfilledResult<{ id: string }>).value.id);
      await own.cluster.waitOk();
      down = false;
      // the other shards kept running until the promotion, and the jobs submitted to them run
      expect(othersWhileDown).toBeGreaterThan(0);
      await until(w, 'completed', () => ids.every((id) => ended.has(id)), 60_000);
      await toStruck.catch(() => {});
      await victim.restart();
      await own.cluster.waitOk();
    } finally {
      await w.close({ timeout: 1000 });
      await q.close();
    }
  }, 120_000);
});

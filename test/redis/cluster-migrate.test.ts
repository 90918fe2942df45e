/**
 * A migration step on a Redis Cluster: each shard of a sharded queue, on its own primary, is
 * read by SCAN on the node that holds it and migrated there (test/fixtures/migrate-step.ts).
 */
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from '../../src/index.js';
import { migrateQueue } from '../../src/queue/migrate.js';
import { queueKeys } from '../../src/redis/keys.js';
import { shardNumbers } from '../../src/redis/shards.js';
import { META, SCHEMA_VERSION } from '../../src/redis/wire.js';
import { TEST_STEP } from '../fixtures/migrate-step.js';
import { type LocalCluster, startCluster } from '../helpers/cluster.js';

const SHARDS = 3;
let cluster: LocalCluster;
let conn: Cluster;

beforeAll(async () => {
  cluster = await startCluster(3, 0);
  conn = new Cluster(cluster.startupNodes);
}, 60_000);

afterAll(async () => {
  conn?.disconnect();
  await cluster?.destroy();
});

describe('rota migrate on a Redis Cluster', () => {
  it('migrates every shard of a sharded queue on the primary that holds it', async () => {
    const name = 'cluster-migrate';
    const queue = new Queue(name, { connection: conn, shards: SHARDS });
    try {
      const jobs = await queue.submitBulk(
        Array.from({ length: 600 }, (_, i) => ({ task: 't', group: `g${i}`, runAt: Date.now() + 86_400_000 })),
      );
      const owners = await Promise.all(shardNumbers(SHARDS).map((s) => cluster.primaryOf(queueKeys(name, s, SHARDS).meta)));
      expect(new Set(owners).size).toBeGreaterThan(1);

      const dry = await migrateQueue(conn, name, { steps: [TEST_STEP], dryRun: true, batch: 50 });
      expect(dry.reduce((n, r) => n + (r.steps[0]?.keys ?? 0), 0)).toBe(600);
      // (the job shards 0 to 2; the home shard, 3, holds no job here)
      const jobShards = shardNumbers(SHARDS).slice(0, SHARDS);
      for (const s of jobShards)
        expect(await conn.hget(queueKeys(name, s, SHARDS).meta, META.schema)).toBe(String(SCHEMA_VERSION));

      const reports = await migrateQueue(conn, name, { steps: [TEST_STEP], batch: 50 });
      expect(reports.reduce((n, r) => n + (r.steps[0]?.rewritten ?? 0), 0)).toBe(600);
      for (const s of jobShards) expect(await conn.hget(queueKeys(name, s, SHARDS).meta, META.schema)).toBe(String(TEST_STEP.to));
      for (const job of jobs.slice(0, 50)) expect((await queue.getJob(job.id))?.group).toBe(job.group);
    } finally {
      await queue.close();
    }
  }, 120_000);
});

/**
 * Fault tests of batches (docs/jobs.md#batches): executor processes killed with kill -9 again and
 * again while batches' jobs run, jobs of them add more to them (after their close), and some fail
 * once and are retried; on one Redis, and on a sharded queue over a Redis Cluster with batches in
 * shards on each of its 3 primaries. Whatever died when: every job ends `success` once and is
 * counted once, each batch completes and succeeds once each (one event each), after every job's
 * success, and each callback is submitted once and runs only after that.
 */
import { Cluster, Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { type Batch, Queue, type SubmitSpec } from '../../src/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { shardOfGroup, shardOfId } from '../../src/redis/shards.js';
import { readRuns } from '../fixtures/runs.js';
import { startCluster } from '../helpers/cluster.js';
import { ExecutorFleet, executorEnv, type FaultQueue, shardEvents, streamBefore } from '../helpers/fault-fleet.js';
import { eventually, redisUrl, sleep, uniqueQueue } from '../helpers/setup.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Executors killed in a run. */
const KILLS = 4;

const script = new URL('../fixtures/batch-executor.ts', import.meta.url).pathname;

interface Setup extends FaultQueue {
  /** The groups of the batches opened (each batch's jobs live in its group's shard). */
  groups: string[];
  /** `work` jobs a round adds to each batch (beside one `spawn` of 5). */
  perRound: number;
}

async function chaos(s: Setup): Promise<void> {
  const { q } = s;
  const env = executorEnv(s, 6);
  const fleet = await ExecutorFleet.start(script, [env, env, env], (p) => cleanups.push(() => p.kill()));
  const batches: Batch[] = [];
  for (const group of s.groups)
    batches.push(await q.openBatch({ onComplete: { task: 'done' }, onSuccess: { task: 'done' }, group }));
  if (s.shards > 1) {
    expect(batches.map((b) => shardOfId(b.id, s.shards))).toEqual(s.groups.map((g) => shardOfGroup(g, s.shards)));
  }

  // kill -9 an executor every 300-900 ms (a replacement started at once, not waited for: the
  // next kill may come while it starts)
  const killing = fleet.killRepeatedly({ times: KILLS, pauseMs: [300, 900], replace: 'any' });
  const ids = new Map<string, string[]>(batches.map((b) => [b.id, []]));
  let kills: number;
  try {
    // jobs added over time while executors die (until half the kills are done); some fail
    // once; some add to their batch
    for (let round = 0; round < 12 && (round < 3 || killing.kills < KILLS / 2); round++) {
      for (const batch of batches) {
        const specs: SubmitSpec[] = Array.from({ length: s.perRound }, (_, i) => ({
          task: 'work',
          group: `g${i % 3}`,
          args: { ms: 150, flaky: i % 5 === 0 },
        }));
        specs.push({ task: 'spawn', args: { n: 5 } });
        const mine = ids.get(batch.id)!;
        for (const j of await batch.submitBulk(specs)) {
          mine.push(j.id);
          if (j.task === 'spawn') for (let i = 0; i < 5; i++) mine.push(`${j.id}-${i}`);
        }
      }
      await sleep(400);
    }
    for (const batch of batches) await batch.close();
    await eventually(async () => {
      const cbs = await Promise.all(batches.flatMap((b) => [q.getJob(`${b.id}/complete`), q.getJob(`${b.id}/success`)]));
      return cbs.every((c) => c?.state === 'success');
    }, 120_000).catch(async (err: unknown) => {
      console.log('not done:', await q.counts(), await Promise.all(batches.map((b) => q.batch(b.id))));
      throw err;
    });
  } finally {
    kills = await killing.stop();
  }
  console.log(`batch faults (${s.shards} shard(s), ${batches.length} batch(es)): ${kills} executors killed`);
  expect(kills).toBeGreaterThanOrEqual(KILLS / 2);

  let all = 0;
  for (const batch of batches) {
    const mine = ids.get(batch.id)!;
    const total = mine.length;
    all += total;
    expect(await q.batch(batch.id)).toMatchObject({
      total,
      pending: 0,
      success: total,
      failed: 0,
      cancelled: 0,
      state: 'succeeded',
    });
    const jobs = await Promise.all(mine.map((id) => q.getJob(id)));
    expect(jobs.filter((j) => j?.state !== 'success' || j.batch !== batch.id)).toEqual([]);
    // the batch's jobs, callbacks and events are all in its shard's stream
    const shard = shardOfId(batch.id, s.shards)!;
    const events = await shardEvents(s.client, s.name, s.shards, [shard]);
    const fired = events.filter((e) => (e.event === 'batch.completed' || e.event === 'batch.succeeded') && e.id === batch.id);
    expect(fired.map((e) => e.event)).toEqual(['batch.completed', 'batch.succeeded']);
    // (the last success and the completion are one call: one stream entry)
    const set = new Set(mine);
    const successes = events.filter((e) => e.state === 'success' && !e.event && set.has(e.id));
    expect(successes.length).toBe(total);
    for (const e of successes) expect(streamBefore(fired[0], e), e.id).toBe(false);
    for (const cb of [`${batch.id}/complete`, `${batch.id}/success`]) {
      const entered = events.filter((e) => e.id === cb && e.state === 'waiting');
      expect(entered.length, cb).toBe(1);
      expect(streamBefore(entered[0], fired[0]), cb).toBe(false);
      expect((await q.getJob(cb))!.result, cb).toBe(total);
    }
  }
  // nothing doubled: the queue holds these and two callbacks a batch
  const counts = await q.counts();
  expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(all + 2 * batches.length);
  const runs = await readRuns(s.client, s.name);
  const everyId = [...ids.values()].flat();
  const reruns = everyId.filter((id) => (runs.get(id)?.length ?? 0) > 1).length;
  console.log(`batch faults: ${reruns} of ${all} jobs ran more than once (retries, runs lost with their executor)`);
}

describe('batch faults', () => {
  it('kill -9 of executors while a batch runs, grows from its own jobs and retries: each callback is submitted once, after every success', async () => {
    const name = uniqueQueue('batchfault');
    const client = new Redis(redisUrl());
    const q = new Queue(name, { connection: redisUrl(), maxEvents: 1_000_000 });
    cleanups.push(
      () => q.close(),
      () => client.disconnect(),
    );
    await chaos({ name, shards: 1, env: { REDIS_URL: redisUrl() }, client, q, groups: ['default'], perRound: 25 });
  }, 240_000);

  it('the same with batches in shards on each primary of a 3-primary Redis Cluster', async () => {
    const cluster = await startCluster(3);
    cleanups.push(() => cluster.destroy());
    const shards = 4;
    // a queue whose 4 shards span the 3 primaries (the slot of a shard's tag decides), and a
    // batch in each shard: groups picked by their shard
    let name = '';
    let primaries = 0;
    for (let tries = 0; tries < 50 && primaries < 3; tries++) {
      name = uniqueQueue('batchfaultc');
      const owners = await Promise.all(
        Array.from({ length: shards }, (_, i) => cluster.primaryOf(queueKeys(name, i, shards).events)),
      );
      primaries = new Set(owners.map((o) => o.port)).size;
    }
    expect(primaries).toBe(3);
    const groups: string[] = [];
    for (let shard = 0; shard < shards; shard++) {
      let g = 0;
      while (shardOfGroup(`tenant-${g}`, shards) !== shard) g++;
      groups.push(`tenant-${g}`);
    }
    const client = new Cluster(cluster.startupNodes) as unknown as Redis;
    const q = new Queue(name, { connection: new Cluster(cluster.startupNodes), shards, maxEvents: 1_000_000 });
    cleanups.push(
      () => q.close(),
      () => client.disconnect(),
    );
    const nodes = cluster.startupNodes.map((n) => `${n.host}:${n.port}`).join(',');
    await chaos({ name, shards, env: { CLUSTER_NODES: nodes }, client, q, groups, perRound: 8 });
  }, 300_000);
});

/**
 * Fault tests of flows and fan-in (docs/jobs.md#flows): executor processes killed with kill -9
 * again and again while a flow of three levels and a fan-out with a continuation run, on one
 * Redis and on a sharded queue over a Redis Cluster. Whatever died when: every job ends
 * `success` once, every waiter (a flow's parent, the continuation) is released once and runs only
 * after its release, which comes after each of its children's success, and nothing is left staged.
 */
import { Cluster, Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, type QueueEvent } from '../../src/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { shardNumbers } from '../../src/redis/shards.js';
import { readRuns } from '../fixtures/runs.js';
import { startCluster } from '../helpers/cluster.js';
import { ExecutorFleet, executorEnv, type FaultQueue, flowTree, shardEvents, streamBefore } from '../helpers/fault-fleet.js';
import { eventually, redisUrl, uniqueQueue } from '../helpers/setup.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Executors killed in a run. */
const KILLS = 12;

const script = new URL('../fixtures/flow-executor.ts', import.meta.url).pathname;

async function chaos(s: FaultQueue, mids: number, leaves: number, fanned: number): Promise<void> {
  const { q } = s;
  const env = executorEnv(s, 4);
  const fleet = await ExecutorFleet.start(script, [env, env], (p) => cleanups.push(() => p.kill()));
  const flow = await q.submitFlow({
    task: 'node',
    group: 'root',
    children: Array.from({ length: mids }, (_, m) => ({
      task: 'node',
      group: `g${m % 4}`,
      children: Array.from({ length: leaves }, () => ({ task: 'work', args: { ms: 400 } })),
    })),
  });
  const fan = await q.submit({ task: 'fan', group: 'fan', args: { n: fanned } });
  const continuation = `${fan.id}/after`;

  // kill -9 an executor 300-900 ms after the last new one is up, and start another, `KILLS`
  // times or until both waiters are done
  const killing = fleet.killRepeatedly({ times: KILLS, pauseMs: [300, 900], replace: 'await' });
  let kills: number;
  try {
    await eventually(async () => {
      const [r, c] = await Promise.all([q.getJob(flow.id), q.getJob(continuation)]);
      return r?.state === 'success' && c?.state === 'success';
    }, 240_000).catch(async (err: unknown) => {
      console.log('not done:', await q.counts(), (await q.getJob(flow.id))?.children, (await q.getJob(fan.id))?.children);
      throw err;
    });
  } finally {
    kills = await killing.stop();
  }
  console.log(`flow faults (${s.shards} shard(s)): ${kills} executors killed`);

  const { ids, waiters } = flowTree(flow);
  const fanChildren = Array.from({ length: fanned }, (_, i) => `${fan.id}/${i}`);
  ids.push(fan.id, continuation, ...fanChildren);
  waiters.set(continuation, fanChildren);

  const jobs = await eventually(async () => {
    const all = await Promise.all(ids.map((id) => q.getJob(id)));
    return all.every((j) => j?.state === 'success') && all;
  }, 60_000);
  expect(jobs.length).toBe(ids.length);
  // no job doubled: the queue holds exactly these, each succeeded once
  const counts = await q.counts();
  expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(ids.length);
  const events = await shardEvents(s.client, s.name, s.shards);
  const successes = new Map<string, QueueEvent[]>();
  for (const e of events) {
    if (e.state === 'success' && !e.event) successes.set(e.id, [...(successes.get(e.id) ?? []), e]);
  }
  expect(ids.filter((id) => successes.get(id)?.length !== 1)).toEqual([]);
  // each waiter released once, after each child's success, and run only after that
  for (const [waiter, children] of waiters) {
    const released = events.filter((e) => e.event === 'flow.released' && e.id === waiter);
    expect(released.length, waiter).toBe(1);
    // (the last child's success and the release are one call: one stream entry)
    for (const c of children) expect(streamBefore(released[0], successes.get(c)![0]), `${c} before ${waiter}`).toBe(false);
    const early = events.filter(
      (e) => e.id === waiter && (e.state === 'running' || e.state === 'scheduled') && streamBefore(e, released[0]),
    );
    expect(early, waiter).toEqual([]);
  }
  // a waiter's result counts its children's successes
  for (const [waiter, children] of waiters) expect((await q.getJob(waiter))!.result, waiter).toBe(children.length);
  const runs = await readRuns(s.client, s.name);
  const reruns = ids.filter((id) => (runs.get(id)?.length ?? 0) > 1).length;
  console.log(`flow faults: ${reruns} of ${ids.length} jobs ran more than once (runs lost with their executor)`);
  for (const shard of shardNumbers(s.shards)) {
    const k = queueKeys(s.name, shard, s.shards);
    expect(await s.client.zcard(k.fanouts)).toBe(0);
    // (every waiter left the index of its state with its release)
    expect(await s.client.zcard(k.waitingChildren)).toBe(0);
  }
}

describe('flow faults', () => {
  it('kill -9 of executors throughout a 3-level flow and a fan-in: each job succeeds once, each waiter is released once after its children', async () => {
    const name = uniqueQueue('flowfault');
    const client = new Redis(redisUrl());
    const q = new Queue(name, { connection: redisUrl() });
    cleanups.push(
      () => q.close(),
      () => client.disconnect(),
    );
    await chaos({ name, shards: 1, env: { REDIS_URL: redisUrl() }, client, q }, 8, 25, 400);
    expect(await client.keys(`{rota:${name}}:fan*:*`)).toEqual([]);
  }, 300_000);

  it('the same on a queue of 3 shards on a Redis Cluster', async () => {
    const cluster = await startCluster(3);
    cleanups.push(() => cluster.destroy());
    const name = uniqueQueue('flowfaultc');
    const client = new Cluster(cluster.startupNodes) as unknown as Redis;
    const q = new Queue(name, { connection: new Cluster(cluster.startupNodes), shards: 3 });
    cleanups.push(
      () => q.close(),
      () => client.disconnect(),
    );
    const nodes = cluster.startupNodes.map((n) => `${n.host}:${n.port}`).join(',');
    await chaos({ name, shards: 3, env: { CLUSTER_NODES: nodes }, client, q }, 6, 20, 300);
  }, 300_000);
});

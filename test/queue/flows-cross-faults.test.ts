/**
 * Fault test of a flow's children in another queue (docs/jobs.md#flows): executor processes of
 * both queues killed with kill -9 at random points, again and again (between a child's end and
 * its delivery to the parent among them), while a flow whose root is in queue A waits for
 * children, and their children, in queue B. Whatever died when: every job ends `success` once,
 * each parent is released once, after its last child's success, and both outboxes end empty.
 */
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, type QueueEvent } from '../../src/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { ExecutorFleet, flowTree, shardEvents } from '../helpers/fault-fleet.js';
import { eventually, redisUrl, uniqueQueue } from '../helpers/setup.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Executors killed in the run. */
const KILLS = 5;

const script = new URL('../fixtures/flow-executor.ts', import.meta.url).pathname;

const env = (queue: string): NodeJS.ProcessEnv => ({ REDIS_URL: redisUrl(), QUEUE: queue, LEASE_MS: '1000', CONCURRENCY: '4' });

const ms = (e: QueueEvent) => Number(e.streamId.split('-')[0]);

describe('flow faults across queues', () => {
  it('kill -9 of executors of both queues: each job succeeds once, each parent is released once after its children', async () => {
    const [a, b] = [uniqueQueue('xfa'), uniqueQueue('xfb')];
    const client = new Redis(redisUrl());
    const qa = new Queue(a, { connection: redisUrl() });
    const qb = new Queue(b, { connection: redisUrl() });
    cleanups.push(
      () => qa.close(),
      () => qb.close(),
      () => client.disconnect(),
    );
    const fleet = await ExecutorFleet.start(script, [env(a), env(b), env(b)], (p) => cleanups.push(() => p.kill()));
    const flow = await qa.submitFlow({
      task: 'node',
      children: [
        ...Array.from({ length: 4 }, () => ({
          task: 'node',
          queue: b,
          children: Array.from({ length: 8 }, () => ({ task: 'work', args: { ms: 200 } })),
        })),
        ...Array.from({ length: 8 }, () => ({ task: 'work', queue: b, args: { ms: 200 } })),
        { task: 'work', args: { ms: 200 } },
      ],
    });
    // kill -9 a ready executor every 200-700 ms (a replacement started at once, not awaited),
    // `KILLS` times or until the root is done
    const killing = fleet.killRepeatedly({ times: KILLS, pauseMs: [200, 700], replace: 'ready' });
    let kills: number;
    try {
      await eventually(async () => (await qa.getJob(flow.id))?.state === 'success', 120_000);
    } finally {
      kills = await killing.stop();
    }
    console.log(`cross-queue flow faults: ${kills} executors killed`);

    // every job of the tree, in its queue, succeeded once
    const inA = new Set([flow.id, ...flow.children!.filter((c) => !c.queue).map((c) => c.id)]);
    const { ids, waiters } = flowTree(flow);
    const all = [...(await shardEvents(client, a)), ...(await shardEvents(client, b))];
    const successes = new Map<string, QueueEvent[]>();
    for (const e of all) if (e.state === 'success' && !e.event) successes.set(e.id, [...(successes.get(e.id) ?? []), e]);
    expect(ids.filter((id) => successes.get(id)?.length !== 1)).toEqual([]);
    expect([...successes.keys()].filter((id) => !ids.includes(id))).toEqual([]);
    const total = async (q: Queue) => Object.values(await q.counts()).reduce((s, n) => s + n, 0);
    expect(await total(qa)).toBe(inA.size);
    expect(await total(qb)).toBe(ids.length - inA.size);
    // each parent released once, not before its last child's success, and run after it
    for (const [waiter, children] of waiters) {
      const released = all.filter((e) => e.event === 'flow.released' && e.id === waiter);
      expect(released.length, waiter).toBe(1);
      for (const c of children) expect(ms(released[0]) >= ms(successes.get(c)![0]), `${c} before ${waiter}`).toBe(true);
      const early = all.filter(
        (e) => e.id === waiter && (e.state === 'running' || e.state === 'scheduled') && ms(e) < ms(released[0]),
      );
      expect(early, waiter).toEqual([]);
      expect((await (inA.has(waiter) ? qa : qb).getJob(waiter))!.result, waiter).toBe(children.length);
    }
    // the outboxes are empty (every crossing acknowledged)
    await eventually(async () => (await client.zcard(queueKeys(b).crossEnds)) === 0, 30_000);
    expect(await client.llen(queueKeys(a).crossSubmits)).toBe(0);
  }, 180_000);
});

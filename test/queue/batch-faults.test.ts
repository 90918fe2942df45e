/**
 * Fault test of batches (docs/jobs.md#batches): executor processes killed with kill -9 again and
 * again while a batch's jobs run, jobs of it add more to it (after its close), and some fail once
 * and are retried. Whatever died when: every job ends `success` once and is counted once, the
 * batch completes and succeeds once each (one event each), after every job's success, and each
 * callback is submitted once and runs only after that.
 */
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, type QueueEvent, type SubmitSpec } from '../../src/index.js';
import { parseEntry } from '../../src/queue/events.js';
import { queueKeys } from '../../src/redis/keys.js';
import { readRuns } from '../fixtures/runs.js';
import { NodeProcess } from '../helpers/processes.js';
import { eventually, redisUrl, uniqueQueue } from '../helpers/setup.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Executors killed in the run. */
const KILLS = 4;

const script = new URL('../fixtures/batch-executor.ts', import.meta.url).pathname;

function executor(name: string): NodeProcess {
  const p = new NodeProcess(script, [], { REDIS_URL: redisUrl(), QUEUE: name, LEASE_MS: '1000', CONCURRENCY: '6' });
  cleanups.push(() => p.kill());
  return p;
}

const order = (e: QueueEvent) => e.streamId.split('-').map(Number) as [number, number];
const earlier = (a: QueueEvent, b: QueueEvent) => {
  const [x, y] = [order(a), order(b)];
  return x[0] < y[0] || (x[0] === y[0] && x[1] < y[1]);
};

describe('batch faults', () => {
  it('kill -9 of executors while a batch runs, grows from its own jobs and retries: each callback is submitted once, after every success', async () => {
    const name = uniqueQueue('batchfault');
    const client = new Redis(redisUrl());
    const q = new Queue(name, { connection: redisUrl(), maxEvents: 1_000_000 });
    cleanups.push(
      () => q.close(),
      () => client.disconnect(),
    );
    const procs = [executor(name), executor(name), executor(name)];
    await Promise.all(procs.map((p) => p.waitFor((m) => m.type === 'ready', 60_000)));
    const batch = await q.openBatch({ onComplete: { task: 'done' }, onSuccess: { task: 'done' } });
    const complete = `${batch.id}/complete`;
    const success = `${batch.id}/success`;

    let kills = 0;
    let done = false;
    const killer = (async () => {
      while (!done && kills < KILLS) {
        await new Promise((r) => setTimeout(r, 300 + Math.floor(Math.random() * 600)));
        if (done) break;
        const i = Math.floor(Math.random() * procs.length);
        await procs[i].kill();
        kills++;
        // (not waited for: the next kill may come while it starts)
        procs[i] = executor(name);
      }
    })();
    const ids: string[] = [];
    try {
      // jobs added over time while executors die (until half the kills are done); some fail
      // once; some add to the batch
      for (let round = 0; round < 12 && (round < 3 || kills < KILLS / 2); round++) {
        const specs: SubmitSpec[] = Array.from({ length: 25 }, (_, i) => ({
          task: 'work',
          args: { ms: 150, flaky: i % 5 === 0 },
        }));
        specs.push({ task: 'spawn', args: { n: 5 } });
        const jobs = await batch.submitBulk(specs);
        for (const j of jobs) {
          ids.push(j.id);
          if (j.task === 'spawn') for (let i = 0; i < 5; i++) ids.push(`${j.id}-${i}`);
        }
        await new Promise((r) => setTimeout(r, 400));
      }
      await batch.close();
      await eventually(async () => {
        const [c, s] = await Promise.all([q.getJob(complete), q.getJob(success)]);
        return c?.state === 'success' && s?.state === 'success';
      }, 120_000).catch(async (err: unknown) => {
        console.log('not done:', await q.counts(), await q.batch(batch.id));
        throw err;
      });
    } finally {
      done = true;
      await killer;
    }
    console.log(`batch faults: ${kills} executors killed`);
    expect(kills).toBeGreaterThanOrEqual(KILLS / 2);

    const total = ids.length;
    expect(await q.batch(batch.id)).toMatchObject({
      total,
      pending: 0,
      success: total,
      failed: 0,
      cancelled: 0,
      state: 'succeeded',
    });
    const jobs = await Promise.all(ids.map((id) => q.getJob(id)));
    expect(jobs.filter((j) => j?.state !== 'success' || j.batch !== batch.id)).toEqual([]);
    // nothing doubled: the queue holds these and the two callbacks
    const counts = await q.counts();
    expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(total + 2);
    const entries = (await client.xrange(queueKeys(name).events, '-', '+')) as Array<[string, string[]]>;
    const events = entries.flatMap(([sid, f]) => parseEntry(sid, f));
    const fired = events.filter((e) => e.event === 'batch.completed' || e.event === 'batch.succeeded');
    expect(fired.map((e) => e.event)).toEqual(['batch.completed', 'batch.succeeded']);
    // (the last success and the completion are one call: one stream entry)
    const successes = events.filter((e) => e.state === 'success' && !e.event && ids.includes(e.id));
    expect(successes.length).toBe(total);
    for (const s of successes) expect(earlier(fired[0], s), s.id).toBe(false);
    for (const cb of [complete, success]) {
      const entered = events.filter((e) => e.id === cb && e.state === 'waiting');
      expect(entered.length, cb).toBe(1);
      expect(earlier(entered[0], fired[0]), cb).toBe(false);
      expect((await q.getJob(cb))!.result, cb).toBe(total);
    }
    const runs = await readRuns(client, name);
    const reruns = ids.filter((id) => (runs.get(id)?.length ?? 0) > 1).length;
    console.log(`batch faults: ${reruns} of ${total} jobs ran more than once (retries, runs lost with their executor)`);
  }, 240_000);
});

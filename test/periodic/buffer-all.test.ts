/**
 * A buffer-all backlog drains at the executors' speed: the end of a run releases the next one
 * (the finish re-stages the backlog's turn and wakes the schedulers), not the next buffer poll.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PeriodicTasks, Scheduler, Worker } from '../../src/index.js';
import { closeAll, eventually, redisUrl, track, uniqueQueue } from '../helpers/setup.js';
import { sleep } from '../helpers/wait.js';

afterEach(closeAll);
const M = 60_000;

describe('buffer-all backlog', () => {
  it.each([
    ['plain runs', false],
    ['runs that fan out', true],
  ])('50 short %s drain within one buffer poll (60 s), in order, never two at once', async (_, fanOut) => {
    const name = uniqueQueue('bq');
    const tasks = track(new PeriodicTasks(name, { connection: redisUrl() }));
    await tasks.upsert({ id: 'm', task: 'm', timer: 'minutely' });
    const order: number[] = [];
    let running = 0;
    let most = 0;
    track(
      new Worker(
        name,
        {
          m: async (ctx) => {
            running += 1;
            most = Math.max(most, running);
            order.push(ctx.job.occurrence!);
            await sleep(20);
            if (fanOut) await ctx.fanOut([1], { task: 'child' });
            running -= 1;
          },
          child: async () => {
            running += 1;
            most = Math.max(most, running);
            await sleep(5);
            running -= 1;
          },
        },
        { connection: redisUrl(), concurrency: 4 },
      ),
    );
    // (a poll longer than the test: only the ends of runs can release the backlog)
    for (const id of ['s1', 's2']) await track(new Scheduler(name, { connection: redisUrl(), id, bufferPollMs: M })).start();
    const to = Math.floor(Date.now() / M) * M;
    const from = to - 50 * M;
    expect(await tasks.backfill('m', { from, to, overlap: 'buffer-all' })).toEqual({
      occurrences: 50,
      submitted: 50,
      alreadyRan: 0,
    });
    await eventually(
      async () => (await tasks.runs('m', { limit: 100 })).filter((x) => x.status === 'success').length === 50,
      40_000,
    );
    expect(order).toEqual(Array.from({ length: 50 }, (_, k) => from + k * M));
    expect(most).toBe(1);
  });
});

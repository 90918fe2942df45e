/**
 * Redis out of memory (maxmemory reached): an outcome Redis refused is kept and delivered again
 * while the lease holds, so the job is not run a second time; and the queue's reads still answer.
 */
import { describe, expect, it } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { privateRedis } from '../helpers/setup.js';

const own = privateRedis();

describe("delivery of a run's outcome", () => {
  it('is retried after Redis refused it (maxmemory reached), and the job runs once', async () => {
    const queue = new Queue('oom', { connection: own.server.url });
    let calls = 0;
    const refusals: Error[] = [];
    const worker = new Worker(
      'oom',
      {
        work: async () => {
          calls += 1;
          if (calls === 1) {
            // Redis runs out of memory while the job runs, and gets it back half a second later.
            await own.admin.config('SET', 'maxmemory', '1');
            setTimeout(() => void own.admin.config('SET', 'maxmemory', '0'), 500);
          }
          return `result of run ${calls}`;
        },
      },
      { connection: own.server.url, leaseMs: 3000 },
    );
    worker.on('error', (e) => refusals.push(e));
    try {
      const done = new Promise<void>((resolve) => worker.on('completed', () => resolve()));
      const job = await queue.submit({ task: 'work' });
      await done;
      const after = await queue.getJob(job.id);
      expect(after).toMatchObject({ state: 'success', result: 'result of run 1', retries: 0 });
      expect(calls).toBe(1);
      expect(refusals.some((e) => /OOM/.test(e.message))).toBe(true);
    } finally {
      await own.admin.config('SET', 'maxmemory', '0');
      await worker.close();
      await queue.close();
    }
  }, 30_000);
});

describe('reads while Redis refuses writes', () => {
  it('answer: counts, groups, jobs, a job, executors', async () => {
    const queue = new Queue('oom-reads', { connection: own.server.url });
    const worker = new Worker('oom-reads', { work: () => 'done' }, { connection: own.server.url });
    try {
      const done = new Promise<void>((resolve) => worker.on('completed', () => resolve()));
      const job = await queue.submit({ task: 'work', group: 'g1' });
      await done;
      // the executor stops before `later` is submitted, so `later` stays waiting
      await worker.close();
      await queue.submit({ task: 'work', group: 'g2', id: 'later' });
      // a fresh client, whose first calls (the schema check among them) meet the refusal
      const reader = new Queue('oom-reads', { connection: own.server.url });
      await own.admin.config('SET', 'maxmemory', '1');
      try {
        await expect(reader.submit({ task: 'work' })).rejects.toThrow(/OOM/);
        expect(await reader.counts()).toMatchObject({ success: 1, waiting: 1 });
        expect((await reader.groups()).map((g) => g.group).sort()).toEqual(['g2']);
        expect((await reader.getJob(job.id))?.state).toBe('success');
        expect((await reader.jobs({ state: 'waiting' })).map((j) => j.id)).toEqual(['later']);
        expect(await reader.workers()).toBeInstanceOf(Array);
      } finally {
        await own.admin.config('SET', 'maxmemory', '0');
        await reader.close();
      }
    } finally {
      await worker.close();
      await queue.close();
    }
  });
});

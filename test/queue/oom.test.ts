/**
 * Redis out of memory (maxmemory reached): a refused submit rejects with a RedisFullError and
 * writes nothing; an outcome Redis refused is kept and delivered again while the lease holds, so
 * the job is not run a second time, and the executor reports the refusal typed; and the queue's
 * reads still answer.
 */
import { describe, expect, it } from 'vitest';
import { Queue, RedisFullError, Worker } from '../../src/index.js';
import { privateRedis } from '../helpers/setup.js';

const own = privateRedis({ args: ['--maxmemory-policy', 'noeviction'] });

describe('a submit while Redis is full', () => {
  it('rejects, one or in bulk, with a RedisFullError naming the command and maxmemory, and writes nothing', async () => {
    const queue = new Queue('full', { connection: own.server.url });
    const used = () => own.admin.info('memory').then((i) => Number(/^used_memory:(\d+)/m.exec(i)![1]));
    try {
      await queue.submit({ task: 'work' }); // (the queue's schema and library in place)
      // a small maxmemory, filled by submits until Redis refuses one
      await own.admin.config('SET', 'maxmemory', String((await used()) + 2 * 1024 * 1024));
      const args = { blob: 'x'.repeat(64 * 1024) };
      let refused: unknown;
      for (let i = 0; i < 200 && !refused; i++) {
        await queue.submitBulk(Array.from({ length: 4 }, () => ({ task: 'work', args }))).catch((e: unknown) => {
          refused = e;
        });
      }
      expect(refused).toBeInstanceOf(RedisFullError);
      expect(refused).toMatchObject({ queue: 'full', command: 'FCALL submit' });
      expect((refused as Error).message).toMatch(
        /^Redis refused FCALL submit on queue "full": its memory is full \(used memory reached maxmemory, .*\); nothing was written\. .*\(Redis: OOM command not allowed/,
      );
      const { waiting } = await queue.counts();
      // (kept full: the memory a refused command's arguments held is freed after it)
      await own.admin.config('SET', 'maxmemory', '1');
      const one = await queue.submit({ id: 'one', task: 'work', args }).catch((e: unknown) => e);
      expect(one).toBeInstanceOf(RedisFullError);
      const bulk = await queue
        .submitBulk([
          { id: 'bulk-1', task: 'work' },
          { id: 'bulk-2', task: 'work' },
        ])
        .catch((e: unknown) => e);
      expect(bulk).toBeInstanceOf(RedisFullError);
      expect((await queue.counts()).waiting).toBe(waiting);
      expect(await own.admin.exists(queue.keys.job('one'), queue.keys.job('bulk-1'), queue.keys.job('bulk-2'))).toBe(0);
    } finally {
      await own.admin.config('SET', 'maxmemory', '0');
      await own.admin.flushall();
      await queue.close();
    }
  });
});

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
      expect(refusals.some((e) => e instanceof RedisFullError && e.command === 'FCALL finish')).toBe(true);
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
        await expect(reader.submit({ task: 'work' })).rejects.toThrow(RedisFullError);
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

/**
 * Jobs of a task their executor has no handler for: put back for the executors that have it
 * (no retry counted), and failed with UnknownTaskError only once no live executor of the queue
 * has had it for the grace (unknownTaskGraceMs), so that a pool split by task, or a rolling
 * deploy that adds a task, loses no job.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type Job, UnknownTaskError, ValidationError, Worker } from '../../src/index.js';
import { closeAll, eventually, openQueue, openWorker, rawClient, redisUrl, uniqueQueue } from '../helpers/setup.js';
import { sleep } from '../helpers/wait.js';

afterEach(closeAll);

describe('a job of a task its executor lacks', () => {
  it.each([1, 3])(
    'runs on the executor that has its task, none failing, with two executors of different tasks (%i shard(s))',
    async (shards) => {
      const name = uniqueQueue('unknown');
      const q = openQueue(name, { shards });
      const a = openWorker(name, { a: () => 'a' }, { concurrency: 10, shards });
      const b = openWorker(name, { b: () => sleep(20).then(() => 'b') }, { concurrency: 2, shards });
      await Promise.all([a.run(), b.run()]);
      const failed: Array<[Job, Error]> = [];
      const done = new Map<string, string>();
      let ended = () => {};
      const all = new Promise<void>((resolve) => (ended = () => done.size + failed.length === 10 && resolve()));
      for (const w of [a, b]) {
        w.on('failed', (job, err) => {
          failed.push([job, err]);
          ended();
        });
        w.on('completed', (job) => {
          done.set(job.id, w === b ? (job.worker ?? '') : 'a ran it');
          ended();
        });
      }
      const jobs = await q.submitBulk(Array.from({ length: 10 }, (_, i) => ({ task: 'b', group: `g${i}` })));
      await all;
      expect(failed).toEqual([]);
      expect([...done.values()]).toEqual(Array(10).fill(b.id));
      const read = await Promise.all(jobs.map((j) => q.getJob(j.id)));
      expect(read.map((j) => [j?.state, j?.retries])).toEqual(Array(10).fill(['success', 0]));
    },
  );

  it('fails with UnknownTaskError naming the task once no live executor has had it for the grace', async () => {
    const name = uniqueQueue('unknown');
    const q = openQueue(name);
    const a = openWorker(name, { a: () => 'a' }, { unknownTaskGraceMs: 300 });
    const failed = new Promise<[Job, Error]>((resolve) => a.on('failed', (job, err) => resolve([job, err])));
    const job = await q.submit({ task: 'missing' });
    const [ended, err] = await failed;
    expect(ended.id).toBe(job.id);
    expect(err).toBeInstanceOf(UnknownTaskError);
    expect(err.message).toContain('"missing"');
    const read = (await q.getJob(job.id))!;
    expect(read.state).toBe('failed');
    expect(read.retries).toBe(0);
    expect(read.error).toContain('unknown task "missing"');
    // (the queue's own clock: it waited the grace from the first pass, which came after the submit)
    expect(read.finished! - read.submitted).toBeGreaterThanOrEqual(300);
  });

  it('waits for an executor with the task that starts within the grace (a rolling deploy)', async () => {
    const name = uniqueQueue('unknown');
    const q = openQueue(name);
    // (the default grace, 5 minutes, outlasts the deploy)
    const a = openWorker(name, { a: () => 'a' });
    await a.run();
    const failed: Error[] = [];
    a.on('failed', (_job, e) => failed.push(e));
    const job = await q.submit({ task: 'b' });
    const c = rawClient();
    try {
      // executor A met it and found no live executor with the task: it waits in its grace
      await eventually(async () => (await c.hget(`{rota:${name}}:j:${job.id}`, 'unhandled')) !== null);
    } finally {
      c.disconnect();
    }
    const b = openWorker(name, { b: () => 'deployed' });
    const completed = new Promise<Job>((resolve) => b.on('completed', resolve));
    expect((await completed).id).toBe(job.id);
    const read = (await q.getJob(job.id))!;
    expect([read.state, read.result, read.retries, read.worker]).toEqual(['success', 'deployed', 0, b.id]);
    // (the passes' bookkeeping is the scripts' own, no field of the job)
    expect(Object.keys(read)).not.toContain('passes');
    expect(failed).toEqual([]);
  });

  it('refuses a grace that is not a whole number of ms from 0 to a day', () => {
    for (const bad of [-1, 1.5, 86_400_001, '5']) {
      expect(() => new Worker('q', {}, { connection: redisUrl(), unknownTaskGraceMs: bad as number, autorun: false })).toThrow(
        ValidationError,
      );
    }
    expect(() => new Worker('q', {}, { connection: redisUrl(), unknownTaskGraceMs: -1 })).toThrow(/unknownTaskGraceMs/);
  });
});

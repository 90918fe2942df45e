/**
 * Progress (ctx.progress): throttled per run by the executor, reported as worker `progress`
 * events and as `progress` events of Queue.events(), and kept in the job's `progress` field.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type QueueEvent, ValidationError, type Worker } from '../../src/index.js';
import { closeAll, openQueue, openWorker, uniqueQueue } from '../helpers/setup.js';
import { sleep } from '../helpers/wait.js';

afterEach(closeAll);
const completed = (w: Worker) => new Promise((resolve) => w.once('completed', resolve));

/** The progress events of job `id` on the queue's stream, read from its start until one carries `last`. */
async function streamProgress(q: ReturnType<typeof openQueue>, id: string, last: number): Promise<number[]> {
  const ac = new AbortController();
  const seen: number[] = [];
  for await (const e of q.events({ from: '0-0', signal: ac.signal }) as AsyncIterable<QueueEvent>) {
    if (e.event !== 'progress' || e.id !== id) continue;
    expect(e.state).toBe('running');
    seen.push(e.progress!);
    if (e.progress === last) ac.abort();
  }
  return seen;
}

describe('progress', () => {
  it('sends a tight loop of 100 updates twice: the first at once, the last when the run ends', async () => {
    const name = uniqueQueue('progress');
    const q = openQueue(name);
    const w = openWorker(
      name,
      {
        count: (ctx) => {
          for (let i = 1; i <= 100; i++) ctx.progress(i);
        },
      },
      { progressIntervalMs: 60_000 },
    );
    const reported: Array<[string, number, number | undefined]> = [];
    w.on('progress', (job, n) => reported.push([job.id, n, job.progress]));
    const job = await q.submit({ task: 'count' });
    await completed(w);
    expect(reported).toEqual([
      [job.id, 1, 1],
      [job.id, 100, 100],
    ]);
    expect(await streamProgress(q, job.id, 100)).toEqual([1, 100]);
    expect((await q.getJob(job.id))!.progress).toBe(100);
  });

  it('sends at most one update an interval, the newest value when it ends', async () => {
    const name = uniqueQueue('progress');
    const q = openQueue(name);
    const w = openWorker(
      name,
      {
        steps: async (ctx) => {
          for (let i = 1; i <= 50; i++) ctx.progress(i);
          // the interval (100 ms) ends during this wait: the newest value (50) goes then
          await sleep(150);
          for (let i = 51; i <= 100; i++) ctx.progress(i);
        },
      },
      { progressIntervalMs: 100 },
    );
    const reported: number[] = [];
    w.on('progress', (_job, n) => reported.push(n));
    const job = await q.submit({ task: 'steps' });
    await completed(w);
    expect(reported).toEqual([1, 50, 100]);
    expect(await streamProgress(q, job.id, 100)).toEqual([1, 50, 100]);
  });

  it('keeps the last progress of runs that end together, sent ahead of their outcomes', async () => {
    const name = uniqueQueue('progress-together');
    const q = openQueue(name);
    const jobs = await q.submitBulk(Array.from({ length: 200 }, (_, i) => ({ task: 'count', group: `g${i % 20}` })));
    let done = 0;
    const all = new Promise<void>((resolve) => {
      const w = openWorker(
        name,
        {
          // the first update goes at once, the last waits for the run's end (long interval)
          count: (ctx) => {
            ctx.progress(50);
            ctx.progress(100);
          },
        },
        { concurrency: 50, progressIntervalMs: 60_000 },
      );
      w.on('completed', () => {
        if (++done === jobs.length) resolve();
      });
    });
    await all;
    await closeAll();
    const read = await Promise.all(jobs.map((j) => openQueue(name).getJob(j.id)));
    expect(read.filter((j) => j?.progress !== 100).map((j) => [j?.id, j?.progress])).toEqual([]);
  });

  it('refuses a progress that is not a finite number', async () => {
    const name = uniqueQueue('progress');
    const q = openQueue(name);
    const errors: unknown[] = [];
    const w = openWorker(name, {
      bad: (ctx) => {
        for (const v of [Number.NaN, Infinity, '50' as unknown as number]) {
          try {
            ctx.progress(v);
          } catch (err) {
            errors.push(err);
          }
        }
      },
    });
    const job = await q.submit({ task: 'bad' });
    await completed(w);
    expect(errors.length).toBe(3);
    for (const e of errors) expect((e as ValidationError).field).toBe('progress');
    expect(errors[0]).toBeInstanceOf(ValidationError);
    expect((await q.getJob(job.id))!.progress).toBeUndefined();
  });
});

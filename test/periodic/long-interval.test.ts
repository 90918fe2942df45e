/** Periodic tasks whose interval is longer than Node's setTimeout takes: their default timebox is half of it. */
import { afterEach, describe, expect, it } from 'vitest';
import { type Job, PeriodicTasks, Queue, Scheduler, Worker } from '../../src/index.js';
import { closeAll, redisUrl, track, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);

describe('a 50-day interval', () => {
  it.each(['every 50d', 'P50D'])(
    '%s: a triggered run, timeboxed to 25 days, is not timed out at once and ends success',
    async (timer) => {
      const name = uniqueQueue('long');
      const tasks = track(new PeriodicTasks(name, { connection: redisUrl() }));
      const queue = track(new Queue(name, { connection: redisUrl() }));
      const t = await tasks.upsert({ id: 'rare', task: 'rare', timer });
      expect(t.maxRuntime).toBe(25 * 86_400_000);
      await track(new Scheduler(name, { connection: redisUrl() })).start();
      const w = track(
        new Worker(
          name,
          {
            rare: ({ signal }) =>
              new Promise<string>((resolve, reject) => {
                const timer = setTimeout(() => resolve('done'), 50);
                signal.addEventListener('abort', () => {
                  clearTimeout(timer);
                  reject(signal.reason);
                });
              }),
          },
          { connection: redisUrl() },
        ),
      );
      const ended = new Promise<Job>((resolve) => {
        w.once('completed', resolve);
        w.once('failed', resolve);
      });
      const trig = (await tasks.trigger('rare'))!;
      const job = await ended;
      expect([job.id, job.state, job.error]).toEqual([trig.jobId, 'success', undefined]);
      expect((await queue.getJob(trig.jobId))!.result).toBe('done');
      const run = (await tasks.runs('rare')).find((r) => r.jobId === trig.jobId);
      expect(run?.status).toBe('success');
    },
  );
});

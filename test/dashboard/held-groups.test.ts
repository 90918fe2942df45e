/**
 * The groups page lists every group with jobs in any state: a group whose jobs are all failed,
 * delayed, succeeded or cancelled has no record in the `groups` hash, and was missing. It is
 * listed from the first load (the held sweep's whole round) and, for a group that comes later,
 * from the sweep's steps in the reader's ticks.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardServer, serveDashboard } from '../../src/dashboard/index.js';
import { Worker } from '../../src/executor/worker.js';
import { Queue } from '../../src/queue/queue.js';
import { dashboardClient } from '../helpers/dashboard.js';
import { eventually, redisUrl, uniqueQueue } from '../helpers/setup.js';

describe('groups holding only delayed or finished jobs', () => {
  const name = uniqueQueue('held');
  let queue: Queue;
  let served: DashboardServer;
  const { get } = dashboardClient(() => served.url);
  const listed = async (group: string) => (await get('/groups?sort=group&dir=asc')).body.includes(`data-group="${group}"`);

  beforeAll(async () => {
    queue = new Queue(name, { connection: redisUrl() });
    const worker = new Worker(
      name,
      {
        ok: async () => 'ok',
        bad: async () => {
          throw new Error('no');
        },
      },
      { connection: redisUrl(), concurrency: 2 },
    );
    const failed = await queue.submit({ task: 'bad', group: 'only-failed', maxRetries: 0 });
    const done = await queue.submit({ task: 'ok', group: 'only-success' });
    await eventually(async () => (await queue.getJob(failed.id))?.state === 'failed');
    await eventually(async () => (await queue.getJob(done.id))?.state === 'success');
    await worker.close();
    await queue.submit({ task: 'ok', group: 'only-delayed', delay: 3_600_000 });
    const cancelled = await queue.submit({ task: 'ok', group: 'only-cancelled', delay: 3_600_000 });
    await queue.cancel(cancelled.id);
    served = await serveDashboard({ connection: redisUrl(), queues: [name], port: 0 });
  }, 30_000);

  afterAll(async () => {
    await served?.close();
    await queue?.close();
  });

  it('lists a group whose jobs are all failed, delayed, succeeded or cancelled', async () => {
    const body = (await get('/groups?sort=group&dir=asc')).body;
    for (const group of ['only-failed', 'only-delayed', 'only-success', 'only-cancelled']) {
      expect(body, group).toContain(`data-group="${group}"`);
    }
    expect(body).toContain('4 with jobs, runs or settings');
  });

  it('lists such a group that comes after the first load, from the ticks’ sweep', async () => {
    expect(await listed('later-delayed')).toBe(false);
    await queue.submit({ task: 'ok', group: 'later-delayed', delay: 3_600_000 });
    await eventually(() => listed('later-delayed'), 15_000);
  });
});

/** The dashboard's job page of a batch's job and of its callback: the batch's id, state and counts. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardServer, serveDashboard } from '../../src/dashboard/index.js';
import { Queue } from '../../src/queue/queue.js';
import { dashboardClient, textOf } from '../helpers/dashboard.js';
import { redisUrl, uniqueQueue } from '../helpers/setup.js';

describe('dashboard on a batch', () => {
  const name = uniqueQueue('dash-batch');
  let queue: Queue;
  let served: DashboardServer;
  const { get } = dashboardClient(() => served.url);

  beforeAll(async () => {
    queue = new Queue(name, { connection: redisUrl() });
    served = await serveDashboard({ connection: redisUrl(), queues: [name], port: 0 });
  });
  afterAll(async () => {
    await served?.close();
    await queue?.close();
  });

  it("shows a job's batch with its counts, and the callback's", async () => {
    const batch = await queue.openBatch({ onComplete: { task: 'done' } });
    const [a] = await batch.submitBulk([{ task: 'w' }, { task: 'w' }]);
    await queue.cancel(a.id);
    const text = textOf((await get(`/jobs/${encodeURIComponent(a.id)}`)).body);
    expect(text).toMatch(
      new RegExp(`batch\\s+${batch.id.replace('.', '\\.')}\\s+open: 2 jobs, 1 pending, 0 success, 0 failed, 1 cancelled`),
    );
    await queue.cancel((await batch.jobs()).items[1].id);
    await batch.close();
    const cb = textOf((await get(`/jobs/${encodeURIComponent(`${batch.id}/complete`)}`)).body);
    expect(cb).toMatch(/batch\s+\S+\s+completed: 2 jobs, 0 pending, 0 success, 0 failed, 2 cancelled/);
  });
});

/**
 * A periodic task's page shows its run history in the task's zone, as its next runs, and says
 * which zone: a run triggered and run by a real executor, its times read on the page.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardServer, serveDashboard } from '../../src/dashboard/index.js';
import { zoned } from '../../src/dashboard/views/periodic.js';
import { Worker } from '../../src/executor/worker.js';
import { Scheduler } from '../../src/periodic/scheduler.js';
import { PeriodicTasks } from '../../src/periodic/tasks.js';
import { dashboardClient, textOf } from '../helpers/dashboard.js';
import { eventually, redisUrl, uniqueQueue } from '../helpers/setup.js';

describe('a periodic task’s history in its zone', () => {
  const name = uniqueQueue('zone');
  let tasks: PeriodicTasks;
  let worker: Worker;
  let scheduler: Scheduler;
  let served: DashboardServer;
  const { get } = dashboardClient(() => served.url);

  beforeAll(async () => {
    tasks = new PeriodicTasks(name, { connection: redisUrl() });
    worker = new Worker(name, { report: async () => 'ok' }, { connection: redisUrl() });
    await tasks.upsert({ id: 'tokyo', task: 'report', timer: '*-*-* 04:00', timezone: 'Asia/Tokyo' });
    // (the scheduler keeps the runs' history)
    scheduler = new Scheduler(name, { connection: redisUrl() });
    await scheduler.start();
    served = await serveDashboard({ connection: redisUrl(), queues: [name], port: 0 });
  });

  afterAll(async () => {
    await served?.close();
    await scheduler?.close();
    await worker?.close();
    await tasks?.close();
  });

  it('shows the planned, started and finished times in the task’s zone', async () => {
    await tasks.trigger('tokyo');
    const [run] = await eventually(async () => {
      const runs = await tasks.runs('tokyo');
      return runs[0]?.finished !== undefined && runs;
    });
    const text = textOf((await get('/periodic/tokyo')).body);
    expect(text).toContain('Run history 1 · times in Asia/Tokyo');
    const row = text.slice(text.indexOf('error ') + 6);
    for (const at of [run.occurrence, run.started!, run.finished!]) {
      const wall = zoned(at, 'Asia/Tokyo').slice(0, 19);
      expect(row).toContain(wall);
      // (nine hours ahead of UTC, the history's zone before)
      expect(new Date(at).toISOString().slice(11, 13)).not.toBe(wall.slice(11, 13));
    }
  });
});

/**
 * The periodic page at 5,000 tasks: it shows a page of tasks at a time, paged through the task
 * index, so that one GET sends Redis a bounded number of commands however many tasks there are
 * (counted by Redis itself, `INFO commandstats`; a script's commands count too), and walking
 * its `next →` links shows every task. Half the tasks have the `allow` overlap policy and a run
 * history of 20 entries, the costliest to read (no recorded last job: its newest runs' states).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardServer, serveDashboard } from '../../src/dashboard/index.js';
import { MOST_TASKS_PAGE } from '../../src/dashboard/views/periodic.js';
import { PeriodicTasks } from '../../src/periodic/tasks.js';
import { dashboardClient } from '../helpers/dashboard.js';
import { privateRedis, uniqueQueue } from '../helpers/setup.js';

const TASKS = 5000;
/** The per-request budget docs/dashboard.md promises (about 4,000 commands at most). */
const BUDGET = 4000;

const redis = privateRedis();

/** Commands Redis ran during `fn` (INFO commandstats), less those of the measuring itself. */
async function commandsDuring<T>(fn: () => Promise<T>): Promise<{ total: number; value: T }> {
  await redis.admin.config('RESETSTAT');
  const value = await fn();
  const info = await redis.admin.info('commandstats');
  let total = 0;
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (m[1] !== 'info' && m[1] !== 'config|resetstat') total += Number(m[2]);
  }
  return { total, value };
}

/** The task ids of a periodic page's table. */
function taskIds(body: string): string[] {
  return [...body.matchAll(/<tr data-task="([^"]+)">/g)].map((m) => m[1]);
}

/** The `next →` link of a periodic page, if any. */
function nextLink(body: string): string | undefined {
  return /<nav class="pager"><a href="([^"]+)">next →<\/a>/.exec(body)?.[1].replace(/&amp;/g, '&');
}

describe(`the periodic page at ${TASKS} tasks`, () => {
  const name = uniqueQueue('periodic-paging');
  let tasks: PeriodicTasks;
  let served: DashboardServer;
  const ids: string[] = [];
  const { get } = dashboardClient(() => served.url);

  beforeAll(async () => {
    tasks = new PeriodicTasks(name, { connection: redis.server.url });
    for (let i = 0; i < TASKS; i++) ids.push(`task-${String(i).padStart(5, '0')}`);
    for (let i = 0; i < TASKS; i += 250) {
      await Promise.all(
        ids
          .slice(i, i + 250)
          .map((id, k) => tasks.upsert({ id, task: 'report', timer: 'hourly', overlap: (i + k) % 2 ? 'allow' : 'skip' })),
      );
    }
    // A run history of 20 entries for each `allow` task (its page reads their states).
    const pipe = redis.admin.pipeline();
    ids.forEach((id, i) => {
      if (i % 2) pipe.zadd(`{rota:${name}}:p:h:${id}`, ...Array.from({ length: 20 }, (_, r) => [r, `${id}@${r}`]).flat());
    });
    await pipe.exec();
    served = await serveDashboard({ connection: redis.server.url, queues: [name], port: 0 });
    expect((await get('/periodic')).status).toBe(200);
    // (the reader's own ticks stop: the counts below are the requests')
    served.handler.reader.close();
  }, 120_000);

  afterAll(async () => {
    await served?.close();
    await tasks?.close();
  });

  it('sends a bounded number of commands per page, whatever its parameters', async () => {
    for (const path of [
      '/periodic',
      `/periodic?limit=${MOST_TASKS_PAGE}`,
      '/periodic?limit=1000000000',
      '/periodic?limit=-5&start=99999999999999999999.999999',
      '/periodic?start=18446744073709551615.0&limit=1e9',
      '/periodic?start=12345.67&limit=100',
      '/periodic?start=not-a-cursor',
    ]) {
      const { total, value } = await commandsDuring(() => get(path));
      expect(value.status, path).toBe(200);
      expect(taskIds(value.body).length, path).toBeLessThanOrEqual(MOST_TASKS_PAGE);
      expect(total, path).toBeLessThanOrEqual(BUDGET);
    }
  });

  it('reaches every task through its next links, each page within the budget', async () => {
    const seen = new Set<string>();
    let path: string | undefined = `/periodic?limit=${MOST_TASKS_PAGE}`;
    let pages = 0;
    let most = 0;
    while (path !== undefined) {
      const at = path;
      const { total, value } = await commandsDuring(() => get(at));
      expect(value.status, at).toBe(200);
      expect(total, at).toBeLessThanOrEqual(BUDGET);
      most = Math.max(most, total);
      const onPage = taskIds(value.body);
      expect(onPage.length, at).toBeLessThanOrEqual(MOST_TASKS_PAGE);
      // (each page sorted by id)
      expect(onPage, at).toEqual([...onPage].sort());
      for (const id of onPage) seen.add(id);
      path = nextLink(value.body);
      if (path !== undefined) path = path.replace(/^.*?\/periodic/, '/periodic');
      expect(++pages, 'pages').toBeLessThanOrEqual(2 * (TASKS / MOST_TASKS_PAGE) + 10);
    }
    expect(seen.size).toBe(TASKS);
    expect([...seen].sort()).toEqual(ids);
    // (the total is the index's)
    expect((await get('/periodic')).body).toContain(`Periodic tasks <small>5,000</small>`);
  });

  it('finds a task by id', async () => {
    const r = await get('/periodic?id=task-04321');
    expect(r.status).toBe(303);
    expect(r.headers.get('location')).toBe('/periodic/task-04321');
  });
});

/**
 * The dashboard in a real browser (Debian's chromium driven by playwright-core): every page opens
 * without a script error or a CSP violation; pause, resume, cancel, retry and trigger clicked on
 * the pages change Redis, and so does a group's rate set in its form; a hostile group name shows
 * as text; counts update without a reload.
 */
import type { Redis } from 'ioredis';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardServer, serveDashboard } from '../../src/dashboard/index.js';
import { Worker } from '../../src/executor/worker.js';
import { PeriodicTasks } from '../../src/periodic/tasks.js';
import { Queue } from '../../src/queue/queue.js';
import { hasChromium, launchChromium, openPage } from '../helpers/browser.js';
import { eventually, rawClient, redisUrl, uniqueQueue } from '../helpers/setup.js';

const HOSTILE = `<img src=x onerror="window.__xss=1">"'&`;

describe.skipIf(!hasChromium)('dashboard in a browser', () => {
  const name = uniqueQueue('dash');
  let browser: Browser;
  let server: DashboardServer;
  let queue: Queue;
  let tasks: PeriodicTasks;
  let redis: Redis;
  let failedId: string;
  let waitingId: string;
  const problems: string[] = [];

  beforeAll(async () => {
    redis = rawClient();
    queue = new Queue(name, { connection: redisUrl() });
    tasks = new PeriodicTasks(name, { connection: redisUrl() });
    // A job that fails for good, run by an executor that then stops.
    const worker = new Worker(
      name,
      {
        boom: async () => {
          throw new Error('it broke <b>badly</b>');
        },
      },
      { connection: redisUrl() },
    );
    const failed = await queue.submit({ task: 'boom', group: 'ops', maxRetries: 0 });
    failedId = failed.id;
    await eventually(async () => (await queue.getJob(failedId))?.state === 'failed', 30_000);
    await worker.close();
    waitingId = (await queue.submit({ task: 'mail', group: 'g1', args: { to: 'a@example.com' } })).id;
    await queue.submit({ task: 'mail', group: HOSTILE, args: { note: '</pre><script>window.__xss=2</script>' } });
    await tasks.upsert({ id: 'nightly', task: 'mail', timer: '*-*-* 04:00', timezone: 'Europe/Paris' });
    server = await serveDashboard({ connection: redisUrl(), queues: [name], port: 0 });
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await queue?.close();
    await tasks?.close();
    redis?.disconnect();
  });

  /** Opens a page of the dashboard, recording script errors and console errors (CSP violations among them). */
  const open = (path: string): Promise<Page> => openPage(browser, server.url, path, problems);

  it('opens every page without a script error or a CSP violation', async () => {
    const paths = ['/', '/groups', '/jobs', `/jobs/${failedId}`, '/executors', '/periodic', '/periodic/nightly'];
    for (const path of paths) {
      const page = await open(path);
      await expect(page.locator('main h1').first().isVisible()).resolves.toBe(true);
      await page.close();
    }
    expect(problems).toEqual([]);
  });

  it('shows the job detail: args, error with stack, timeline', async () => {
    const page = await open(`/jobs/${failedId}`);
    await expect(page.locator('pre.error').textContent()).resolves.toContain('it broke <b>badly</b>');
    await expect(page.locator('ol.timeline').textContent()).resolves.toMatch(/submitted[\s\S]*started[\s\S]*finished/);
    await page.close();
  });

  it('pauses and resumes a group with its buttons', async () => {
    const page = await open('/groups?group=g1');
    await page.click('button[data-action="group/pause"]');
    await eventually(async () => (await queue.groups()).find((g) => g.group === 'g1')?.paused === true);
    await page.waitForSelector('button[data-action="group/resume"]');
    await page.click('button[data-action="group/resume"]');
    await eventually(async () => (await queue.groups()).find((g) => g.group === 'g1')?.paused === false);
    await page.close();
  });

  it("sets and lifts a group's rate limit with its form", async () => {
    const page = await open('/groups?group=g1');
    await page.fill('tr[data-group="g1"] input[name="rate"]', '5/2s');
    await page.click('tr[data-group="g1"] button[data-action="group/settings"]');
    await eventually(async () => (await queue.groups()).find((g) => g.group === 'g1')?.rate?.perMs === 2000);
    expect((await queue.groups()).find((g) => g.group === 'g1')?.rate).toEqual({ max: 5, perMs: 2000 });
    await page.waitForSelector('tr[data-group="g1"] td.rate:text("5/2s")');
    await page.fill('tr[data-group="g1"] input[name="rate"]', '');
    await page.click('tr[data-group="g1"] button[data-action="group/settings"]');
    await eventually(async () => (await queue.groups()).find((g) => g.group === 'g1')?.rate === null);
    await page.close();
  });

  it('cancels a waiting job, then retries it', async () => {
    const page = await open(`/jobs/${waitingId}`);
    await page.click('button[data-action="job/cancel"]');
    await eventually(async () => (await queue.getJob(waitingId))?.state === 'cancelled');
    await page.waitForSelector('button[data-action="job/retry"]');
    await page.click('button[data-action="job/retry"]');
    await eventually(async () => (await queue.getJob(waitingId))?.state === 'waiting');
    await page.close();
  });

  it('retries a failed job', async () => {
    const page = await open(`/jobs/${failedId}`);
    await page.click('button[data-action="job/retry"]');
    await eventually(async () => (await queue.getJob(failedId))?.state === 'waiting');
    await page.close();
  });

  it('triggers, disables and enables a periodic task', async () => {
    const page = await open('/periodic');
    const row = page.locator('tr[data-task="nightly"]');
    await row.locator('button[data-action="periodic/trigger"]').click();
    await eventually(async () => Boolean(await redis.hget(tasks.keys.task('nightly'), 'triggered')));
    await page.locator('tr[data-task="nightly"] button[data-action="periodic/disable"]').click();
    await eventually(async () => (await tasks.get('nightly'))?.enabled === false);
    await page.locator('tr[data-task="nightly"] button[data-action="periodic/enable"]').click();
    await eventually(async () => (await tasks.get('nightly'))?.enabled === true);
    await page.close();
  });

  it('shows a hostile group name and args as text', async () => {
    const page = await open('/groups');
    const cell = page.locator('td.name', { hasText: '<img src=x' });
    await expect(cell.textContent()).resolves.toBe(HOSTILE);
    await expect(page.locator('main img').count()).resolves.toBe(0);
    const jobs = await open(`/jobs?state=waiting&group=${encodeURIComponent(HOSTILE)}`);
    await jobs.locator('table.jobs a').first().click();
    await expect(jobs.locator('pre.args').textContent()).resolves.toContain('<script>window.__xss=2</script>');
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    expect(await jobs.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    await page.close();
    await jobs.close();
  });

  it('refuses a POST from the page without the CSRF value', async () => {
    const page = await open('/groups');
    const status = await page.evaluate(async () => {
      const r = await fetch('actions/group/pause', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'group=g1',
      });
      return r.status;
    });
    expect(status).toBe(403);
    expect((await queue.groups()).find((g) => g.group === 'g1')?.paused).toBe(false);
    await page.close();
  });

  it('updates counts and tables without a reload', async () => {
    const page = await open('/');
    const before = Number((await page.locator('header [data-count="waiting"]').textContent())!.replace(/,/g, ''));
    await queue.submitBulk(Array.from({ length: 7 }, () => ({ task: 'mail', group: 'live' })));
    await page.waitForFunction(
      (n) => Number(document.querySelector('header [data-count="waiting"]')?.textContent?.replace(/,/g, '')) === n,
      before + 7,
      { timeout: 20_000 },
    );
    const groups = await open('/groups?sort=group&dir=asc');
    await queue.submit({ task: 'mail', group: 'aaa-arrived-later' });
    await groups.waitForSelector('tr[data-group="aaa-arrived-later"]', { timeout: 30_000 });
    await page.close();
    await groups.close();
  });
});

/**
 * The job actions in a real browser (Debian's chromium driven by playwright-core): delete and run
 * now on a job's page; retry, cancel, run now and delete of the selected jobs, of a page, and of
 * every job matching the filter (5,000 of them) after a confirmation page; clean of a state after
 * one; the message each answers; a hostile job id shown as text; the CSRF check on every new POST.
 */
import type { Redis } from 'ioredis';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardServer, serveDashboard } from '../../src/dashboard/index.js';
import { Queue } from '../../src/queue/queue.js';
import { hasChromium, launchChromium, openPage } from '../helpers/browser.js';
import { rawClient, redisUrl, uniqueQueue } from '../helpers/setup.js';
import { finishRuns, settings, storeOf, takeRuns } from '../helpers/store.js';

const HOSTILE = `<img src=x onerror="window.__xss=1">"'&`;

describe.skipIf(!hasChromium)('job actions in a browser', () => {
  const name = uniqueQueue('dash-act');
  let browser: Browser;
  let server: DashboardServer;
  let queue: Queue;
  let redis: Redis;
  const problems: string[] = [];

  beforeAll(async () => {
    redis = rawClient();
    queue = new Queue(name, { connection: redisUrl() });
    server = await serveDashboard({ connection: redisUrl(), queues: [name], port: 0 });
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await queue?.close();
    redis?.disconnect();
  });

  const open = (path: string): Promise<Page> => openPage(browser, server.url, path, problems);

  /** The message the page shows after an action. */
  const flash = (page: Page) => page.locator('p.flash').textContent();

  /** Fails every waiting job of group `group` for good, as an executor would. */
  async function failAll(n: number): Promise<void> {
    const store = storeOf(redis, name);
    for (let left = n; left > 0; ) {
      const runs = await takeRuns(store, 1000, settings('exec-act'));
      await finishRuns(
        store,
        runs.map(([id, token]) => [id, token, '+p', 'boom']),
        settings('exec-act'),
      );
      left -= runs.length;
    }
  }

  it('deletes a job and runs a delayed one now from their pages, and says so', async () => {
    await queue.submit({ id: 'to-delete', task: 'mail', group: 'one' });
    await queue.submit({ id: 'later', task: 'mail', group: 'one', delay: 3_600_000 });
    const page = await open('/jobs/to-delete');
    page.on('dialog', (d) => d.accept());
    await page.click('button[data-action="job/delete"]');
    await page.waitForURL(/\/jobs\?state=waiting/);
    expect(await flash(page)).toBe('Job to-delete deleted.');
    expect(await queue.getJob('to-delete')).toBeNull();
    expect(await redis.exists(queue.keys.job('to-delete'), queue.keys.logs('to-delete'))).toBe(0);

    await page.goto(new URL('jobs/later', server.url).href);
    expect(await page.locator('button[data-action="job/delete"]').count()).toBe(1);
    await page.click('button[data-action="job/promote"]');
    await page.waitForSelector('p.flash');
    expect(await flash(page)).toBe('Job later runs now: it is first in line in its group.');
    expect((await queue.getJob('later'))?.state).toBe('waiting');
    // The message is shown once.
    await page.reload();
    expect(await page.locator('p.flash').count()).toBe(0);
    await page.close();
  });

  it('offers no delete for a running job', async () => {
    await queue.submit({ id: 'busy', task: 'mail', group: 'busy-group' });
    const store = storeOf(redis, name);
    // (the take visits groups in turn: take until it handed out this one)
    for (let i = 0; i < 10 && (await queue.getJob('busy'))?.state === 'waiting'; i++)
      await takeRuns(store, 1, settings('exec-busy'));
    expect((await queue.getJob('busy'))?.state).toBe('scheduled');
    const page = await open('/jobs/busy');
    expect(await page.locator('button[data-action="job/delete"]').count()).toBe(0);
    expect(await page.locator('button[data-action="job/cancel"]').count()).toBe(1);
    await page.close();
  });

  it('cancels the selected jobs, and says how many and which were left', async () => {
    await queue.submitBulk(['s1', 's2', 's3'].map((id) => ({ id, task: 'mail', group: 'sel' })));
    const page = await open('/jobs?state=waiting&group=sel');
    await page.check('input[form="bulk"][value="s1"]');
    await page.check('input[form="bulk"][value="s3"]');
    // s3 is cancelled while the page is open: it is no longer waiting, and is left.
    await queue.cancel('s3');
    await page.click('button[data-bulk="cancel"]');
    await page.waitForSelector('p.flash');
    expect(await flash(page)).toBe('Cancelled 1 job; 1 was cancelled and was left.');
    expect((await queue.getJob('s1'))?.state).toBe('cancelled');
    expect((await queue.getJob('s2'))?.state).toBe('waiting');
    expect((await queue.getJob('s3'))?.state).toBe('cancelled');
    await page.close();
  });

  it('runs a page of delayed jobs now with "select page", and a page through its scope', async () => {
    await queue.submitBulk(
      Array.from({ length: 4 }, (_, i) => ({ id: `d${i}`, task: 'mail', group: 'later', delay: 3_600_000 })),
    );
    const page = await open('/jobs?state=delayed&group=later');
    await page.check('input[data-select-page]');
    expect(await page.locator('input[form="bulk"]:checked').count()).toBe(4);
    await page.click('button[data-bulk="promote"]');
    await page.waitForSelector('p.flash');
    expect(await flash(page)).toBe('Promoted 4 jobs to the front of waiting.');
    expect((await queue.jobs({ state: 'delayed', group: 'later' })).length).toBe(0);

    await queue.submitBulk(
      Array.from({ length: 3 }, (_, i) => ({ id: `e${i}`, task: 'mail', group: 'later', delay: 3_600_000 })),
    );
    await page.goto(new URL('jobs?state=delayed&group=later', server.url).href);
    await page.selectOption('select[name="scope"]', 'page');
    await page.click('button[data-bulk="delete"]');
    await page.waitForSelector('p.flash');
    expect(await flash(page)).toBe('Deleted 3 jobs.');
    await page.close();
  });

  it('deletes all 5,000 jobs matching the filter after a confirmation page', async () => {
    await queue.submitBulk(Array.from({ length: 5000 }, (_, i) => ({ task: i % 2 ? 'mail' : 'sms', group: 'bulk' })));
    await queue.submit({ task: 'mail', group: 'kept' });
    const page = await open('/jobs?state=waiting&group=bulk');
    await page.selectOption('select[name="scope"]', 'all');
    await page.click('button[data-bulk="delete"]');
    // The first post only asks.
    await page.waitForSelector('main.confirm');
    expect(await page.locator('p.question').textContent()).toContain('Delete all the waiting jobs of group “bulk”');
    expect((await queue.groups()).find((g) => g.group === 'bulk')?.waiting).toBe(5000);
    await page.click('button[data-action="confirm"]');
    await page.waitForSelector('p.flash', { timeout: 60_000 });
    expect(await flash(page)).toBe('Deleted 5,000 jobs.');
    expect((await queue.groups()).find((g) => g.group === 'bulk')?.waiting ?? 0).toBe(0);
    expect((await queue.jobs({ state: 'waiting', group: 'kept' })).length).toBe(1);
    await page.close();
  });

  it('retries every failed job and cleans a state, each after a confirmation', async () => {
    await queue.submitBulk(Array.from({ length: 30 }, () => ({ task: 'mail', group: 'oops' })));
    // (every waiting job so far fails: the counts below are the failed set's)
    const waiting = (await queue.counts()).waiting;
    await failAll(waiting);
    const failed = (await queue.counts()).failed;
    const page = await open('/jobs?state=failed');
    await page.selectOption('select[name="scope"]', 'all');
    await page.click('button[data-bulk="retry"]');
    await page.click('button[data-action="confirm"]');
    await page.waitForSelector('p.flash');
    expect(await flash(page)).toBe(`Put ${failed.toLocaleString('en-US')} jobs back as waiting.`);

    await failAll(failed);
    await page.goto(new URL('jobs?state=failed', server.url).href);
    await page.click('button[data-action="jobs/clean"]');
    await page.waitForSelector('main.confirm');
    expect((await queue.counts()).failed).toBe(failed);
    // "No" goes back, and nothing is removed.
    await page.click('a.cancel-confirm');
    await page.waitForURL(/state=failed/);
    expect((await queue.counts()).failed).toBe(failed);
    await page.click('button[data-action="jobs/clean"]');
    await page.click('button[data-action="confirm"]');
    await page.waitForSelector('p.flash');
    expect(await flash(page)).toBe(`Cleaned ${failed} failed jobs.`);
    expect((await queue.counts()).failed).toBe(0);
    await page.close();
  });

  it('shows a hostile job id and group as text in the list, the confirmation and the message', async () => {
    await queue.submit({ id: HOSTILE, task: 'mail', group: HOSTILE });
    const page = await open(`/jobs?state=waiting&group=${encodeURIComponent(HOSTILE)}`);
    expect(await page.locator(`input[form="bulk"]`).first().getAttribute('value')).toBe(HOSTILE);
    await page.selectOption('select[name="scope"]', 'all');
    await page.click('button[data-bulk="cancel"]');
    await page.waitForSelector('main.confirm');
    expect(await page.locator('p.question').textContent()).toContain(HOSTILE);
    await page.click('a.cancel-confirm');
    await page.check('input[form="bulk"]');
    await page.click('button[data-bulk="delete"]');
    await page.waitForSelector('p.flash');
    expect(await flash(page)).toBe('Deleted 1 job.');
    await page.goto(new URL(`jobs/${encodeURIComponent('x<b>y')}`, server.url).href);
    await queue.submit({ id: 'x<b>y', task: 'mail', group: 'g' });
    await page.reload();
    page.on('dialog', (d) => d.accept());
    await page.click('button[data-action="job/delete"]');
    await page.waitForSelector('p.flash');
    expect(await flash(page)).toBe('Job x<b>y deleted.');
    expect(await page.locator('p.flash b').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    await page.close();
    expect(problems).toEqual([]);
  });

  it('refuses every new action posted without the CSRF value, and a confirmed one too', async () => {
    await queue.submit({ id: 'guarded', task: 'mail', group: 'guard' });
    const page = await open('/jobs?state=waiting');
    const statuses = await page.evaluate(async () => {
      const post = (path: string, body: string) =>
        fetch(path, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body }).then(
          (r) => r.status,
        );
      return [
        await post('actions/job/delete', 'id=guarded'),
        await post('actions/job/promote', 'id=guarded'),
        await post('actions/jobs/bulk', 'op=delete&state=waiting&scope=all&confirm=yes'),
        await post('actions/jobs/bulk', 'op=delete&state=waiting&scope=selected&id=guarded'),
        await post('actions/jobs/clean', 'state=failed&confirm=yes'),
      ];
    });
    expect(statuses).toEqual([403, 403, 403, 403, 403]);
    expect((await queue.getJob('guarded'))?.state).toBe('waiting');
    await page.close();
  });
});

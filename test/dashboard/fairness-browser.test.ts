/**
 * The groups page in a real browser (Debian's chromium): the fairness view shows the window the
 * operator chooses (last minute, 15 minutes, hour) from the per-group history, so a burst before
 * the newest runs stays in view; names never wrap mid-word (one line, cut, the whole name in the
 * tooltip); a hostile window parameter reads as the default, and a window's read is bounded.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAIRNESS_FIELDS } from '../../src/dashboard/fairness.js';
import { type DashboardServer, serveDashboard } from '../../src/dashboard/index.js';
import { minuteOf } from '../../src/redis/history.js';
import { HistoryStore } from '../../src/redis/history-store.js';
import { queueKeys } from '../../src/redis/keys.js';
import { QueueStore } from '../../src/redis/queue-store.js';
import { hasChromium, launchChromium, openPage } from '../helpers/browser.js';
import { closeAll, openQueue, rawClient, redisUrl, uniqueQueue } from '../helpers/setup.js';

const LONG = 'tenant-p1-with-a-name-long-enough-to-need-several-lines-in-a-narrow-column';

describe.skipIf(!hasChromium)('the fairness window and names', () => {
  const name = uniqueQueue('fair');
  const redis = rawClient();
  let server: DashboardServer;
  let browser: Browser;

  beforeAll(async () => {
    const keys = queueKeys(name);
    const store = new QueueStore(redis, name, { maxEvents: 100 });
    await store.ready();
    const [sec] = await redis.time();
    const minute = minuteOf(Number(sec) * 1000);
    // A burst 10 minutes ago (in the 15-minute and hour windows), runs 40 minutes ago (the hour's only).
    await redis.hincrby(keys.historyGroups(minute - 10), 'burst', 900);
    await redis.hincrby(keys.historyGroups(minute - 40), 'hourly', 50);
    // Runs now, through the script an executor sends its counts with: the long-named group's.
    await store.addGroupHistory([LONG, '10']);
    // (a waiting job of the long-named group, so the groups table lists it too)
    await openQueue(name).submit({ task: 'mail', group: LONG });
    server = await serveDashboard({ connection: redisUrl(), queues: [name], port: 0 });
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await closeAll();
    redis.disconnect();
  });

  it('shows the chosen window, and keeps names on one line with their tooltip', async () => {
    const problems: string[] = [];
    const page = await openPage(browser, server.url, '/groups', problems);
    await page.setViewportSize({ width: 900, height: 900 });
    const shares = () =>
      page.$$eval('section.fairness tr[data-share]', (rows) =>
        rows.map((r) => [r.getAttribute('data-share'), r.querySelector('td:last-child')!.textContent]),
      );
    // The default window: the last 15 minutes.
    expect(await page.getAttribute('section.fairness', 'data-window')).toBe('15m');
    expect(await shares()).toEqual([
      ['burst', '900'],
      [LONG, '10'],
    ]);
    await page.click('section.fairness a[data-fair="1m"]');
    await page.waitForSelector('section.fairness[data-window="1m"]');
    expect(await shares()).toEqual([[LONG, '10']]);
    await page.click('section.fairness a[data-fair="1h"]');
    await page.waitForSelector('section.fairness[data-window="1h"]');
    expect(await shares()).toEqual([
      ['burst', '900'],
      ['hourly', '50'],
      [LONG, '10'],
    ]);
    expect(await page.textContent('section.fairness h2')).toMatch(
      /share of the 960 runs that ended in the last (6[01]|[12]) (min|h)/,
    );

    // Every name is one line, cut to its column, the whole name in its title.
    for (const selector of [`tr[data-group="${LONG}"] span.name`, `tr[data-share="${LONG}"] span.name`]) {
      const box = await page.$eval(selector, (el) => {
        const s = getComputedStyle(el);
        return {
          title: el.getAttribute('title'),
          text: el.textContent,
          lines: Math.round(el.getBoundingClientRect().height / Number.parseFloat(s.lineHeight || '16')),
          cut: el.scrollWidth > el.clientWidth,
        };
      });
      expect(box, selector).toEqual({ title: LONG, text: LONG, lines: 1, cut: true });
    }
    expect(problems).toEqual([]);
    await page.close();
  });

  it('reads a hostile window parameter as the default, echoing nothing', async () => {
    for (const fair of ['<script>x</script>', '__proto__', 'constructor', '1m '.repeat(1000)]) {
      const body = await (await fetch(`${server.url}groups?fair=${encodeURIComponent(fair)}`)).text();
      expect(body).toContain('<section class="fairness" data-window="15m">');
      expect(body).not.toContain('<script>x</script>');
    }
  });

  it('bounds the fields a window reads, and says when the shares are of a part', async () => {
    const crowded = uniqueQueue('crowd');
    const keys = queueKeys(crowded);
    const store = new QueueStore(redis, crowded, { maxEvents: 100 });
    await store.ready();
    const [sec] = await redis.time();
    const minute = minuteOf(Number(sec) * 1000);
    const groups = FAIRNESS_FIELDS + 10_000;
    for (let i = 0; i < groups; i += 5000) {
      const pipe = redis.pipeline();
      for (let k = i; k < Math.min(groups, i + 5000); k++) pipe.hset(keys.historyGroups(minute - 1), `g${k}`, 1);
      await pipe.exec();
    }
    const read = await new HistoryStore(store).groupMinutes(minute - 1, minute, FAIRNESS_FIELDS);
    expect(read.complete).toBe(false);
    expect(read.counts.size).toBeLessThan(groups);
    expect(read.counts.size).toBeGreaterThan(FAIRNESS_FIELDS / 2);
    const all = await new HistoryStore(store).groupMinutes(minute - 1, minute, 2 * groups);
    expect(all).toMatchObject({ complete: true });
    expect(all.counts.size).toBe(groups);
    const crowdServer = await serveDashboard({ connection: redisUrl(), queues: [crowded], port: 0 });
    try {
      // The 15-minute window: still holds the crowded minute if the clock turns a minute meanwhile.
      const body = await (await fetch(`${crowdServer.url}groups?fair=15m`)).text();
      expect(body).toContain('Too many groups ran in this window to read them all');
    } finally {
      await crowdServer.close();
      await redis.del(keys.historyGroups(minute - 1));
    }
  });
});

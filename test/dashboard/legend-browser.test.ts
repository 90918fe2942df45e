/**
 * The overview's chart stays inside its card in a real browser (Debian's chromium): the chart
 * is sized to the card's content box, and its legend wraps rather than overflow, at a wide and
 * a narrow window.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardServer, serveDashboard } from '../../src/dashboard/index.js';
import { hasChromium, launchChromium } from '../helpers/browser.js';
import { redisUrl, uniqueQueue } from '../helpers/setup.js';

describe.skipIf(!hasChromium)('the chart legend', () => {
  let server: DashboardServer;
  let browser: Browser;

  beforeAll(async () => {
    server = await serveDashboard({ connection: redisUrl(), queues: [uniqueQueue('legend')], port: 0 });
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('stays inside its card', async () => {
    for (const width of [1360, 360]) {
      const page = await browser.newPage({ viewport: { width, height: 800 } });
      await page.goto(server.url);
      await page.waitForSelector('#rate-chart .u-legend');
      const box = await page.evaluate(() => {
        const rect = (s: string) => document.querySelector(s)!.getBoundingClientRect();
        const card = rect('#rate-chart');
        return { card, plot: rect('#rate-chart .uplot'), legend: rect('#rate-chart .u-legend') };
      });
      for (const part of [box.plot, box.legend]) {
        expect(part.left, `${width}`).toBeGreaterThanOrEqual(box.card.left);
        expect(part.right, `${width}`).toBeLessThanOrEqual(box.card.right);
        expect(part.bottom, `${width}`).toBeLessThanOrEqual(box.card.bottom);
      }
      await page.close();
    }
  });
});

/**
 * DNS rebinding in a real browser (Debian's chromium driven by playwright-core). An attacker's
 * page is served at `http://rebind.example:<the dashboard's port>/`; then the name is made to
 * resolve to 127.0.0.1, so that the page's own-origin requests reach the dashboard on loopback
 * (default settings: no token). To the browser they are same-origin: it lets the page read every
 * answer and post every form. The dashboard must refuse them for their `Host`.
 *
 * Chromium's `--host-resolver-rules` maps the name to 127.0.0.1 for the whole test, so the
 * attacker's page (its answer before the rebinding) is served from there too: the dashboard's
 * handler is mounted in a node:http server that answers `/attack.html` itself and passes every
 * other request to the handler. (Served from anywhere else, Chromium's Private Network Access
 * would block the page's requests to loopback; other browsers have no such block, and the
 * dashboard must not rest on it.)
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardHandler, dashboard } from '../../src/dashboard/index.js';
import { Queue } from '../../src/queue/queue.js';
import { hasChromium, launchChromium } from '../helpers/browser.js';
import { redisUrl, uniqueQueue } from '../helpers/setup.js';

/** What the attacker's page found: each request's status, and whether the job's secret showed in any answer. */
interface Loot {
  list: number;
  job: number;
  leaked: boolean;
  csrf: string | null;
  cancel: number;
  error: string | null;
}

/** The attacker's page: it reads the job list, the job's page and a CSRF value, then cancels the job. */
function attackPage(jobId: string): string {
  return `<!doctype html><html><body><script>
(async () => {
  const loot = { list: 0, job: 0, leaked: false, csrf: null, cancel: 0, error: null };
  try {
    const list = await fetch('/jobs?state=waiting');
    loot.list = list.status;
    const listText = await list.text();
    const job = await fetch('/jobs/' + encodeURIComponent(${JSON.stringify(jobId)}));
    loot.job = job.status;
    const jobText = await job.text();
    loot.leaked = (listText + jobText).includes('s3cr3t');
    loot.csrf = (/<meta name="csrf" content="([0-9a-f]+)">/.exec(jobText) || [])[1] || null;
    const cancel = await fetch('/actions/job/cancel', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({ id: ${JSON.stringify(jobId)}, _csrf: loot.csrf || '' }).toString(),
    });
    loot.cancel = cancel.status;
  } catch (err) {
    loot.error = String(err);
  } finally {
    window.loot = loot;
  }
})();
</script></body></html>`;
}

describe.skipIf(!hasChromium)('DNS rebinding, in a browser', () => {
  const name = uniqueQueue('rebind');
  let browser: Browser;
  let handler: DashboardHandler;
  let server: Server;
  let queue: Queue;
  let port: number;
  /** The job the attacker's page goes for. */
  let jobId = '';

  beforeAll(async () => {
    queue = new Queue(name, { connection: redisUrl() });
    jobId = (await queue.submit({ task: 'mail', group: 'victim', args: { secret: 's3cr3t' } })).id;
    handler = dashboard({ connection: redisUrl(), queues: [name] });
    server = createServer((req, res) => {
      if (req.url !== '/attack.html') return handler(req, res);
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(attackPage(jobId));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
    browser = await launchChromium(['--host-resolver-rules=MAP rebind.example 127.0.0.1']);
  });

  afterAll(async () => {
    await browser?.close();
    await handler?.close();
    if (server) {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
    await queue?.close();
  });

  it('gives a page at rebind.example neither a job’s args nor its cancel, while loopback works', async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`http://rebind.example:${port}/attack.html`);
      await page.waitForFunction(() => (window as unknown as { loot?: unknown }).loot !== undefined);
      const loot = (await page.evaluate(() => (window as unknown as { loot: unknown }).loot)) as Loot;
      // (the requests reached the dashboard: it answered them, and refused them for their Host)
      expect(loot).toEqual({ list: 421, job: 421, leaked: false, csrf: null, cancel: 421, error: null });
      expect((await queue.getJob(jobId))?.state).toBe('waiting');

      // The same browser reaches the dashboard by its loopback address as before.
      const own = await page.goto(`http://127.0.0.1:${port}/jobs/${encodeURIComponent(jobId)}`);
      expect(own?.status()).toBe(200);
      expect(await page.content()).toContain('s3cr3t');
    } finally {
      await context.close();
    }
  });
});

/**
 * The CSRF attack from another port of the same host, in a real browser (Debian's chromium
 * driven by playwright-core). Cookies ignore ports, so a page served on another port of the
 * dashboard's host can overwrite the dashboard's CSRF cookie with a value of its choosing, then
 * auto-post a form holding the same value through a 307 redirect to an action: the browser
 * carries the logged-in session (the sites are the same), sends `Origin: null` and
 * `Sec-Fetch-Site: same-site`. The dashboard must refuse it.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardServer, serveDashboard } from '../../src/dashboard/index.js';
import { Queue } from '../../src/queue/queue.js';
import { hasChromium, launchChromium } from '../helpers/browser.js';
import { redisUrl, uniqueQueue } from '../helpers/setup.js';

describe.skipIf(!hasChromium)('CSRF from another port of the same host, in a browser', () => {
  const name = uniqueQueue('csrf');
  const token = 'the-dashboard-token';
  let browser: Browser;
  let dash: DashboardServer;
  let evil: Server;
  let evilUrl: string;
  let queue: Queue;
  /** Headers of the POSTs the dashboard received. */
  const posts: IncomingHttpHeaders[] = [];

  beforeAll(async () => {
    queue = new Queue(name, { connection: redisUrl() });
    await queue.submit({ task: 'mail', group: 'victim' });
    dash = await serveDashboard({ connection: redisUrl(), queues: [name], port: 0, token });
    dash.server.prependListener('request', (req) => {
      if (req.method === 'POST') posts.push(req.headers);
    });
    const action = `${dash.url}actions/group/pause`;
    const chosen = 'a'.repeat(64);
    // The attacker's server, on another port of the same host: its page sets the CSRF cookie
    // for the whole host and posts itself; its /go answers the post with a 307 to the action.
    evil = createServer((req, res) => {
      if (req.url === '/go') {
        res.writeHead(307, { location: action });
        return res.end();
      }
      res.writeHead(200, {
        'content-type': 'text/html',
        'set-cookie': `rota_dashboard_csrf=${chosen}; Path=/`,
      });
      res.end(`<!doctype html><form id="f" method="post" action="/go">
<input name="group" value="victim"><input name="_csrf" value="${chosen}"><input name="return" value="/">
</form><script>document.getElementById('f').submit()</script>`);
    });
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r));
    evilUrl = `http://127.0.0.1:${(evil.address() as AddressInfo).port}/`;
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    if (evil) {
      evil.closeAllConnections();
      await new Promise((r) => evil.close(r));
    }
    await dash?.close();
    await queue?.close();
  });

  it('refuses the action a page on another port auto-posts through a 307, with a cookie it chose', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    // The victim is logged in to the dashboard (its session cookie) and has opened a page.
    await page.goto(`${dash.url}groups?token=${token}`);
    expect(await page.locator('tr[data-group="victim"]').count()).toBe(1);
    // Then opens the attacker's page.
    const answered = page.waitForResponse((r) => r.url().startsWith(`${dash.url}actions/`));
    await page.goto(evilUrl);
    const response = await answered;
    // The browser posted as the issue says: no origin to check, and the same site.
    expect(posts.at(-1)?.origin).toBe('null');
    expect(posts.at(-1)?.['sec-fetch-site']).toBe('same-site');
    expect(response.status()).toBe(403);
    expect((await queue.groups()).find((g) => g.group === 'victim')?.paused).toBe(false);
    await context.close();
  });
});

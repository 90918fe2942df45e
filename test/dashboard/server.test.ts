/**
 * The dashboard over HTTP (no browser): mounting under a base path in node:http, the token, CSRF
 * and origin checks of actions, read-only mode, the bind policy, security headers, escaping of
 * every string from users, and the routes of a dashboard of several queues.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardHandler, type DashboardServer, dashboard, serveDashboard } from '../../src/dashboard/index.js';
import { ValidationError } from '../../src/errors.js';
import { Worker } from '../../src/executor/worker.js';
import { Queue } from '../../src/queue/queue.js';
import { eventually, redisUrl, uniqueQueue } from '../helpers/setup.js';

const HOSTILE = `<script>alert("x")</script><img src=x onerror=alert(1)>`;

/** A request that does not follow redirects. */
async function request(url: string, init: RequestInit = {}): Promise<{ status: number; body: string; headers: Headers }> {
  const r = await fetch(url, { redirect: 'manual', ...init });
  return { status: r.status, body: await r.text(), headers: r.headers };
}

/** The CSRF value of a page and the cookie that carries it. */
async function csrfOf(url: string, headers: Record<string, string> = {}): Promise<{ csrf: string; cookie: string }> {
  const r = await fetch(url, { headers });
  const body = await r.text();
  const csrf = /<meta name="csrf" content="([0-9a-f]+)">/.exec(body)![1];
  const cookie = r.headers.getSetCookie().map((c) => c.split(';')[0]);
  return { csrf, cookie: [...cookie, headers.cookie].filter(Boolean).join('; ') };
}

function form(fields: Record<string, string>): { body: string; headers: Record<string, string> } {
  return { body: new URLSearchParams(fields).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } };
}

describe('dashboard over HTTP', () => {
  const name = uniqueQueue('dash');
  let queue: Queue;
  let handler: DashboardHandler;
  let app: Server;
  let base: string;

  beforeAll(async () => {
    queue = new Queue(name, { connection: redisUrl() });
    handler = dashboard({ connection: redisUrl(), queues: [name], basePath: '/admin/rota' });
    // An application that mounts the dashboard under /admin/rota beside routes of its own.
    app = createServer((req, res) => {
      if (req.url?.startsWith('/admin/rota')) return handler(req, res);
      res.end('the application');
    });
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(app.address() as AddressInfo).port}/admin/rota`;
  });

  afterAll(async () => {
    await handler?.close();
    app?.closeAllConnections();
    await new Promise((r) => app?.close(r));
    await queue?.close();
  });

  it('mounts under a base path in node:http, with links below it', async () => {
    const other = await request(base.replace('/admin/rota', '/elsewhere'));
    expect(other.body).toBe('the application');
    for (const path of ['/', '/groups', '/jobs', '/executors', '/periodic']) {
      const r = await request(`${base}${path}`);
      expect(r.status, path).toBe(200);
      const links = [...r.body.matchAll(/(?:href|src|action)="([^"]+)"/g)].map((m) => m[1]).filter((l) => l.startsWith('/'));
      expect(links.length).toBeGreaterThan(0);
      for (const l of links) expect(l.startsWith('/admin/rota/'), l).toBe(true);
    }
    expect((await request(`${base}/assets/uPlot.iife.min.js`)).status).toBe(200);
  });

  it('sends a CSP without inline scripts, and its pages have none', async () => {
    const r = await request(`${base}/groups`);
    const csp = r.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(r.headers.get('x-frame-options')).toBe('DENY');
    expect(r.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(r.body).not.toMatch(/\son[a-z]+=/i);
    expect(r.body).not.toMatch(/\sstyle=/);
  });

  it('refuses a POST without its CSRF value, or from another origin; takes it with both', async () => {
    await queue.submit({ task: 't', group: 'csrf-g' });
    const { csrf, cookie } = await csrfOf(`${base}/groups`);
    const post = (fields: Record<string, string>, headers: Record<string, string> = {}) => {
      const f = form(fields);
      return request(`${base}/actions/group/pause`, { method: 'POST', body: f.body, headers: { ...f.headers, ...headers } });
    };
    expect((await post({ group: 'csrf-g' }, { cookie })).status).toBe(403);
    expect((await post({ group: 'csrf-g', _csrf: csrf })).status).toBe(403);
    expect((await post({ group: 'csrf-g', _csrf: 'f'.repeat(64) }, { cookie })).status).toBe(403);
    expect((await post({ group: 'csrf-g', _csrf: csrf }, { cookie, origin: 'http://evil.example' })).status).toBe(403);
    expect((await queue.groups()).find((g) => g.group === 'csrf-g')?.paused).toBe(false);
    const ok = await post({ group: 'csrf-g', _csrf: csrf, return: `/admin/rota/groups` }, { cookie });
    expect(ok.status).toBe(303);
    expect(ok.headers.get('location')).toBe('/admin/rota/groups');
    expect((await queue.groups()).find((g) => g.group === 'csrf-g')?.paused).toBe(true);
    // A return address elsewhere is not followed.
    const away = await post({ group: 'csrf-g', _csrf: csrf, return: '//evil.example/x' }, { cookie });
    expect(away.headers.get('location')).toBe('/admin/rota/');
  });

  it('escapes group, task and job names, args, logs and errors', async () => {
    const worker = new Worker(
      name,
      {
        [HOSTILE]: async (ctx) => {
          ctx.log(`log ${HOSTILE}`);
          throw new Error(`error ${HOSTILE}`);
        },
      },
      { connection: redisUrl() },
    );
    const job = await queue.submit({ task: HOSTILE, group: HOSTILE, args: { a: HOSTILE }, maxRetries: 0 });
    await eventually(async () => (await queue.getJob(job.id))?.state === 'failed', 30_000);
    await worker.close();
    await queue.submit({ task: HOSTILE, group: HOSTILE, args: { a: HOSTILE } });
    const pages = [
      `/groups`,
      `/groups?group=${encodeURIComponent(HOSTILE)}`,
      `/jobs?state=failed`,
      `/jobs?state=waiting&group=${encodeURIComponent(HOSTILE)}&task=${encodeURIComponent(HOSTILE)}`,
      `/jobs/${job.id}`,
    ];
    for (const path of pages) {
      // (the groups page lists the group once its index or its fairness view, whose reads are kept 5 s, has it)
      const r = await eventually(async () => {
        const got = await request(`${base}${path}`);
        return got.body.includes('&lt;script&gt;alert') ? got : null;
      }, 15_000);
      expect(r.status, path).toBe(200);
      expect(r.body, path).not.toContain('<script>alert');
      expect(r.body, path).not.toContain('<img src=x');
      expect(r.body, path).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
    }
    const detail = (await request(`${base}/jobs/${job.id}`)).body;
    expect(detail).toContain(`log &lt;script&gt;`);
    expect(detail).toContain(`error &lt;script&gt;`);
  });

  it('retries every failed job matching the filter, and no other', async () => {
    const worker = new Worker(
      name,
      {
        flaky: async () => {
          throw new Error('down');
        },
      },
      { connection: redisUrl() },
    );
    const jobs = await queue.submitBulk([
      ...Array.from({ length: 4 }, () => ({ task: 'flaky', group: 'retry-a', maxRetries: 0 })),
      ...Array.from({ length: 3 }, () => ({ task: 'flaky', group: 'retry-b', maxRetries: 0 })),
    ]);
    await eventually(async () => {
      const states = await Promise.all(jobs.map((j) => queue.getJob(j.id)));
      return states.every((j) => j?.state === 'failed');
    }, 30_000);
    await worker.close();
    const { csrf, cookie } = await csrfOf(`${base}/jobs?state=failed`);
    const f = form({ _csrf: csrf, group: 'retry-a', task: 'flaky' });
    const r = await request(`${base}/actions/jobs/retry-failed`, {
      method: 'POST',
      body: f.body,
      headers: { ...f.headers, cookie, accept: 'application/json' },
    });
    expect(JSON.parse(r.body)).toEqual({ ok: true, message: '4 failed jobs retried.' });
    const after = await Promise.all(jobs.map((j) => queue.getJob(j.id)));
    expect(after.map((j) => `${j!.group}:${j!.state}`).sort()).toEqual([
      ...Array(4).fill('retry-a:waiting'),
      ...Array(3).fill('retry-b:failed'),
    ]);
  });

  it('finds a job by id, and says so when there is none', async () => {
    const job = await queue.submit({ task: 't', group: 'find' });
    const r = await request(`${base}/jobs?id=${job.id}`);
    expect(r.status).toBe(303);
    expect(r.headers.get('location')).toBe(`/admin/rota/jobs/${job.id}`);
    expect((await request(`${base}/jobs/nope`)).body).toContain('No such job');
  });

  it('lists jobs by state, group and task, paged', async () => {
    await queue.submitBulk(Array.from({ length: 30 }, (_, i) => ({ task: i % 2 ? 'odd' : 'even', group: 'paged' })));
    const page = (q: string) =>
      request(`${base}/jobs?${q}`).then((r) =>
        [...r.body.matchAll(/<tr><td class="mono"><a href="[^"]+">([^<]+)</g)].map((m) => m[1]),
      );
    const firstPage = await request(`${base}/jobs?state=waiting&group=paged&task=odd&limit=10`);
    const next = /href="([^"]+)">next →/.exec(firstPage.body)![1].replace(/&amp;/g, '&');
    const first = await page('state=waiting&group=paged&task=odd&limit=10');
    const second = await page(next.split('?')[1]);
    expect(first).toHaveLength(10);
    expect(second).toHaveLength(5);
    const odd = new Set(first.concat(second));
    expect(odd.size).toBe(15);
    for (const id of odd) expect((await queue.getJob(id))?.task).toBe('odd');
  });
});

describe('dashboard access', () => {
  const name = uniqueQueue('dash');
  const token = 'correct-horse-battery';
  let served: DashboardServer;
  let queue: Queue;

  beforeAll(async () => {
    queue = new Queue(name, { connection: redisUrl() });
    served = await serveDashboard({ connection: redisUrl(), queues: [name], port: 0, token });
  });
  afterAll(async () => {
    await served?.close();
    await queue?.close();
  });

  it('refuses requests without the token; takes it as a bearer header or through ?token=', async () => {
    expect((await request(`${served.url}groups`)).status).toBe(401);
    expect((await request(`${served.url}groups`, { headers: { authorization: 'Bearer wrong-token-here' } })).status).toBe(401);
    expect((await request(`${served.url}groups`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    const login = await request(`${served.url}groups?token=${token}`);
    expect(login.status).toBe(303);
    expect(login.headers.get('location')).toBe('/groups');
    const cookie = login.headers.getSetCookie()[0].split(';')[0];
    expect(cookie).not.toContain(token);
    expect((await request(`${served.url}groups`, { headers: { cookie } })).status).toBe(200);
  });

  it('refuses a POST without the token even with a CSRF value', async () => {
    await queue.submit({ task: 't', group: 'tok' });
    const auth = { authorization: `Bearer ${token}` };
    const { csrf, cookie } = await csrfOf(`${served.url}groups`, auth);
    const f = form({ group: 'tok', _csrf: csrf });
    const without = await request(`${served.url}actions/group/pause`, {
      method: 'POST',
      body: f.body,
      headers: { ...f.headers, cookie },
    });
    expect(without.status).toBe(401);
    expect((await queue.groups()).find((g) => g.group === 'tok')?.paused).toBe(false);
    const withIt = await request(`${served.url}actions/group/pause`, {
      method: 'POST',
      body: f.body,
      headers: { ...f.headers, cookie, ...auth },
    });
    expect(withIt.status).toBe(303);
    expect((await queue.groups()).find((g) => g.group === 'tok')?.paused).toBe(true);
  });

  it('refuses to bind another address than loopback without a token', async () => {
    await expect(serveDashboard({ connection: redisUrl(), queues: [name], host: '0.0.0.0', port: 0 })).rejects.toThrow(
      ValidationError,
    );
    await expect(serveDashboard({ connection: redisUrl(), queues: [name], host: '0.0.0.0', port: 0 })).rejects.toThrow(/token/);
    const open = await serveDashboard({ connection: redisUrl(), queues: [name], host: '0.0.0.0', port: 0, token });
    expect(open.url).toMatch(/^http:\/\/0\.0\.0\.0:\d+\/$/);
    await open.close();
  });
});

describe('read-only dashboard', () => {
  const name = uniqueQueue('dash');
  let served: DashboardServer;
  let queue: Queue;

  beforeAll(async () => {
    queue = new Queue(name, { connection: redisUrl() });
    served = await serveDashboard({ connection: redisUrl(), queues: [name], port: 0, readOnly: true });
  });
  afterAll(async () => {
    await served?.close();
    await queue?.close();
  });

  it('shows no action and refuses them', async () => {
    const job = await queue.submit({ task: 't', group: 'ro' });
    for (const path of ['/groups', `/jobs/${job.id}`, '/periodic', '/jobs?state=failed']) {
      const r = await request(`${served.url}${path.slice(1)}`);
      expect(r.body, path).not.toMatch(/method="post"/i);
    }
    const { csrf, cookie } = await csrfOf(`${served.url}groups`);
    const f = form({ group: 'ro', _csrf: csrf });
    const r = await request(`${served.url}actions/group/pause`, {
      method: 'POST',
      body: f.body,
      headers: { ...f.headers, cookie },
    });
    expect(r.status).toBe(403);
    const c = form({ id: job.id, _csrf: csrf });
    expect(
      (await request(`${served.url}actions/job/cancel`, { method: 'POST', body: c.body, headers: { ...c.headers, cookie } }))
        .status,
    ).toBe(403);
    expect((await queue.getJob(job.id))?.state).toBe('waiting');
    expect((await queue.groups()).find((g) => g.group === 'ro')?.paused).toBe(false);
  });
});

describe('dashboard of several queues', () => {
  const names = [uniqueQueue('dash-a'), uniqueQueue('dash-b')];
  let served: DashboardServer;
  let queues: Queue[];

  beforeAll(async () => {
    queues = names.map((n) => new Queue(n, { connection: redisUrl() }));
    await queues[0].submit({ task: 't', group: 'only-in-a' });
    await queues[1].submit({ task: 't', group: 'only-in-b' });
    served = await serveDashboard({ connection: redisUrl(), queues: names, port: 0 });
  });
  afterAll(async () => {
    await served?.close();
    for (const q of queues ?? []) await q.close();
  });

  it('lists the queues at the root and serves each under /q/<queue>/', async () => {
    const root = await request(served.url);
    for (const n of names) expect(root.body).toContain(`/q/${n}/`);
    const a = await request(`${served.url}q/${names[0]}/groups`);
    expect(a.body).toContain('only-in-a');
    expect(a.body).not.toContain('only-in-b');
    const b = await request(`${served.url}q/${names[1]}/groups`);
    expect(b.body).toContain('only-in-b');
    expect((await request(`${served.url}groups`)).status).toBe(404);
    expect((await request(`${served.url}q/unknown/groups`)).status).toBe(404);
  });
});

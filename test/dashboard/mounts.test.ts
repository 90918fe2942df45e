/**
 * The dashboard mounted in Express 5 and Fastify 5 exactly as docs/dashboard.md shows: the test
 * takes each snippet from the docs and runs it, with only the Redis URL and the port (0: a free
 * one) replaced, so that the docs cannot drift from what works. Pages load at the bare base path
 * and below it, and a form POST (pause a group, with the page's CSRF value and cookie) reaches Redis.
 */
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dashboard, Queue } from '../../src/index.js';
import { dashboardClient } from '../helpers/dashboard.js';
import { privateRedis } from '../helpers/setup.js';

const DOCS = new URL('../../docs/dashboard.md', import.meta.url);

/** The first ```js block after the paragraph that starts with `**<title>**` in docs/dashboard.md. */
function snippet(title: string): string {
  const docs = readFileSync(DOCS, 'utf8');
  const at = docs.indexOf(`\n**${title}**`);
  expect(at, `docs/dashboard.md has no "**${title}**" paragraph`).toBeGreaterThan(0);
  const block = /```js\n([\s\S]*?)```/.exec(docs.slice(at));
  expect(block, `no js block after "**${title}**"`).not.toBeNull();
  return block![1];
}

/** What a snippet leaves behind: the application, the dashboard's handler and (Express) the server. */
interface Mounted {
  app: { close?: () => Promise<unknown>; server?: Server };
  rota: { close(): Promise<void> };
  server?: Server;
}

/**
 * Runs a snippet: its imports become parameters (the framework under the name the snippet
 * imports it as, and `dashboard` from the sources), the Redis URL and port are replaced.
 */
async function run(code: string, framework: string, frameworkModule: unknown, url: string): Promise<Mounted> {
  const body = code
    .split('\n')
    .filter((line) => !line.startsWith('import '))
    .join('\n')
    .replaceAll("'redis://127.0.0.1:6379'", JSON.stringify(url))
    .replaceAll('3000', '0');
  expect(body).toContain(JSON.stringify(url));
  const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (
    ...args: string[]
  ) => (...a: unknown[]) => Promise<Mounted>;
  const fn = new AsyncFunction(
    framework,
    'dashboard',
    `${body}\nreturn { app, rota, server: typeof server === 'undefined' ? undefined : server };`,
  );
  return fn(frameworkModule, dashboard);
}

const MOUNTS = [
  { title: 'Express 5', framework: 'express', module: express },
  { title: 'Fastify 5', framework: 'Fastify', module: Fastify },
] as const;

describe.each(MOUNTS)('the dashboard mounted in $title as the docs show', ({ title, framework, module }) => {
  const redis = privateRedis();
  let mounted: Mounted;
  let queue: Queue;
  let origin: string;

  beforeAll(async () => {
    const code = snippet(title);
    expect(code).toContain(`from '${framework === 'Fastify' ? 'fastify' : 'express'}'`);
    mounted = await run(code, framework, module, redis.server.url);
    const server = mounted.server ?? mounted.app.server!;
    if (!server.listening) await new Promise((r) => server.once('listening', r));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    queue = new Queue('mail', { connection: redis.server.url });
  });

  afterAll(async () => {
    await queue?.close();
    if (mounted?.app.close) await mounted.app.close();
    else {
      await mounted?.rota.close();
      mounted?.server?.closeAllConnections();
      await new Promise((r) => mounted?.server?.close(r));
    }
  });

  it('serves the pages at the bare base path and below it, with their assets', async () => {
    const bare = await fetch(`${origin}/admin/rota`, { redirect: 'manual' });
    expect(bare.status).toBe(200);
    const page = await bare.text();
    expect(page).toContain('<meta name="csrf"');
    for (const path of ['/', '/groups', '/jobs', '/executors', '/periodic', '/assets/style.css', '/assets/client.js']) {
      const r = await fetch(`${origin}/admin/rota${path}`, { redirect: 'manual' });
      expect(r.status, path).toBe(200);
      await r.arrayBuffer();
    }
    // The page's own links stay below the base path.
    const links = [...page.matchAll(/(?:href|src|action)="([^"]+)"/g)].map((m) => m[1]).filter((l) => l.startsWith('/'));
    expect(links.length).toBeGreaterThan(0);
    for (const l of links) expect(l.startsWith('/admin/rota/'), l).toBe(true);
  });

  it('takes a form POST action (pause a group) with the CSRF value and cookie of its page', async () => {
    await queue.submit({ task: 't', group: 'mounted' });
    expect((await queue.groups()).find((g) => g.group === 'mounted')?.paused).toBe(false);
    const client = dashboardClient(() => `${origin}/admin/rota/`);
    const r = await client.act('group/pause', { group: 'mounted' });
    expect(r.status, r.body).toBe(200);
    expect((await queue.groups()).find((g) => g.group === 'mounted')?.paused).toBe(true);
  });

  it('still refuses a POST without its CSRF value', async () => {
    await queue.submit({ task: 't', group: 'refused' });
    const r = await fetch(`${origin}/admin/rota/actions/group/pause`, {
      method: 'POST',
      redirect: 'manual',
      body: new URLSearchParams({ group: 'refused' }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(r.status).toBe(403);
    expect((await queue.groups()).find((g) => g.group === 'refused')?.paused).toBe(false);
  });
});

describe('the dashboard in Express behind a body parser of the application', () => {
  const redis = privateRedis();
  let rota: ReturnType<typeof dashboard>;
  let server: Server;
  let queue: Queue;

  beforeAll(async () => {
    const app = express();
    // The application parses forms before the dashboard reads its own.
    app.use(express.urlencoded());
    rota = dashboard({ connection: redis.server.url, queues: ['mail'], basePath: '/admin/rota' });
    app.use('/admin/rota', rota);
    server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    queue = new Queue('mail', { connection: redis.server.url });
  });

  afterAll(async () => {
    await queue?.close();
    await rota?.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
  });

  it('takes the form the parser read, and still refuses one without its CSRF value', async () => {
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/admin/rota/`;
    await queue.submit({ task: 't', group: 'parsed' });
    const refused = await fetch(`${base}actions/group/pause`, {
      method: 'POST',
      body: new URLSearchParams({ group: 'parsed' }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      signal: AbortSignal.timeout(10_000),
    });
    expect(refused.status).toBe(403);
    expect((await queue.groups()).find((g) => g.group === 'parsed')?.paused).toBe(false);
    const r = await dashboardClient(() => base).act('group/pause', { group: 'parsed' });
    expect(r.status, r.body).toBe(200);
    expect((await queue.groups()).find((g) => g.group === 'parsed')?.paused).toBe(true);
  });
});

/**
 * The Host check that keeps DNS rebinding out (the browser's attack is in
 * rebinding-browser.test.ts): a request whose `Host` is not a loopback name or address with the
 * dashboard's port, the address it came in on, or a host the operator listed is refused (421)
 * before anything else: no cookie set, no Redis command sent. The same check holds for the
 * mounted handler and for `rota dashboard --allowed-host`, and the origin check of actions rests
 * on it too.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardHandler, type DashboardServer, dashboard, serveDashboard } from '../../src/dashboard/index.js';
import { Access, CSRF_COOKIE, CSRF_FIELD } from '../../src/dashboard/security.js';
import { ValidationError } from '../../src/errors.js';
import { Queue } from '../../src/queue/queue.js';
import { BIN, servedPage } from '../helpers/cli.js';
import { NodeProcess } from '../helpers/processes.js';
import { freePort } from '../helpers/redis-server.js';
import { privateRedis, uniqueQueue } from '../helpers/setup.js';

const redis = privateRedis();

/** GETs `path` on 127.0.0.1:`port` (or `address`) with `Host: host` (none when undefined), as a client that forges it would. */
function get(
  port: number,
  path: string,
  host: string | undefined,
  headers: Record<string, string> = {},
  address = '127.0.0.1',
): Promise<{ status: number; cookies: string[]; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: address, port, path, method: 'GET', setHost: false, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          cookies: ([] as string[]).concat(res.headers['set-cookie'] ?? []),
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
    });
    if (host !== undefined) req.setHeader('host', host);
    req.on('error', reject);
    req.end();
  });
}

/** Commands Redis ran during `fn` (INFO commandstats), less those of the measuring itself. */
async function commandsDuring(fn: () => Promise<unknown>): Promise<number> {
  await redis.admin.config('RESETSTAT');
  await fn();
  const info = await redis.admin.info('commandstats');
  let total = 0;
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (m[1] !== 'info' && m[1] !== 'config|resetstat') total += Number(m[2]);
  }
  return total;
}

/** A non-loopback IPv4 address of this machine, if it has one. */
function outsideAddress(): string | undefined {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return undefined;
}

describe('the Host check', () => {
  const name = uniqueQueue('hosts');
  const token = 'the-dashboard-token';
  let queue: Queue;
  let open: DashboardServer;
  let port: number;

  beforeAll(async () => {
    queue = new Queue(name, { connection: redis.server.url });
    await queue.submit({ task: 'mail', group: 'g1', args: { secret: 's3cr3t' } });
    open = await serveDashboard({ connection: redis.server.url, queues: [name], port: 0 });
    port = Number(new URL(open.url).port);
    // (the group index's load and the reader's ticks stop, so that the counts below are the requests')
    expect((await get(port, '/groups', `127.0.0.1:${port}`)).status).toBe(200);
    open.handler.reader.close();
  });

  afterAll(async () => {
    await open?.close();
    await queue?.close();
  });

  it('refuses a Host that is not a loopback name or address with its port: 421, no cookie, no Redis command', async () => {
    const forged = [
      `evil.example:${port}`,
      'evil.example',
      `rebind.example:${port}`,
      `127.0.0.1:${port + 1}`,
      '127.0.0.1',
      `localhost:${port + 1}`,
      `localhost.:${port}`,
      `localhost.evil.example:${port}`,
      `127.0.0.1.evil.example:${port}`,
      `[::1]:${port + 1}`,
      `[::2]:${port}`,
      `0.0.0.0:${port}`,
      `10.1.2.3:${port}`,
      `127.0.0.1:${port}@evil.example`,
      `evil.example:${port}/x`,
      `127.0.0.1:99999`,
      '',
      // (no Host at all: Node's parser refuses an HTTP/1.1 request without one, 400)
      undefined,
    ];
    for (const host of forged) {
      let reply: Awaited<ReturnType<typeof get>> | undefined;
      const sent = await commandsDuring(async () => {
        reply = await get(port, '/jobs?state=waiting', host);
      });
      expect(reply!.status, String(host)).toBe(host === undefined ? 400 : 421);
      expect(reply!.cookies, String(host)).toEqual([]);
      expect(reply!.body, String(host)).not.toContain('s3cr3t');
      expect(sent, String(host)).toBe(0);
    }
    // (the same for a job's page, the live stream, the JSON tick and an action)
    for (const path of ['/jobs/x', '/live', '/api/tick', '/assets/style.css', '/?token=x']) {
      expect((await get(port, path, `evil.example:${port}`)).status, path).toBe(421);
    }
  });

  it('answers loopback names and addresses with its port', async () => {
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`, `127.8.9.10:${port}`, `[::1]:${port}`]) {
      let reply: Awaited<ReturnType<typeof get>> | undefined;
      const sent = await commandsDuring(async () => {
        reply = await get(port, '/jobs?state=waiting', host);
      });
      expect(reply!.status, host).toBe(200);
      expect(
        reply!.cookies.some((c) => c.startsWith(`${CSRF_COOKIE}=`)),
        host,
      ).toBe(true);
      // (the check above counts: an answered page reads Redis)
      expect(sent, host).toBeGreaterThan(0);
    }
  });

  it('answers the hosts listed in allowedHosts, and no other, in serveDashboard and the mounted handler', async () => {
    const allowedHosts = ['dash.example.com', '.corp.example', 'pinned.example:8443', '[fd00::5]'];
    const served = await serveDashboard({ connection: redis.server.url, queues: [name], port: 0, allowedHosts });
    const handler: DashboardHandler = dashboard({
      connection: redis.server.url,
      queues: [name],
      allowedHosts,
      basePath: '/rota',
    });
    const app: Server = createServer((req, res) => (req.url?.startsWith('/rota') ? handler(req, res) : res.end('app')));
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
    try {
      const targets = [
        { port: Number(new URL(served.url).port), path: '/groups' },
        { port: (app.address() as AddressInfo).port, path: '/rota/groups' },
      ];
      for (const t of targets) {
        for (const host of [
          'dash.example.com',
          'DASH.example.com:3000',
          'corp.example',
          'a.b.corp.example:1234',
          'pinned.example:8443',
          '[fd00::5]:80',
          `127.0.0.1:${t.port}`,
        ]) {
          expect((await get(t.port, t.path, host)).status, `${t.path} ${host}`).toBe(200);
        }
        for (const host of [
          'evil.example',
          'dash.example.com.evil.example',
          'xdash.example.com',
          'xcorp.example',
          'corp.example.evil.example',
          'pinned.example',
          'pinned.example:8444',
          '[fd00::6]',
          `127.0.0.1:${t.port + 1}`,
        ]) {
          expect((await get(t.port, t.path, host)).status, `${t.path} ${host}`).toBe(421);
        }
      }
    } finally {
      await served.close();
      await handler.close();
      app.closeAllConnections();
      await new Promise((r) => app.close(r));
    }
  });

  it('refuses an allowed host that is not a host name or address, before it opens anything', async () => {
    for (const bad of [
      'http://dash.example.com',
      'dash.example.com/x',
      '*',
      '*.example.com',
      'a b',
      'user@host',
      'host:99999',
      '.',
    ]) {
      expect(() => dashboard({ connection: redis.server.url, queues: [name], allowedHosts: [bad] }), bad).toThrow(
        ValidationError,
      );
      await expect(
        serveDashboard({ connection: redis.server.url, queues: [name], port: 0, allowedHosts: [bad] }),
        bad,
      ).rejects.toThrow(/allowedHosts/);
    }
    expect(() => dashboard({ connection: redis.server.url, queues: [name], allowedHosts: [''] })).toThrow(/allowedHosts/);
    expect(() => dashboard({ connection: redis.server.url, queues: [name], allowedHosts: 'dash' as never })).toThrow(
      /allowedHosts/,
    );
  });

  it('bound to 0.0.0.0 with a token, answers its own addresses and listed names, and refuses other names', async () => {
    const wide = await serveDashboard({
      connection: redis.server.url,
      queues: [name],
      port: 0,
      host: '0.0.0.0',
      token,
      allowedHosts: ['dash.example.com'],
    });
    const p = Number(new URL(wide.url).port);
    const bearer = { authorization: `Bearer ${token}` };
    try {
      expect((await get(p, '/groups', `127.0.0.1:${p}`, bearer)).status).toBe(200);
      expect((await get(p, '/groups', `127.0.0.1:${p}`)).status).toBe(401);
      expect((await get(p, '/groups', 'dash.example.com', bearer)).status).toBe(200);
      // (a name that resolves to this machine is refused even with the token: a rebinding page rides the operator's session)
      expect((await get(p, '/groups', `evil.example:${p}`, bearer)).status).toBe(421);
      const outside = outsideAddress();
      if (outside) {
        // Reached by the address it came in on, written as an address: no name is needed.
        expect((await get(p, '/groups', `${outside}:${p}`, bearer, outside)).status).toBe(200);
        expect((await get(p, '/groups', `${outside}:${p + 1}`, bearer, outside)).status).toBe(421);
        expect((await get(p, '/groups', `evil.example:${p}`, bearer, outside)).status).toBe(421);
        // (an address the request did not come in on)
        expect((await get(p, '/groups', `${outside}:${p}`, bearer)).status).toBe(421);
      }
    } finally {
      await wide.close();
    }
  });

  it('takes an action only from an origin it answers for, not from any origin equal to the Host', () => {
    const access = new Access({ cookiePath: '/', allowedHosts: ['dash.example.com'] });
    const id = 'a'.repeat(64);
    const cookies: string[] = [];
    const res = { appendHeader: (_: string, v: string) => cookies.push(v) };
    const req = (headers: Record<string, string>) =>
      ({
        headers: { cookie: `${CSRF_COOKIE}=${id}`, ...headers },
        socket: { localPort: 18080, localAddress: '127.0.0.1', remoteAddress: '127.0.0.1' },
      }) as unknown as Parameters<Access['csrfPasses']>[0];
    const csrf = access.csrf(req({}), res as never);
    expect(cookies).toEqual([]);
    const passes = (host: string, origin: string) =>
      access.csrfPasses(req({ host, origin, 'sec-fetch-site': 'same-origin' }), csrf);
    expect(passes('127.0.0.1:18080', 'http://127.0.0.1:18080')).toBe(true);
    expect(passes('dash.example.com', 'https://dash.example.com')).toBe(true);
    expect(passes('evil.example:18080', 'http://evil.example:18080')).toBe(false);
    expect(passes('rebind.example:18080', 'http://rebind.example:18080')).toBe(false);
    expect(passes('127.0.0.1:18080', 'http://localhost:18080')).toBe(false);
    expect(passes('127.0.0.1:18080', 'http://127.0.0.1:18081')).toBe(false);
    expect(passes('dash.example.com', 'https://dash.example.com:8443')).toBe(false);
    expect(passes('127.0.0.1:18080', 'file://127.0.0.1:18080')).toBe(false);
    expect(access.csrfPasses(req({ host: '127.0.0.1:18080', 'sec-fetch-site': 'same-origin' }), `${csrf}`)).toBe(true);
    expect(CSRF_FIELD).toBe('_csrf');
  });

  it('rota dashboard --allowed-host answers the names given (repeatable), and no other', async () => {
    const p = await freePort();
    const child = new NodeProcess(BIN, [
      '--redis',
      redis.server.url,
      '--queue',
      name,
      'dashboard',
      '--port',
      String(p),
      '--allowed-host',
      'dash.example.com',
      '--allowed-host=.corp.example',
    ]);
    try {
      await servedPage(p);
      expect((await get(p, '/groups', 'dash.example.com')).status).toBe(200);
      expect((await get(p, '/groups', 'a.corp.example')).status).toBe(200);
      expect((await get(p, '/groups', `127.0.0.1:${p}`)).status).toBe(200);
      expect((await get(p, '/groups', `evil.example:${p}`)).status).toBe(421);
    } finally {
      child.child.kill('SIGTERM');
      await child.exited;
    }
  });
});

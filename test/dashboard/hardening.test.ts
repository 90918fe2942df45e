/**
 * The dashboard's defences against hostile requests (no browser; the browser's CSRF attack is in
 * csrf-browser.test.ts): the CSRF value bound to the server's secret and the origin headers of
 * actions, actions and assets looked up by own name only (no internals, no Redis password in any
 * answer), the login's redirect kept on the dashboard, HTTP edge cases (bad escapes, `//`, large
 * bodies and headers), the token (wrong ones limited, a signed session with an expiry, `Secure`
 * behind a TLS proxy, `bearer` in any case), and the server's timeouts and per-client connections.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardServer, serveDashboard } from '../../src/dashboard/index.js';
import { Access, AUTH_COOKIE, SESSION_MS, WRONG_TOKENS } from '../../src/dashboard/security.js';
import { MAX_CONNECTIONS_PER_CLIENT } from '../../src/dashboard/serve.js';
import { ValidationError } from '../../src/errors.js';
import { Queue } from '../../src/queue/queue.js';
import { RedisServer } from '../helpers/redis-server.js';
import { eventually, uniqueQueue } from '../helpers/setup.js';

const PASSWORD = 'redis-secret-pw-4711';

/** A request that does not follow redirects. */
async function request(url: string, init: RequestInit = {}): Promise<{ status: number; body: string; headers: Headers }> {
  const r = await fetch(url, { redirect: 'manual', ...init });
  return { status: r.status, body: await r.text(), headers: r.headers };
}

/** The CSRF value of a page and the cookies of the answer (with those given). */
async function csrfOf(url: string, headers: Record<string, string> = {}): Promise<{ csrf: string; cookie: string }> {
  const r = await fetch(url, { headers });
  const csrf = /<meta name="csrf" content="([0-9a-f]+)">/.exec(await r.text())![1];
  const cookie = r.headers.getSetCookie().map((c) => c.split(';')[0]);
  return { csrf, cookie: [...cookie, headers.cookie].filter(Boolean).join('; ') };
}

/** Sends raw bytes on a new connection; resolves with what came back when the server closed it. */
function raw(port: number, data: string | Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    const got: Buffer[] = [];
    s.on('data', (c) => got.push(c));
    s.on('error', reject);
    s.on('close', () => resolve(Buffer.concat(got).toString('latin1')));
    s.write(data);
  });
}

/** Resolves when socket `s` is closed (by the server), with what it received. */
function closed(s: Socket): Promise<string> {
  const got: Buffer[] = [];
  s.on('data', (c) => got.push(c));
  return new Promise((resolve) => s.on('close', () => resolve(Buffer.concat(got).toString('latin1'))));
}

describe('dashboard hardening', () => {
  const name = uniqueQueue('hard');
  const token = 'correct-horse-battery';
  let redis: RedisServer;
  let url: string;
  let queue: Queue;
  let open: DashboardServer;
  let locked: DashboardServer;

  beforeAll(async () => {
    redis = await RedisServer.start({ args: ['--requirepass', PASSWORD] });
    url = `redis://:${PASSWORD}@127.0.0.1:${new URL(redis.url).port}`;
    queue = new Queue(name, { connection: url });
    await queue.submit({ task: 'mail', group: 'g1' });
    open = await serveDashboard({ connection: url, queues: [name], port: 0 });
    locked = await serveDashboard({ connection: url, queues: [name], port: 0, token });
  });

  afterAll(async () => {
    await open?.close();
    await locked?.close();
    await queue?.close();
    await redis?.destroy();
  });

  const post = (base: string, action: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
    request(`${base}actions/${action}`, {
      method: 'POST',
      body: new URLSearchParams(fields).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', ...headers },
    });

  describe('CSRF (item 1)', () => {
    it('refuses a CSRF value the client chose for both its cookie and its form, even without origin headers', async () => {
      const chosen = 'a'.repeat(64);
      const r = await post(open.url, 'group/pause', { group: 'g1', _csrf: chosen }, { cookie: `rota_dashboard_csrf=${chosen}` });
      expect(r.status).toBe(403);
      expect((await queue.groups()).find((g) => g.group === 'g1')?.paused).toBe(false);
    });

    it('refuses Origin: null and Sec-Fetch-Site other than same-origin on actions, with a valid CSRF value', async () => {
      const { csrf, cookie } = await csrfOf(`${open.url}groups`);
      const host = new URL(open.url).host;
      const cases: Array<Record<string, string>> = [
        { origin: 'null' },
        { 'sec-fetch-site': 'same-site' },
        { 'sec-fetch-site': 'cross-site' },
        { 'sec-fetch-site': 'none' },
        { origin: `http://${host}`, 'sec-fetch-site': 'same-site' },
      ];
      for (const headers of cases) {
        expect(
          (await post(open.url, 'group/pause', { group: 'g1', _csrf: csrf }, { cookie, ...headers })).status,
          JSON.stringify(headers),
        ).toBe(403);
      }
      expect((await queue.groups()).find((g) => g.group === 'g1')?.paused).toBe(false);
      const ok = await post(
        open.url,
        'group/pause',
        { group: 'g1', _csrf: csrf },
        { cookie, origin: `http://${host}`, 'sec-fetch-site': 'same-origin' },
      );
      expect(ok.status).toBe(200);
      expect((await queue.groups()).find((g) => g.group === 'g1')?.paused).toBe(true);
      await queue.resumeGroup('g1');
    });
  });

  describe('actions by own name (item 2)', () => {
    it('answers 404 for constructor, __proto__ and the other names of Object.prototype, and never the Redis password', async () => {
      const { csrf, cookie } = await csrfOf(`${open.url}groups`);
      for (const action of ['constructor', '__proto__', 'hasOwnProperty', 'valueOf', 'toString', 'isPrototypeOf']) {
        const r = await post(open.url, action, { _csrf: csrf }, { cookie });
        expect(r.status, action).toBe(404);
        expect(r.body).not.toContain(PASSWORD);
        expect(r.body.length).toBeLessThan(5000);
      }
    });
  });

  describe('redirect after login (item 10)', () => {
    it('keeps the redirect after ?token= on the dashboard', async () => {
      const port = Number(new URL(locked.url).port);
      // (sent as written: a client such as fetch would normalize the path first)
      for (const path of [
        '/.//evil.example',
        '//evil.example',
        '/./\\evil.example',
        '/%2F%2Fevil.example',
        '///evil.example/x',
      ]) {
        const reply = await raw(
          port,
          `GET ${path}?token=${token} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nconnection: close\r\n\r\n`,
        );
        expect(reply, path).toMatch(/^HTTP\/1\.1 303/);
        const location = /\r\nlocation: ([^\r]*)/i.exec(reply)![1];
        expect(location, path).not.toMatch(/^[/\\]{2}/);
        // (as a browser resolves it: on the dashboard's own origin)
        expect(new URL(location, locked.url).origin).toBe(new URL(locked.url).origin);
      }
    });
  });

  describe('HTTP edge cases (item 13)', () => {
    it('answers 400 for a malformed escape and 404 for // and /assets/constructor', async () => {
      expect((await request(`${open.url}jobs/%E0%A4%A`)).status).toBe(400);
      expect((await request(`${open.url}periodic/%`)).status).toBe(400);
      const port = Number(new URL(open.url).port);
      expect(await raw(port, `GET // HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nconnection: close\r\n\r\n`)).toMatch(
        /^HTTP\/1\.1 404/,
      );
      for (const a of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
        expect((await request(`${open.url}assets/${a}`)).status, a).toBe(404);
      }
    });

    it('answers 413 to a 100 KB POST, without resetting the connection', async () => {
      const { csrf, cookie } = await csrfOf(`${open.url}groups`);
      const r = await post(open.url, 'group/pause', { group: 'g1', _csrf: csrf, pad: 'x'.repeat(100 * 1024) }, { cookie });
      expect(r.status).toBe(413);
      expect(r.headers.get('content-security-policy')).toContain("default-src 'none'");
    });

    it('answers too large headers with 431 and the security headers', async () => {
      const port = Number(new URL(open.url).port);
      const reply = await raw(port, `GET / HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`);
      expect(reply).toMatch(/^HTTP\/1\.1 431/);
      expect(reply.toLowerCase()).toContain('content-security-policy:');
      expect(reply.toLowerCase()).toContain('x-frame-options: deny');
    });
  });

  describe('the token (item 14)', () => {
    it('takes the bearer scheme in any case', async () => {
      for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
        expect((await request(`${locked.url}groups`, { headers: { authorization: `${scheme} ${token}` } })).status, scheme).toBe(
          200,
        );
      }
    });

    it('gives a signed session cookie with an expiry; a forged or the old unsalted hash is refused', async () => {
      const login = await request(`${locked.url}groups?token=${token}`);
      const set = login.headers.getSetCookie().find((c) => c.startsWith(`${AUTH_COOKIE}=`))!;
      expect(set).toMatch(new RegExp(`Max-Age=${SESSION_MS / 1000}`));
      expect(set).not.toContain('Secure');
      const cookie = set.split(';')[0];
      expect((await request(`${locked.url}groups`, { headers: { cookie } })).status).toBe(200);
      const { createHash } = await import('node:crypto');
      const unsalted = createHash('sha256').update(`rota-dashboard:${token}`).digest('hex');
      const [expiry, id, mac] = decodeURIComponent(cookie.split('=')[1]).split('.');
      for (const forged of [
        unsalted,
        `${expiry}.${id}.${'0'.repeat(64)}`,
        `${(Number.parseInt(expiry, 36) + 1).toString(36)}.${id}.${mac}`,
        `${expiry}.${'0'.repeat(32)}.${mac}`,
      ]) {
        expect((await request(`${locked.url}groups`, { headers: { cookie: `${AUTH_COOKIE}=${forged}` } })).status, forged).toBe(
          401,
        );
      }
    });

    it('sets Secure behind a TLS proxy when told to trust it, and only then', async () => {
      const proxied = await serveDashboard({ connection: url, queues: [name], port: 0, token, trustProxy: true });
      try {
        const h = { 'x-forwarded-proto': 'https' };
        const set = (await request(`${proxied.url}groups?token=${token}`, { headers: h })).headers.getSetCookie();
        expect(set.find((c) => c.startsWith(`${AUTH_COOKIE}=`))).toContain('; Secure');
        const page = (
          await request(`${proxied.url}groups`, { headers: { ...h, authorization: `Bearer ${token}` } })
        ).headers.getSetCookie();
        expect(page.find((c) => c.startsWith('rota_dashboard_csrf='))).toContain('; Secure');
        const direct = (await request(`${locked.url}groups?token=${token}`, { headers: h })).headers.getSetCookie();
        expect(direct.find((c) => c.startsWith(`${AUTH_COOKIE}=`))).not.toContain('Secure');
      } finally {
        await proxied.close();
      }
    });

    it('limits wrong tokens per client: past the limit wrong ones get 429, the right one still passes', async () => {
      const own = await serveDashboard({ connection: url, queues: [name], port: 0, token });
      try {
        const session = (await request(`${own.url}?token=${token}`)).headers.getSetCookie()[0].split(';')[0];
        // (as a page of any site can make the operator's browser send them: <img src="...?token=wrong">)
        for (let i = 0; i < WRONG_TOKENS; i++) {
          const wrong = i % 2 ? { headers: { authorization: `Bearer wrong-${i}-${'x'.repeat(i * 7)}` } } : {};
          const r = await request(i % 2 ? `${own.url}groups` : `${own.url}groups?token=wrong-${i}`, wrong);
          expect(r.status, `try ${i}`).toBe(401);
        }
        const refused = await request(`${own.url}groups?token=wrong-again`);
        expect(refused.status).toBe(429);
        expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
        expect((await request(`${own.url}groups`, { headers: { authorization: 'Bearer wrong-again' } })).status).toBe(429);
        // The right token passes all the same, by ?token= (a new session) and as a bearer header.
        const login = await request(`${own.url}groups?token=${token}`);
        expect(login.status).toBe(303);
        const fresh = login.headers
          .getSetCookie()
          .find((c) => c.startsWith(`${AUTH_COOKIE}=`))!
          .split(';')[0];
        expect((await request(`${own.url}groups`, { headers: { cookie: fresh } })).status).toBe(200);
        expect((await request(`${own.url}groups`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
        expect((await request(`${own.url}groups`, { headers: { cookie: session } })).status).toBe(200);
        // (and wrong ones are still refused after it)
        expect((await request(`${own.url}groups?token=wrong-later`)).status).toBe(429);
      } finally {
        await own.close();
      }
    });

    it('ends a session at its expiry, and a wrong token of any length is refused (Access with a clock)', () => {
      let now = 1_000_000;
      const access = new Access({ token, cookiePath: '/' }, () => now);
      const headers: Record<string, string> = {};
      const res = {
        appendHeader: (_: string, v: string) => {
          headers.cookie = v.split(';')[0];
        },
      };
      const req = (h: Record<string, string>) =>
        ({ headers: h, socket: { remoteAddress: '192.0.2.1' } }) as unknown as Parameters<Access['check']>[0];
      expect(access.login(new URL(`http://d/?token=${token}`), req({}), res as never)).toBe('allowed');
      expect(access.check(req({ cookie: headers.cookie }))).toBe('allowed');
      now += SESSION_MS - 1;
      expect(access.check(req({ cookie: headers.cookie }))).toBe('allowed');
      now += 1;
      expect(access.check(req({ cookie: headers.cookie }))).toBe('denied');
      for (const wrong of ['', 'c', token.slice(0, -1), `${token}x`, 'x'.repeat(10_000)]) {
        expect(access.check(req({ authorization: `Bearer ${wrong}` })), wrong.slice(0, 20)).toBe('denied');
      }
    });
  });

  describe('server timeouts and connections (item 15)', () => {
    it('sets header, request and keep-alive timeouts', () => {
      expect(open.server.headersTimeout).toBe(10_000);
      expect(open.server.requestTimeout).toBe(30_000);
      expect(open.server.keepAliveTimeout).toBe(5_000);
    });

    it('refuses a timeout that is not a whole number of ms above 0, before it starts anything', async () => {
      for (const bad of [0, -1, Number.NaN, 1.5]) {
        await expect(serveDashboard({ connection: url, queues: [name], port: 0, timeouts: { headersMs: bad } })).rejects.toThrow(
          ValidationError,
        );
      }
    });

    it('closes a connection whose headers or body are too slow', async () => {
      const quick = await serveDashboard({
        connection: url,
        queues: [name],
        port: 0,
        timeouts: { headersMs: 300, requestMs: 600, keepAliveMs: 300 },
      });
      try {
        const port = Number(new URL(quick.url).port);
        const slowHeaders = connect(port, '127.0.0.1');
        slowHeaders.write(`GET / HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n`);
        const slowBody = connect(port, '127.0.0.1');
        slowBody.write(`POST /actions/group/pause HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-length: 100\r\n\r\ngroup=`);
        const [a, b] = await Promise.all([closed(slowHeaders), closed(slowBody)]);
        expect(a).toMatch(/^HTTP\/1\.1 408/);
        expect(b).toMatch(/^HTTP\/1\.1 408/);
      } finally {
        await quick.close();
      }
    });

    it(`closes a client's connections past ${MAX_CONNECTIONS_PER_CLIENT}`, async () => {
      // (a server of its own: no other test's kept-alive connections count)
      const own = await serveDashboard({ connection: url, queues: [name], port: 0 });
      const port = Number(new URL(own.url).port);
      const sockets: Socket[] = [];
      try {
        // Each connection answers a request, so the server has taken them all.
        for (let i = 0; i < MAX_CONNECTIONS_PER_CLIENT; i++) {
          const s = connect(port, '127.0.0.1');
          sockets.push(s);
          s.write(`GET /assets/style.css HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n\r\n`);
          await new Promise((r) => s.once('data', r));
        }
        const extra = connect(port, '127.0.0.1');
        sockets.push(extra);
        extra.write(`GET /assets/style.css HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n\r\n`);
        // (closed without an answer; on a server without the cap it is answered and stays open)
        const answered = new Promise<string>((r) => extra.once('data', () => r('answered')));
        expect(await Promise.race([closed(extra), answered])).toBe('');
        for (const s of sockets.splice(0)) s.destroy();
        // (a client under its cap is served again)
        await eventually(async () => (await request(`${own.url}assets/style.css`).catch(() => ({ status: 0 }))).status === 200);
      } finally {
        for (const s of sockets) s.destroy();
        await own.close();
      }
    });
  });

  it('never shows the Redis password in a page', async () => {
    for (const path of ['', 'groups', 'jobs', 'executors', 'periodic', 'api/tick', 'jobs/nothing']) {
      expect((await request(`${open.url}${path}`)).body).not.toContain(PASSWORD);
    }
  });
});

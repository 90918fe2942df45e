/**
 * The dashboard's request modules each on its own, behind a bare node:http server and with no
 * Redis: the gate (Host check and token, ./auth.ts), an action's POST (./action-post.ts) with
 * actions of the test's, and the live stream (./live.ts) on a feed the test drives.
 */
import { EventEmitter } from 'node:events';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BODY, postAction, returnPath } from '../../src/dashboard/action-post.js';
import { authenticate, refuseHost } from '../../src/dashboard/auth.js';
import type { Action } from '../../src/dashboard/bulk.js';
import type { QueueHandle } from '../../src/dashboard/context.js';
import { Flash } from '../../src/dashboard/flash.js';
import { LiveStream, type TickFeed } from '../../src/dashboard/live.js';
import { replies } from '../../src/dashboard/respond.js';
import { Access, WRONG_TOKENS } from '../../src/dashboard/security.js';
import { ValidationError } from '../../src/errors.js';
import { until } from '../helpers/wait.js';

const TOKEN = 'module-token-1234';
const reply = replies('/root');

/** One server for the file; each test sets what answers. */
let answer: (req: IncomingMessage, res: ServerResponse) => Promise<void> | void = () => {};
let server: Server;
let base: string;
beforeAll(async () => {
  server = createServer((req, res) => {
    Promise.resolve(answer(req, res)).catch((err: unknown) => {
      res.writeHead(500);
      res.end(String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

async function request(path: string, init: RequestInit = {}): Promise<{ status: number; body: string; headers: Headers }> {
  const r = await fetch(`${base}${path}`, { redirect: 'manual', ...init });
  return { status: r.status, body: await r.text(), headers: r.headers };
}

describe('the gate (auth.ts)', () => {
  const access = new Access({ token: TOKEN, cookiePath: '/root' });
  beforeAll(() => {
    answer = (req, res) => {
      if (refuseHost(access, reply, req, res)) return;
      const url = new URL(req.url!, 'http://dashboard');
      if (authenticate(access, reply, '/root', req, res, url, url.pathname)) return;
      res.end('in');
    };
  });

  it('refuses a Host that is not the dashboard’s before it looks at the token', async () => {
    // (fetch sets Host itself: node:http sends the one given)
    const r = await new Promise<{ status?: number; cookies?: string[]; body: string }>((resolve, reject) => {
      const out = httpRequest(
        `${base}/groups?token=${TOKEN}`,
        { headers: { host: `rebound.example:${new URL(base).port}` } },
        (res) => {
          let body = '';
          res.on('data', (c) => {
            body += c;
          });
          res.on('end', () => resolve({ status: res.statusCode, cookies: res.headers['set-cookie'], body }));
        },
      );
      out.on('error', reject);
      out.end();
    });
    expect(r.status).toBe(421);
    expect(r.cookies).toBeUndefined();
    expect(r.body).not.toContain(TOKEN);
  });

  it('lets in a bearer, logs a browser in with ?token= (a redirect without it), and refuses the rest', async () => {
    expect((await request('/groups')).status).toBe(401);
    const bearer = await request('/groups', { headers: { authorization: `Bearer ${TOKEN}` } });
    expect([bearer.status, bearer.body]).toEqual([200, 'in']);
    const login = await request(`/groups?token=${TOKEN}&state=failed`);
    expect(login.status).toBe(303);
    expect(login.headers.get('location')).toBe('/root/groups?state=failed');
    const cookie = login.headers.getSetCookie().map((c) => c.split(';')[0]);
    expect(cookie).toHaveLength(1);
    expect(cookie[0]).not.toContain(TOKEN);
    const session = await request('/groups', { headers: { cookie: cookie[0] } });
    expect([session.status, session.body]).toEqual([200, 'in']);
  });

  it('limits wrong tokens per client, and never echoes one', async () => {
    const wrong = 'wrong-token-echo-me';
    const statuses: number[] = [];
    for (let i = 0; i <= WRONG_TOKENS; i++) {
      const r = await request(`/?token=${wrong}`, { headers: { 'x-forwarded-for': 'ignored: no trustProxy' } });
      expect(r.body).not.toContain(wrong);
      statuses.push(r.status);
    }
    expect(statuses.slice(0, WRONG_TOKENS)).toEqual(Array(WRONG_TOKENS).fill(401));
    const limited = await request(`/?token=${wrong}`);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});

describe('an action’s POST (action-post.ts)', () => {
  const access = new Access({ cookiePath: '/root' });
  const flash = new Flash(access);
  const ran: string[] = [];
  const actions = new Map<string, Action>([
    [
      'note',
      async (_q, form) => {
        ran.push(form.get('text') ?? '');
        return `Noted ${form.get('text')}.`;
      },
    ],
    [
      'refuse',
      async () => {
        throw new ValidationError('text', 'is refused');
      },
    ],
  ]);
  const q = { name: 'mail' } as QueueHandle;
  let readOnly = false;
  let csrf = '';
  let cookie = '';

  beforeAll(async () => {
    answer = (req, res) => {
      if (req.method === 'GET') return void res.end(access.csrf(req, res));
      return postAction({ access, flash, reply, actions, readOnly, root: '/root' }, q, '/root', req.url!.slice(1), req, res);
    };
    const r = await fetch(base);
    csrf = await r.text();
    cookie = r.headers.getSetCookie()[0].split(';')[0];
  });

  const post = (action: string, form: Record<string, string>, headers: Record<string, string> = {}) =>
    request(`/${action}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, ...headers },
      body: new URLSearchParams(form).toString(),
    });

  it('runs the action and sends the browser back to a page of the queue only', async () => {
    const r = await post('note', { _csrf: csrf, text: 'a', return: '/root/groups?x=1' });
    expect([r.status, r.headers.get('location'), r.body]).toEqual([303, '/root/groups?x=1', 'Noted a.']);
    const json = await post('note', { _csrf: csrf, text: 'b' }, { accept: 'application/json' });
    expect(JSON.parse(json.body)).toEqual({ ok: true, message: 'Noted b.' });
    for (const back of ['//evil.example/root/', 'https://evil.example/', '/root\\..', '/other/', '/root/\r\nx: y']) {
      expect(returnPath(back, '/root')).toBe('/root/');
    }
    expect(ran.splice(0)).toEqual(['a', 'b']);
  });

  it('runs nothing without the CSRF value, from another origin, for no action or on a read-only dashboard', async () => {
    expect((await post('note', { text: 'x' })).status).toBe(403);
    expect((await post('note', { _csrf: 'f'.repeat(64), text: 'x' })).status).toBe(403);
    expect((await post('note', { _csrf: csrf, text: 'x' }, { origin: 'http://evil.example' })).status).toBe(403);
    expect((await post('constructor', { _csrf: csrf })).status).toBe(404);
    readOnly = true;
    try {
      expect((await post('note', { _csrf: csrf, text: 'x' })).status).toBe(403);
    } finally {
      readOnly = false;
    }
    expect(ran).toEqual([]);
  });

  it('answers a RotaError as a refusal, and refuses a form over its bound unread', async () => {
    const refused = await post('refuse', { _csrf: csrf });
    expect([refused.status, refused.body.includes('is refused')]).toEqual([400, true]);
    const big = await post('note', { _csrf: csrf, text: 'x'.repeat(MAX_BODY) });
    expect(big.status).toBe(413);
    expect(ran).toEqual([]);
  });
});

describe('the live stream (live.ts)', () => {
  /** A feed of ticks the test emits, counting its subscriptions. */
  class Feed extends EventEmitter implements TickFeed {
    views: string[] = [];
    subscribe(queue: string, view: string): () => void {
      this.views.push(`${queue} ${view}`);
      return () => this.views.splice(this.views.indexOf(`${queue} ${view}`), 1);
    }
  }
  const feed = new Feed();
  let n = 0;
  const stream = new LiveStream(feed, (queue) => `event: tick\ndata: ${JSON.stringify({ queue, n: ++n })}\n\n`, reply);

  beforeAll(() => {
    answer = (req, res) => stream.open('mail', new URL(req.url!, 'http://dashboard'), req, res);
  });

  it('refuses a view that is not a path of the dashboard', async () => {
    for (const view of ['//evil.example/', 'https://evil.example/', 'groups']) {
      expect((await request(`/live?view=${encodeURIComponent(view)}`)).status).toBe(400);
    }
    expect(feed.views).toEqual([]);
  });

  it('sends its queue’s ticks only, and unsubscribes when the client goes', async () => {
    feed.emit('tick', 'mail');
    const ac = new AbortController();
    const r = await fetch(`${base}/live?view=/groups`, { signal: ac.signal });
    expect(r.headers.get('content-type')).toBe('text/event-stream');
    expect(r.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(feed.views).toEqual(['mail /groups']);
    const reader = r.body!.getReader();
    let text = '';
    const read = async (marker: string) => {
      while (!text.includes(marker)) text += new TextDecoder().decode((await reader.read()).value);
    };
    // (the last tick first, then each new one of this queue: another queue's tick is not sent)
    await read('"n":1');
    feed.emit('tick', 'other');
    feed.emit('tick', 'mail');
    await read('"n":3');
    expect(text.startsWith('retry: 3000\n\n')).toBe(true);
    expect(text).not.toContain('"queue":"other"');
    ac.abort();
    await until('the stream to unsubscribe', () => feed.views.length === 0);
    expect(feed.listenerCount('tick')).toBe(1);
  });
});

/**
 * The dashboard as a Node request handler: `dashboard({ connection, queues })` gives a
 * `(req, res)` function that node:http, Express or Fastify can mount under a base path. It
 * serves the pages, their assets (shipped in the package: no CDN), the live event stream and the
 * actions, and holds the one Redis connection and the shared reader of the process.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Redis } from 'ioredis';
import { ReshardInProgressError, RotaError, ValidationError } from '../errors.js';
import { checkOptions } from '../options.js';
import { PeriodicTasks } from '../periodic/tasks.js';
import { Queue } from '../queue/queue.js';
import { connect } from '../redis/connection.js';
import { DashboardStore, type Tick } from '../redis/dashboard-store.js';
import { checkQueueName } from '../redis/keys.js';
import { QueueStore } from '../redis/queue-store.js';
import { checkReadLayout } from '../redis/schema.js';
import { checkShards, shardNumbers } from '../redis/shards.js';
import { type Health, health, LagMonitor } from '../util/health.js';
import { ACTIONS } from './actions.js';
import { asset } from './assets.js';
import type { Page, PageContext, QueueHandle } from './context.js';
import { Flash } from './flash.js';
import { bytes, count, html } from './html.js';
import { DASHBOARD_OPTIONS, type DashboardOptions } from './options.js';
import { countCommands, LiveReader, QueueLive } from './reader.js';
import { Access, CSRF_FIELD, SECURITY_HEADERS } from './security.js';
import { executors } from './views/executors.js';
import { groups } from './views/groups.js';
import { jobDetail, jobList } from './views/jobs.js';
import { layout } from './views/layout.js';
import { overview, queueIndex, slotsBusy } from './views/overview.js';
import { periodicList, periodicTask } from './views/periodic.js';
import { redisPage } from './views/redis.js';

export type { DashboardOptions } from './options.js';

/** The handler, with what it holds. */
export interface DashboardHandler {
  (req: IncomingMessage, res: ServerResponse, next?: unknown): void;
  /** The shared reader (one per handler). */
  readonly reader: LiveReader;
  /** Ends the live streams and closes the Redis connection. */
  close(): Promise<void>;
  /**
   * Readiness and liveness for a probe (`rota dashboard --health-port`); sends no Redis command.
   * Ready when its Redis connection is ready and it is not closing; live unless the event loop
   * lags 10 s or more (measured from the first call).
   */
  health(): Health;
}

/** Largest POST body read, bytes. */
const MAX_BODY = 64 * 1024;
/** A larger body is still read (and dropped) up to this size, so that the 413 reaches the client; past it the connection is closed. */
const MAX_DRAINED = 1024 * 1024;

/** A rendered page's main content, or a redirect. */
type Rendered = Page | { redirect: string };

/**
 * Builds the dashboard's handler.
 * @throws {ValidationError} for a bad queue name, base path or other option; nothing is opened then.
 * @example
 * import { createServer } from 'node:http';
 * const handler = dashboard({ connection: 'redis://127.0.0.1:6379', queues: ['mail'], basePath: '/rota' });
 * createServer((req, res) => (req.url?.startsWith('/rota') ? handler(req, res) : res.end('app'))).listen(8080, '127.0.0.1');
 */
export function dashboard(options: DashboardOptions): DashboardHandler {
  // (the options it knows, checked and read once; others it is given are kept as they are)
  const opts: DashboardOptions = { ...options, ...checkOptions(DASHBOARD_OPTIONS, options, { loose: true }) };
  if (!Array.isArray(opts.queues) || opts.queues.length === 0) throw new ValidationError('queues', 'name at least one queue');
  for (const q of opts.queues) checkQueueName(q);
  const root = (opts.basePath ?? '').replace(/\/+$/, '');
  if (root !== '' && !/^\/[A-Za-z0-9._~\-/]*$/.test(root)) {
    throw new ValidationError('basePath', `"${opts.basePath}" must be a path such as /admin/rota`);
  }
  if (opts.token !== undefined && opts.token.length < 8) throw new ValidationError('token', 'must be at least 8 characters');
  const shardsOf = shardCounts(opts.queues, opts.shards);
  // (before the connection: a bad allowed host is refused with nothing opened)
  const access = new Access({
    token: opts.token,
    cookiePath: root || '/',
    trustProxy: opts.trustProxy,
    allowedHosts: opts.allowedHosts,
  });
  const { client, owned } = connect(opts.connection);
  const redis = client as Redis;
  const counter = { sent: 0 };
  countCommands(redis, counter);
  const readOnly = opts.readOnly === true;
  const several = opts.queues.length > 1;
  const flash = new Flash(access);
  const handles = new Map<string, QueueHandle>();
  for (const name of opts.queues) {
    const shards = shardsOf(name);
    const queue = new Queue(name, { connection: redis, shards });
    // (a store per shard, the home shard's last, as the queue's shardKeys)
    const stores = shardNumbers(shards).map(
      (shard) => new DashboardStore(new QueueStore(redis, name, { maxEvents: 0, shard, shards })),
    );
    // (PeriodicTasks opens a connection of its own: its commands count too)
    const periodic = new PeriodicTasks(name, { connection: redis, shards });
    countCommands(periodic.client, counter);
    handles.set(name, { name, queue, periodic, live: new QueueLive(name, stores, redis, shards) });
  }
  const baseOf = (name: string) => (several ? `${root}/q/${encodeURIComponent(name)}` : root);

  const contextOf = (q: QueueHandle, path: string, query: URLSearchParams, csrf: string): PageContext => ({
    root,
    base: baseOf(q.name),
    q,
    queues: opts.queues,
    readOnly,
    csrf,
    path,
    query,
  });

  const render = async (ctx: PageContext): Promise<Rendered | null> => {
    const path = ctx.path;
    if (path === '/' || path === '') return overview(ctx);
    if (path === '/groups') return groups(ctx);
    if (path === '/jobs') {
      const id = ctx.query.get('id');
      if (id) return { redirect: `${ctx.base}/jobs/${encodeURIComponent(id.trim())}` };
      return jobList(ctx);
    }
    if (path.startsWith('/jobs/')) return jobDetail(ctx, decodeURIComponent(path.slice(6)));
    if (path === '/executors') return executors(ctx);
    if (path === '/redis') return redisPage(ctx);
    if (path === '/periodic') {
      const id = ctx.query.get('id');
      if (id) return { redirect: `${ctx.base}/periodic/${encodeURIComponent(id.trim())}` };
      return periodicList(ctx);
    }
    if (path.startsWith('/periodic/')) return periodicTask(ctx, decodeURIComponent(path.slice(10)));
    return null;
  };

  const reader = new LiveReader(
    [...handles.values()].map((h) => h.live),
    counter,
    async (queue, view) => {
      const refusal = handles.get(queue)!.live.refusal;
      if (refusal) return html`<h1>Queue unavailable</h1><p class="error">${refusal.message}</p>`.text;
      const url = new URL(view, 'http://dashboard');
      const page = await render(contextOf(handles.get(queue)!, url.pathname, url.searchParams, ''));
      return page && 'main' in page ? page.main.text : '';
    },
  );
  // (every open page's event stream listens to its ticks)
  reader.setMaxListeners(0);
  reader.on('error', () => {
    // A failed tick (Redis away) is retried on the next; the pages show the last values meanwhile.
  });
  // The live stream's tick message, built once per tick and queue for every open page.
  const tickMessages = new Map<string, string>();
  reader.on('tick', (name: string) => {
    const live = handles.get(name)!.live;
    const t = live.tick!;
    tickMessages.set(
      name,
      `event: tick\ndata: ${JSON.stringify({
        now: t.now,
        counts: t.counts,
        point: live.point ?? null,
        minute: live.history.hourSeries().at(-1) ?? null,
        executors: count(t.liveExecutors),
        slots: slotsBusy(t),
        memory: t.server ? bytes(t.server.usedMemory) : null,
        ops: t.server ? count(t.server.opsPerSec) : null,
      })}\n\n`,
    );
  });
  reader.start();
  // The group indexes load in the background from the start, so that the first groups page need not wait.
  for (const h of handles.values()) h.live.groups.ready().catch(() => {});

  const send = (res: ServerResponse, status: number, type: string, body: string | Buffer, extra: Record<string, string> = {}) => {
    res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': type, 'cache-control': 'no-store', ...extra });
    res.end(body);
  };
  const plainPage = (res: ServerResponse, status: number, title: string, message: string) =>
    send(
      res,
      status,
      'text/html; charset=utf-8',
      html`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title} · Rota</title><link rel="stylesheet" href="${root}/assets/style.css"></head><body><main><h1>${title}</h1><p>${message}</p></main></body></html>`
        .text,
    );

  const tooMany = (req: IncomingMessage, res: ServerResponse) => {
    res.setHeader('retry-after', String(access.retryAfter(req)));
    plainPage(res, 429, 'Too many wrong tokens', 'Too many wrong tokens from this client: wait a minute and try again.');
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // (first of all: a Host that is not this dashboard's is a DNS rebinding, or a misdirected request)
    if (!access.hostAllowed(req)) {
      return plainPage(
        res,
        421,
        'Misdirected request',
        'This dashboard does not answer for this host name. Its operator lists the names it answers for (--allowed-host, allowedHosts).',
      );
    }
    // (the request target after this origin: a target such as `//` or `//host/x` stays a path)
    const target = req.url ?? '/';
    const url = new URL(`http://dashboard${target.startsWith('/') ? '' : '/'}${target}`);
    let path = url.pathname;
    // Mounted by node:http the path still has the base; Express and Fastify strip it.
    if (root && (path === root || path.startsWith(`${root}/`))) path = path.slice(root.length) || '/';

    if (path.startsWith('/assets/') && req.method === 'GET') {
      const a = asset(path.slice(8));
      if (!a) return plainPage(res, 404, 'Not found', 'No such asset.');
      return send(res, 200, a.type, a.body, { 'cache-control': 'public, max-age=3600' });
    }
    const login = access.login(url, req, res);
    if (login === 'limited') return tooMany(req, res);
    if (login === 'allowed') {
      url.searchParams.delete('token');
      const rest = url.searchParams.size ? `?${url.searchParams}` : '';
      // (a path of this dashboard: `/.//evil.example` must not send the browser to //evil.example)
      return send(res, 303, 'text/plain', '', { location: `${root}/${path.replace(/^[/\\]+/, '')}${rest}` });
    }
    const verdict = login === 'denied' ? 'denied' : access.check(req);
    if (verdict === 'limited') return tooMany(req, res);
    if (verdict === 'denied') {
      return plainPage(
        res,
        401,
        'Token needed',
        'This dashboard needs its token: open it with ?token=<token>, or send Authorization: Bearer <token>.',
      );
    }

    let q: QueueHandle | undefined;
    let rest = path;
    if (several) {
      if (path === '/' && req.method === 'GET') {
        await Promise.all(opts.queues.map((n) => reader.touch(n)));
        const page = queueIndex(
          root,
          opts.queues.map((n) => ({ name: n, counts: handles.get(n)!.live.tick?.counts ?? {} })),
        );
        const ctx = contextOf(handles.get(opts.queues[0])!, '/', url.searchParams, access.csrf(req, res));
        return send(res, 200, 'text/html; charset=utf-8', layout(ctx, page).text);
      }
      const m = /^\/q\/([^/]+)(\/.*)?$/.exec(path);
      if (m) {
        q = handles.get(decodeURIComponent(m[1]));
        rest = m[2] ?? '/';
      }
    } else {
      q = handles.get(opts.queues[0]);
    }
    if (!q) return plainPage(res, 404, 'Not found', 'No such page.');
    // A queue being resharded (or whose reshard was killed) has jobs in two layouts, and one laid
    // out with another shard count has shards this dashboard does not read: no page or action
    // answers for part of its jobs.
    try {
      await checkReadLayout(redis, q.name, q.live.shards);
    } catch (err) {
      if (!(err instanceof RotaError)) throw err;
      return plainPage(res, err instanceof ReshardInProgressError ? 503 : 500, 'Queue unavailable', err.message);
    }

    if (req.method === 'POST') {
      if (!rest.startsWith('/actions/')) return plainPage(res, 404, 'Not found', 'No such action.');
      if (readOnly) return plainPage(res, 403, 'Read-only', 'This dashboard is read-only: it takes no action.');
      const action = ACTIONS.get(rest.slice(9));
      if (!action) return plainPage(res, 404, 'Not found', 'No such action.');
      const form = await readForm(req);
      if (!form) {
        res.setHeader('connection', 'close');
        return plainPage(res, 413, 'Refused', `The form is larger than ${MAX_BODY} bytes.`);
      }
      if (!access.csrfPasses(req, form.get(CSRF_FIELD))) {
        return plainPage(res, 403, 'Refused', 'The form lacks its CSRF value (reload the page and try again).');
      }
      let done: Awaited<ReturnType<typeof action>>;
      try {
        done = await action(q, form, { root, base: baseOf(q.name) });
      } catch (err) {
        if (err instanceof RotaError) return plainPage(res, 400, 'Refused', err.message);
        throw err;
      }
      // (a confirmation asked first: its page)
      if (typeof done !== 'string') return send(res, 200, 'text/html; charset=utf-8', done.page.text);
      if ((req.headers.accept ?? '').includes('application/json')) {
        return send(res, 200, 'application/json', JSON.stringify({ ok: true, message: String(done) }));
      }
      const back = form.get('return') ?? '';
      const base = baseOf(q.name);
      const safe = back.startsWith(`${base}/`) && !back.startsWith('//') && !/[\r\n\\]/.test(back) ? back : `${base}/`;
      flash.set(req, res, done);
      return send(res, 303, 'text/plain', done, { location: safe });
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return plainPage(res, 405, 'Method not allowed', 'GET or POST only.');

    await reader.touch(q.name);
    if (rest === '/live') return live(q, url, req, res);
    if (rest === '/api/tick') {
      const {
        swept: _swept,
        cursor: _cursor,
        oldest: _oldest,
        oldestCursor: _oldestCursor,
        heldCursor: _heldCursor,
        held: _held,
        ...tick
      } = q.live.tick ?? ({} as Partial<Tick>);
      return send(res, 200, 'application/json', JSON.stringify({ tick, history: q.live.history.hourSeries() }));
    }
    const ctx = contextOf(q, rest, url.searchParams, access.csrf(req, res));
    const fragment = url.searchParams.get('fragment') === '1';
    if (fragment) ctx.query.delete('fragment');
    let page: Rendered | null;
    try {
      page = await render(ctx);
    } catch (err) {
      // (a name that cannot be a task or job id, say)
      if (err instanceof RotaError) return plainPage(res, 400, 'Refused', err.message);
      throw err;
    }
    if (!page) return plainPage(res, 404, 'Not found', 'No such page.');
    if ('redirect' in page) return send(res, 303, 'text/plain', '', { location: page.redirect });
    if (fragment) return send(res, 200, 'text/html; charset=utf-8', page.main.text);
    send(res, 200, 'text/html; charset=utf-8', layout(ctx, page, flash.take(req, res)).text);
  };

  const live = (q: QueueHandle, url: URL, req: IncomingMessage, res: ServerResponse) => {
    const view = url.searchParams.get('view') ?? '/';
    if (!view.startsWith('/') || view.startsWith('//')) return plainPage(res, 400, 'Refused', 'view must be a path.');
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      'content-type': 'text/event-stream',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.write('retry: 3000\n\n');
    const first = tickMessages.get(q.name);
    if (first) res.write(first);
    const onTick = (name: string) => {
      if (name === q.name) res.write(tickMessages.get(name)!);
    };
    reader.on('tick', onTick);
    const unsubscribe = reader.subscribe(q.name, view, res);
    req.on('close', () => {
      reader.off('tick', onTick);
      unsubscribe();
    });
  };

  const handler = ((req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch((err: unknown) => {
      if (res.headersSent) return void res.end();
      // (a malformed %-escape in the path)
      if (err instanceof URIError) return plainPage(res, 400, 'Bad request', 'The path is not valid percent-encoding.');
      plainPage(res, 500, 'Error', err instanceof Error ? err.message : 'An internal error.');
    });
  }) as DashboardHandler;
  Object.defineProperty(handler, 'reader', { value: reader });
  let closing = false;
  const lag = new LagMonitor();
  handler.health = () => {
    lag.start();
    return health(
      {
        redis: { ok: redis.status === 'ready', detail: `connection ${redis.status}` },
        closing: { ok: !closing, detail: closing ? 'shutting down' : 'not shutting down' },
      },
      { eventLoop: lag.check() },
    );
  };
  handler.close = async () => {
    closing = true;
    lag.stop();
    reader.close();
    await Promise.all([...handles.values()].map((h) => h.periodic.close()));
    if (!owned) return;
    if (redis.status === 'ready') await redis.quit().catch(() => redis.disconnect());
    else redis.disconnect();
  };
  return handler;
}

/**
 * The shard count of each queue from the `shards` option: one for every queue, or one per queue
 * name (1 for a queue not named).
 * @throws {ValidationError} (`shards`) for a bad count, or a name that is not one of the queues.
 */
function shardCounts(queues: readonly string[], shards: DashboardOptions['shards']): (queue: string) => number {
  if (shards === undefined || typeof shards === 'number') {
    const n = checkShards(shards);
    return () => n;
  }
  if (typeof shards !== 'object' || shards === null) {
    throw new ValidationError('shards', 'must be a shard count, or one per queue name');
  }
  const counts = new Map<string, number>();
  for (const [name, n] of Object.entries(shards)) {
    if (!queues.includes(name)) throw new ValidationError('shards', `names "${name}", which is not one of the queues`);
    counts.set(name, checkShards(n));
  }
  return (queue) => counts.get(queue) ?? 1;
}

/**
 * Reads a url-encoded form of at most MAX_BODY bytes; undefined when it is larger. A larger body
 * is read on and dropped up to MAX_DRAINED bytes, so that the client gets the answer (413) rather
 * than a reset; past that the request is ended.
 */
function readForm(req: IncomingMessage): Promise<URLSearchParams | undefined> {
  // A body parser of the application (Express's urlencoded()) read the body first: the form it
  // left on req.body is taken (another body gives no field, and so fails the CSRF check).
  if (req.readableEnded) return Promise.resolve(parsedForm((req as { body?: unknown }).body));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY) chunks.push(c);
      else if (size > MAX_DRAINED) {
        req.destroy();
        resolve(undefined);
      }
    });
    req.on('end', () => resolve(size > MAX_BODY ? undefined : new URLSearchParams(Buffer.concat(chunks).toString('utf8'))));
    req.on('error', reject);
  });
}

/** The form a body parser left on a request: its string fields (a string or buffer body is read as url-encoded). */
function parsedForm(body: unknown): URLSearchParams {
  if (typeof body === 'string' || Buffer.isBuffer(body)) return new URLSearchParams(body.toString('utf8'));
  const form = new URLSearchParams();
  if (body !== null && typeof body === 'object') {
    for (const [k, v] of Object.entries(body)) if (typeof v === 'string') form.append(k, v);
  }
  return form;
}

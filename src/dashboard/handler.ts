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
import { DashboardStore } from '../redis/dashboard-store.js';
import { checkQueueName } from '../redis/keys.js';
import { QueueStore } from '../redis/queue-store.js';
import { checkReadLayout } from '../redis/schema.js';
import { checkShards, shardNumbers } from '../redis/shards.js';
import { type Health, health, LagMonitor } from '../util/health.js';
import { type ActionPost, postAction } from './action-post.js';
import { ACTIONS } from './actions.js';
import { asset } from './assets.js';
import { authenticate, refuseHost } from './auth.js';
import type { PageContext, QueueHandle } from './context.js';
import { Flash } from './flash.js';
import { html } from './html.js';
import { LiveStream, tickJson, tickMessage } from './live.js';
import { DASHBOARD_OPTIONS, type DashboardOptions } from './options.js';
import { renderPage } from './pages.js';
import { countCommands, LiveReader, QueueLive } from './reader.js';
import { replies } from './respond.js';
import { Access } from './security.js';
import { layout } from './views/layout.js';
import { queueIndex } from './views/overview.js';

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

/** A request to one queue's pages: the queue, the path below its base, and the request. */
interface QueueRequest {
  q: QueueHandle;
  /** The path below the queue's base, e.g. `/groups`. */
  path: string;
  url: URL;
  req: IncomingMessage;
  res: ServerResponse;
}

/** A route of a queue: its method (GET answers HEAD too), its path (exact, or every path below a prefix) and its answer. */
interface Route {
  method: 'GET' | 'POST';
  path: string;
  prefix?: true;
  answer(r: QueueRequest): Promise<void> | void;
}

/**
 * Builds the dashboard's handler.
 * @throws {@link ValidationError} for a bad queue name, base path or other option; nothing is opened then.
 * @example
 * ```ts
 * import { createServer } from 'node:http';
 * const handler = dashboard({ connection: 'redis://127.0.0.1:6379', queues: ['mail'], basePath: '/rota' });
 * createServer((req, res) => (req.url?.startsWith('/rota') ? handler(req, res) : res.end('app'))).listen(8080, '127.0.0.1');
 * ```
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
  const reply = replies(root);
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

  const reader = new LiveReader(
    [...handles.values()].map((h) => h.live),
    counter,
    async (queue, view) => {
      const refusal = handles.get(queue)!.live.refusal;
      if (refusal) return html`<h1>Queue unavailable</h1><p class="error">${refusal.message}</p>`.text;
      const url = new URL(view, 'http://dashboard');
      const page = await renderPage(contextOf(handles.get(queue)!, url.pathname, url.searchParams, ''));
      return page && 'main' in page ? page.main.text : '';
    },
  );
  // (every open page's event stream listens to its ticks)
  reader.setMaxListeners(0);
  reader.on('error', () => {
    // A failed tick (Redis away) is retried on the next; the pages show the last values meanwhile.
  });
  const stream = new LiveStream(reader, (name) => tickMessage(handles.get(name)!.live), reply);
  reader.start();
  // The group indexes load in the background from the start, so that the first groups page need not wait.
  for (const h of handles.values()) h.live.groups.ready().catch(() => {});
  const posts: ActionPost = { access, flash, reply, actions: ACTIONS, readOnly, root };

  /** A queue's page, its fragment (`?fragment=1`: the main content alone, for the page script) or its redirect. */
  const page = async ({ q, path, url, req, res }: QueueRequest): Promise<void> => {
    const ctx = contextOf(q, path, url.searchParams, access.csrf(req, res));
    const fragment = url.searchParams.get('fragment') === '1';
    if (fragment) ctx.query.delete('fragment');
    let rendered: Awaited<ReturnType<typeof renderPage>>;
    try {
      rendered = await renderPage(ctx);
    } catch (err) {
      // (a name that cannot be a task or job id, say)
      if (err instanceof RotaError) return reply.page(res, 400, 'Refused', err.message);
      throw err;
    }
    if (!rendered) return reply.page(res, 404, 'Not found', 'No such page.');
    if ('redirect' in rendered) return reply.send(res, 303, 'text/plain', '', { location: rendered.redirect });
    if (fragment) return reply.send(res, 200, 'text/html; charset=utf-8', rendered.main.text);
    reply.send(res, 200, 'text/html; charset=utf-8', layout(ctx, rendered, flash.take(req, res)).text);
  };

  /** A queue's routes, below its base: the first that matches answers. */
  const routes: readonly Route[] = [
    {
      method: 'POST',
      path: '/actions/',
      prefix: true,
      answer: ({ q, path, req, res }) => postAction(posts, q, baseOf(q.name), path.slice('/actions/'.length), req, res),
    },
    { method: 'GET', path: '/live', answer: ({ q, url, req, res }) => stream.open(q.name, url, req, res) },
    { method: 'GET', path: '/api/tick', answer: ({ q, res }) => reply.send(res, 200, 'application/json', tickJson(q.live)) },
    { method: 'GET', path: '/', prefix: true, answer: page },
  ];

  /** Answers a request to a queue's pages by its route. */
  const route = async (r: QueueRequest): Promise<void> => {
    const method = r.req.method === 'HEAD' ? 'GET' : r.req.method;
    if (method !== 'GET' && method !== 'POST') return reply.page(r.res, 405, 'Method not allowed', 'GET or POST only.');
    const found = routes.find((x) => x.method === method && (x.prefix ? r.path.startsWith(x.path) : r.path === x.path));
    if (!found) return reply.page(r.res, 404, 'Not found', method === 'POST' ? 'No such action.' : 'No such page.');
    // (a page or its stream: the reader stays awake, and ticks first when its last tick is old)
    if (method === 'GET') await reader.touch(r.q.name);
    return found.answer(r);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // (first of all: a Host that is not this dashboard's is a DNS rebinding, or a misdirected request)
    if (refuseHost(access, reply, req, res)) return;
    // (the request target after this origin: a target such as `//` or `//host/x` stays a path)
    const target = req.url ?? '/';
    const url = new URL(`http://dashboard${target.startsWith('/') ? '' : '/'}${target}`);
    let path = url.pathname;
    // Mounted by node:http the path still has the base; Express and Fastify strip it.
    if (root && (path === root || path.startsWith(`${root}/`))) path = path.slice(root.length) || '/';

    // (the package's assets need no token)
    if (path.startsWith('/assets/') && req.method === 'GET') {
      const a = asset(path.slice(8));
      if (!a) return reply.page(res, 404, 'Not found', 'No such asset.');
      return reply.send(res, 200, a.type, a.body, { 'cache-control': 'public, max-age=3600' });
    }
    if (authenticate(access, reply, root, req, res, url, path)) return;

    let q: QueueHandle | undefined;
    let rest = path;
    if (several) {
      if (path === '/' && req.method === 'GET') {
        await Promise.all(opts.queues.map((n) => reader.touch(n)));
        const index = queueIndex(
          root,
          opts.queues.map((n) => ({ name: n, counts: handles.get(n)!.live.tick?.counts ?? {} })),
        );
        const ctx = contextOf(handles.get(opts.queues[0])!, '/', url.searchParams, access.csrf(req, res));
        return reply.send(res, 200, 'text/html; charset=utf-8', layout(ctx, index).text);
      }
      const m = /^\/q\/([^/]+)(\/.*)?$/.exec(path);
      if (m) {
        q = handles.get(decodeURIComponent(m[1]));
        rest = m[2] ?? '/';
      }
    } else {
      q = handles.get(opts.queues[0]);
    }
    if (!q) return reply.page(res, 404, 'Not found', 'No such page.');
    // A queue being resharded (or whose reshard was killed) has jobs in two layouts, and one laid
    // out with another shard count has shards this dashboard does not read: no page or action
    // answers for part of its jobs.
    try {
      await checkReadLayout(redis, q.name, q.live.shards);
    } catch (err) {
      if (!(err instanceof RotaError)) throw err;
      return reply.page(res, err instanceof ReshardInProgressError ? 503 : 500, 'Queue unavailable', err.message);
    }
    return route({ q, path: rest, url, req, res });
  };

  const handler = ((req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch((err: unknown) => {
      if (res.headersSent) return void res.end();
      // (a malformed %-escape in the path)
      if (err instanceof URIError) return reply.page(res, 400, 'Bad request', 'The path is not valid percent-encoding.');
      reply.page(res, 500, 'Error', err instanceof Error ? err.message : 'An internal error.');
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
 * @throws {@link ValidationError} (`shards`) for a bad count, or a name that is not one of the queues.
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

/**
 * The health endpoints of `rota worker`, `rota scheduler` and `rota dashboard` (`--health-port`):
 * `/readyz` and `/livez` answer 200 or 503 with a JSON body naming each check. A probe calls
 * `check()`, which reads what the process already knows and sends no Redis command.
 */
import { createServer, type Server } from 'node:http';
import type { Health } from '../util/health.js';
import { listen } from './listen.js';

export interface HealthServerOptions {
  /** Port to listen on (0: a free one). */
  port: number;
  /**
   * Address to bind; default 127.0.0.1 (loopback only). A kubelet probes the pod's address, so
   * a pod binds 0.0.0.0 (`--health-host 0.0.0.0`).
   */
  host?: string;
  /** The process's health now (e.g. `() => worker.health()`). */
  check: () => Health;
}

export interface HealthServer {
  /** Where the endpoints are served, the address bound, e.g. http://127.0.0.1:9465 (append /readyz or /livez). */
  url: string;
  /** The address the server bound (e.g. 127.0.0.1, 0.0.0.0, ::). */
  host: string;
  port: number;
  close(): Promise<void>;
}

/**
 * Serves `/readyz` (200 when ready) and `/livez` (200 when live); 503 otherwise, and 404 for any
 * other path. The body is the Health as JSON: `{ live, ready, checks: { name: { ok, detail } } }`.
 * Rejects with the listen error (EADDRINUSE...) when the port cannot be bound.
 */
export async function serveHealth(opts: HealthServerOptions): Promise<HealthServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/readyz' && path !== '/livez') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('see /readyz or /livez\n');
      return;
    }
    let h: Health;
    try {
      h = opts.check();
    } catch (err) {
      res
        .writeHead(503, { 'content-type': 'application/json' })
        .end(`${JSON.stringify({ error: err instanceof Error ? err.message : String(err) })}\n`);
      return;
    }
    const ok = path === '/readyz' ? h.ready : h.live;
    res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    res.end(`${JSON.stringify(h)}\n`);
  });
  // (a probe's connection is not kept open: close() ends at once)
  server.keepAliveTimeout = 1000;
  const bound = await listen(server, opts.port, opts.host);
  return {
    url: bound.origin,
    host: bound.host,
    port: bound.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

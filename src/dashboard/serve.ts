/**
 * Serving the dashboard on its own HTTP server, as `rota dashboard` does: bound to 127.0.0.1 by
 * default; on any other address it refuses to start without a token.
 */
import { createServer, type Server } from 'node:http';
import { ValidationError } from '../errors.js';
import { checkOptions, DASHBOARD_OPTIONS } from '../options.js';
import { type DashboardHandler, type DashboardOptions, dashboard } from './handler.js';

/** Options of {@link serveDashboard}. */
export interface ServeDashboardOptions extends DashboardOptions {
  /** Port (0: a free one; up to 65,535); default 8080. */
  port?: number;
  /** Address to bind; default 127.0.0.1. Any other than a loopback address needs a token. */
  host?: string;
}

/** A running dashboard server. */
export interface DashboardServer {
  /** Where it is served, e.g. http://127.0.0.1:8080/. */
  url: string;
  server: Server;
  handler: DashboardHandler;
  close(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/** Whether an address is this machine's loopback (127.0.0.0/8, ::1, localhost). */
export function isLoopback(host: string): boolean {
  return LOOPBACK.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * Starts a dashboard server.
 * @throws {ValidationError} (`token`) when bound to an address other than loopback without a
 * token, or naming another bad option (see {@link dashboard}); nothing is started then.
 */
export async function serveDashboard(options: ServeDashboardOptions): Promise<DashboardServer> {
  const opts: ServeDashboardOptions = { ...options, ...checkOptions(DASHBOARD_OPTIONS, options, { loose: true }) };
  const host = opts.host ?? '127.0.0.1';
  if (!isLoopback(host) && !opts.token) {
    throw new ValidationError(
      'token',
      `the dashboard binds ${host}, which other machines can reach: give it a token (--token or ROTA_DASHBOARD_TOKEN), or bind 127.0.0.1`,
    );
  }
  const handler = dashboard(opts);
  const server = createServer(handler);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.port ?? 8080, host, () => resolve());
    });
  } catch (err) {
    await handler.close();
    throw err;
  }
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : opts.port;
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}${(opts.basePath ?? '').replace(/\/+$/, '')}/`,
    server,
    handler,
    close: async () => {
      await handler.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

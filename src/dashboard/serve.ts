/**
 * Serving the dashboard on its own HTTP server, as `rota dashboard` does: bound to 127.0.0.1 by
 * default; on any other address it refuses to start without a token. It answers the hosts the
 * handler does (see DashboardOptions.allowedHosts), and the name it is bound to. The server closes slow and
 * idle connections (header, request and keep-alive timeouts), takes a bounded number of
 * connections per client, and answers the requests Node refuses itself (431, 400, 408) with the
 * dashboard's security headers.
 */
import { createServer, type Server } from 'node:http';
import { isIP, type Socket } from 'node:net';
import { ValidationError } from '../errors.js';
import { checkOptions } from '../options.js';
import { type DashboardHandler, dashboard } from './handler.js';
import { SERVE_DASHBOARD_OPTIONS, type ServeDashboardOptions, type ServerTimeouts } from './options.js';
import { SECURITY_HEADERS } from './security.js';

const TIMEOUTS: ServerTimeouts = { headersMs: 10_000, requestMs: 30_000, keepAliveMs: 5_000 };
/** Connections one client address may hold open at once (a browser opens 6 per host, and a stream per open page). */
export const MAX_CONNECTIONS_PER_CLIENT = 32;

export type { ServeDashboardOptions, ServerTimeouts } from './options.js';

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
 * Starts a dashboard server (with the timeouts and the per-client connection cap above).
 * @throws {@link ValidationError} (`token`) when bound to an address other than loopback without a
 * token, (`timeouts.<name>`) for a timeout that is not a whole number of ms above 0, or naming
 * another bad option (see {@link dashboard}); nothing is started then.
 */
export async function serveDashboard(options: ServeDashboardOptions): Promise<DashboardServer> {
  const opts = checkOptions(SERVE_DASHBOARD_OPTIONS, options);
  const { host } = opts;
  if (!isLoopback(host) && !opts.token) {
    throw new ValidationError(
      'token',
      `the dashboard binds ${host}, which other machines can reach: give it a token (--token or ROTA_DASHBOARD_TOKEN), or bind 127.0.0.1`,
    );
  }
  const t = { ...TIMEOUTS, ...opts.timeouts };
  for (const [name, ms] of Object.entries(t)) {
    if (!Number.isSafeInteger(ms) || ms <= 0)
      throw new ValidationError(`timeouts.${name}`, `must be a whole number of ms above 0 (got ${ms})`);
  }
  // (a name it is bound to is one browsers reach it by)
  const named = isIP(host) === 0 && !isLoopback(host) ? [host] : [];
  const handler = dashboard({ ...opts, allowedHosts: [...(opts.allowedHosts ?? []), ...named] });
  const server = createServer(
    {
      headersTimeout: t.headersMs,
      requestTimeout: Math.max(t.requestMs, t.headersMs),
      keepAliveTimeout: t.keepAliveMs,
      // (how often Node checks the header and request timeouts)
      connectionsCheckingInterval: Math.min(1000, t.headersMs),
    },
    handler,
  );
  limitConnections(server, MAX_CONNECTIONS_PER_CLIENT);
  server.on('clientError', answerClientError);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.port, host, () => resolve());
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

/** Closes a new connection at once when its client address already holds `most` open ones. */
function limitConnections(server: Server, most: number): void {
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const client = socket.remoteAddress ?? '';
    const n = open.get(client) ?? 0;
    if (n >= most) {
      socket.destroy();
      return;
    }
    open.set(client, n + 1);
    socket.once('close', () => {
      const left = (open.get(client) ?? 1) - 1;
      if (left > 0) open.set(client, left);
      else open.delete(client);
    });
  });
}

/**
 * Answers a request Node's parser refused (headers too large: 431; a timeout: 408; else 400) as
 * Node would, with the dashboard's security headers, and closes the connection.
 */
function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
  const [status, text] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout']
        : [400, 'Bad Request'];
  const headers = Object.entries(SECURITY_HEADERS)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  socket.end(`HTTP/1.1 ${status} ${text}\r\n${headers}content-length: 0\r\nconnection: close\r\n\r\n`);
}

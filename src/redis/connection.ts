/** Redis connections: a URL, ioredis options or a ready ioredis instance. */
import type { Cluster, ClusterOptions, RedisOptions } from 'ioredis';
import { Redis } from 'ioredis';
import { ConnectionError, ValidationError } from '../errors.js';

/** How to reach Redis: a `redis://` URL, ioredis options, or an ioredis client (Redis or Cluster). */
export type ConnectionOption = string | RedisOptions | Redis | Cluster;

/** A client and whether Rota created it (and so must close it). */
export interface OwnedClient {
  client: Redis;
  owned: boolean;
}

/** How long a client waits before it tries again after the server refused its credentials. */
export const AUTH_RETRY_MS = 5000;

/** Reconnect delays for other failures: 50 ms more each attempt, at most a second. */
const RETRY_STEP_MS = 50;
const RETRY_MAX_MS = 1000;
/** How long a client waits for a sentinel's answer before it asks the next sentinel. */
const SENTINEL_COMMAND_TIMEOUT_MS = 2000;
/** What ioredis rejects a connect with when its connector was disconnected meanwhile. */
const CONNECTION_CLOSED = 'Connection is closed.';

/**
 * A command sent before a client Rota opened has ever reached Redis fails after this many
 * reconnect attempts (the first attempt and two more, 150 ms apart in all): at once when nothing
 * listens or the host name does not resolve, after at most three connect timeouts (10 s each by
 * default) when the host does not answer. Once the client has reached Redis, a command waits
 * through an outage for ioredis's `maxRetriesPerRequest` attempts (20 by default, about 10 s).
 */
export const FIRST_CONTACT_RETRIES = 2;

/** Highest database number a URL or `db` option may name (Redis reads it as a 32-bit int). */
export const MAX_DB = 2 ** 31 - 1;

/** The reply of a server that has no database of the number a client asked for (SELECT). */
const DB_REFUSED = /DB index is out of range|invalid DB index/i;

/** Whether `err` says the server refused the client's credentials (retrying at once cannot help). */
export function isAuthError(err: unknown): boolean {
  return err instanceof Error && /^(WRONGPASS|NOAUTH|NOPERM)\b|invalid (username-password pair|password)/i.test(err.message);
}

function isClient(c: ConnectionOption): c is Redis | Cluster {
  return typeof c === 'object' && c !== null && typeof (c as Redis).duplicate === 'function';
}

function isCluster(c: Redis | Cluster): c is Cluster {
  return typeof (c as Cluster).nodes === 'function';
}

/**
 * A reconnect strategy that backs off to {@link AUTH_RETRY_MS} while the last error was a refused
 * authentication, so a wrong password does not open a connection after another.
 */
function retryStrategy(lastError: () => Error | undefined): (times: number) => number | null {
  return (times) => {
    const last = lastError();
    // (a database the server does not have: connecting again cannot help)
    if (last instanceof ConnectionError && last.reason === 'DB') return null;
    return isAuthError(last) ? AUTH_RETRY_MS : Math.min(RETRY_STEP_MS * times, RETRY_MAX_MS);
  };
}

/**
 * Checks the form of a connection option before anything is opened: a `redis://` or `rediss://`
 * URL (its database, when given, a whole number from 0 to {@link MAX_DB}), ioredis options (their
 * `db` likewise) or an ioredis client.
 * @throws {ValidationError} naming `connection` (a URL's password masked).
 */
export function checkConnection(conn: unknown): void {
  if (typeof conn === 'string') {
    checkUrl(conn);
    return;
  }
  if (typeof conn !== 'object' || conn === null || Array.isArray(conn)) {
    throw new ValidationError('connection', 'must be a redis:// URL, ioredis options or an ioredis client');
  }
  if (isClient(conn as ConnectionOption)) return;
  const db = (conn as RedisOptions).db;
  if (db !== undefined && (typeof db !== 'number' || !Number.isInteger(db) || db < 0 || db > MAX_DB)) {
    throw new ValidationError('connection.db', `must be a whole number from 0 to ${MAX_DB} (a database number)`);
  }
}

/**
 * Opens a client. `blocking` clients (workers' wait for work, schedulers) retry every command
 * through outages instead of failing it, so they resume by themselves when Redis returns.
 * `subscriber` clients (SUBSCRIBE only) skip the ready check. A client Rota creates from a
 * Cluster keeps the cluster's options, with these settings applied to each node's connection.
 */
export function connect(
  conn: ConnectionOption,
  opts: { blocking?: boolean; reuse?: boolean; subscriber?: boolean } = {},
): OwnedClient {
  if (isClient(conn) && opts.reuse) return { client: conn as Redis, owned: false };
  let last: Error | undefined;
  const extra: RedisOptions = { retryStrategy: retryStrategy(() => last) };
  if (opts.blocking) Object.assign(extra, { maxRetriesPerRequest: null, enableReadyCheck: true });
  // A subscriber's ready check (INFO) can race its resubscription after a reconnect and be refused
  // in subscriber mode, looping reconnects (ioredis issues #2037, #2099): no ready check for it.
  if (opts.subscriber) extra.enableReadyCheck = false;
  let client: Redis | Cluster;
  if (isClient(conn))
    client = isCluster(conn) ? duplicateCluster(conn, extra) : conn.duplicate(withSentinelDefaults(conn.options, extra));
  else if (typeof conn === 'string') client = new Redis(checkUrl(conn), extra);
  else client = new Redis({ ...withSentinelDefaults(conn, {}), ...conn, ...extra });
  if (!isCluster(client)) {
    failFast(client);
    if (client.options.sentinels?.length) reconnectThroughSwitch(client);
    if (client.options.db) guardDb(client);
  }
  // Connection errors show up as failed commands (or as the executor's error events); without a
  // listener ioredis would print every failed reconnect attempt during an outage.
  // (`last` is the error of the current connection attempt: a refused AUTH answers after `connect`)
  client.on('error', (err: Error) => (last = err));
  client.on('connect', () => (last = undefined));
  lastErrors.set(client, () => last);
  return { client: client as Redis, owned: true };
}

/**
 * `url` when it is a `redis://` or `rediss://` URL whose database, when given, is a whole number
 * from 0 to {@link MAX_DB}. @throws {ValidationError} naming it (password masked) else.
 */
function checkUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new ValidationError(
      'connection',
      `"${maskUrl(url)}" is not a URL (expected redis://[user:password@]host[:port][/db] or rediss://...)`,
    );
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:')
    throw new ValidationError('connection', `"${maskUrl(url)}" is not a Redis URL (expected redis:// or rediss://)`);
  const db = urlDb(u);
  if (db === null)
    throw new ValidationError('connection', `"${maskUrl(url)}": the database must be a whole number from 0 to ${MAX_DB}`);
  return url;
}

/** The database a Redis URL names (0 when none), or null when its path is no database number. */
export function urlDb(u: URL): number | null {
  const path = u.pathname.replace(/^\//, '');
  if (path === '') return 0;
  const db = Number(path);
  return /^\d{1,10}$/.test(path) && db <= MAX_DB ? db : null;
}

/**
 * Makes a client that asks for a database other than 0 refuse to run any command when the server
 * has no such database: ioredis sends SELECT on connecting but runs the commands on database 0 when
 * it is refused. The refusal (its reply comes before the ready check's) fails the ready check
 * instead, so the waiting commands fail with a {@link ConnectionError} (`reason` `DB`) and the
 * client does not connect again. Needs the ready check (`enableReadyCheck`, on by default).
 */
export function guardDb(client: Redis): void {
  let refused: ConnectionError | undefined;
  client.on('connect', () => (refused = undefined));
  const internal = client as unknown as {
    _readyCheck(cb: (err: Error | null, info?: unknown) => void): void;
    silentEmit(event: string, arg: unknown): unknown;
  };
  // (the refused SELECT's error event is the ConnectionError, so listeners hear it once, typed)
  const emit = internal.silentEmit.bind(client);
  internal.silentEmit = (event, arg) => {
    if (event === 'error' && arg instanceof Error && !(arg instanceof ConnectionError) && DB_REFUSED.test(arg.message)) {
      refused = connectionError(targetOf(client), arg);
      return emit(event, refused);
    }
    return emit(event, arg);
  };
  const check = internal._readyCheck.bind(client);
  internal._readyCheck = (cb) => check((err, info) => (refused ? cb(refused) : cb(err, info)));
}

/**
 * Makes a client Rota opened fail its commands as a {@link ConnectionError} naming where and why,
 * and fail them after {@link FIRST_CONTACT_RETRIES} attempts until it first reaches Redis. ioredis
 * reads `maxRetriesPerRequest` at each failed attempt, and rejects the waiting commands through
 * `flushQueue` (with a MaxRetriesPerRequestError, which names neither).
 */
function failFast(client: Redis): void {
  const later = client.options.maxRetriesPerRequest;
  if (typeof later === 'number' && later > FIRST_CONTACT_RETRIES) {
    client.options.maxRetriesPerRequest = FIRST_CONTACT_RETRIES;
    client.once('ready', () => (client.options.maxRetriesPerRequest = later));
  }
  const internal = client as unknown as { flushQueue(error: Error, options?: object): void };
  const flush = internal.flushQueue.bind(client);
  internal.flushQueue = (error, options) =>
    flush(error.name === 'MaxRetriesPerRequestError' ? (asConnectionError(client, error) as Error) : error, options);
}

/** The last connection error of each client Rota opened (see {@link connect}). */
const lastErrors = new WeakMap<object, () => Error | undefined>();

/** Where `client` connects, for messages: a URL with the password masked, or its Sentinel or Cluster nodes. */
export function targetOf(client: Redis | Cluster): string {
  if (isCluster(client))
    return `cluster ${
      client
        .nodes('master')
        .map((n) => `${n.options.host}:${n.options.port}`)
        .join(',') || '(no node reached)'
    }`;
  const o = client.options;
  if (o.sentinels?.length) return `sentinel master "${o.name}" via ${o.sentinels.map((n) => `${n.host}:${n.port}`).join(',')}`;
  if (o.path) return o.path;
  const auth = o.password ? `${encodeURIComponent(o.username ?? '')}:***@` : '';
  return `redis${o.tls ? 's' : ''}://${auth}${o.host ?? '127.0.0.1'}:${o.port ?? 6379}${o.db ? `/${o.db}` : ''}`;
}

/** Errors that say Redis was not reached, or refused the client's credentials. */
const UNREACHED =
  /^(WRONGPASS|NOAUTH|Protocol error)\b|Connection is closed|ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH|certificate/;

/**
 * `err` as a {@link ConnectionError} naming where `client` connects and the cause (its last
 * connection error, when Rota opened it) when `err` says Redis was not reached; else `err`.
 */
export function asConnectionError(client: Redis | Cluster, err: unknown): unknown {
  if (!(err instanceof Error) || err instanceof ConnectionError) return err;
  const unreached =
    err.name === 'MaxRetriesPerRequestError' ||
    UNREACHED.test(err.message) ||
    UNREACHED.test(String((err as NodeJS.ErrnoException).code));
  if (!unreached) return err;
  return connectionError(targetOf(client), lastErrors.get(client)?.() ?? err);
}

/**
 * Under Sentinel, unless the options say otherwise, a client follows a failover as soon as the
 * sentinels announce it (`failoverDetector`): without it, a client may keep writing to a demoted
 * primary that still accepts writes, and those writes are lost. And a sentinel that does not
 * answer (stopped, its host paused) is given up after {@link SENTINEL_COMMAND_TIMEOUT_MS} for the
 * next one (`sentinelCommandTimeout`): ioredis would wait for its answer for ever.
 */
function withSentinelDefaults(options: RedisOptions, extra: RedisOptions): RedisOptions {
  if (!options.sentinels?.length) return extra;
  const defaults: RedisOptions = {};
  if (options.failoverDetector === undefined) defaults.failoverDetector = true;
  if (options.sentinelCommandTimeout === undefined) defaults.sentinelCommandTimeout = SENTINEL_COMMAND_TIMEOUT_MS;
  return { ...defaults, ...extra };
}

/**
 * Makes a Sentinel client connect again when its failover detector hears +switch-master while it
 * is connecting: ioredis then disconnects the connector under the connect in flight, whose
 * "Connection is closed." ends the client for good, so every later command would fail. A close
 * the client was asked for (`disconnect`, `quit`) still ends it.
 */
function reconnectThroughSwitch(client: Redis): void {
  const internal = client as unknown as {
    manuallyClosing: boolean;
    connector: { connect(emit: unknown): Promise<unknown> };
  };
  const connector = internal.connector;
  const connectOnce = connector.connect.bind(connector);
  connector.connect = async (emit) => {
    for (;;) {
      try {
        return await connectOnce(emit);
      } catch (err) {
        const switched = err instanceof Error && err.message === CONNECTION_CLOSED && !internal.manuallyClosing;
        if (!switched) throw err;
      }
    }
  };
}

/**
 * A new Cluster client with `cluster`'s startup nodes and options. The per-connection settings go
 * to every node's connection (`redisOptions`); `enableReadyCheck` is the cluster's own. A
 * blocking client also waits through a failover (the cluster's retries of a moved or refused
 * command) instead of failing the command after a few redirections.
 */
function duplicateCluster(cluster: Cluster, extra: RedisOptions): Cluster {
  const { enableReadyCheck, retryStrategy: _nodeRetry, ...nodeOptions } = extra;
  const options: Partial<ClusterOptions> = {
    redisOptions: { ...cluster.options.redisOptions, ...nodeOptions },
    clusterRetryStrategy: (times) => extra.retryStrategy!(times) ?? null,
  };
  if (enableReadyCheck !== undefined) options.enableReadyCheck = enableReadyCheck;
  if (extra.maxRetriesPerRequest === null) {
    Object.assign(options, {
      maxRedirections: 1000,
      retryDelayOnFailover: 200,
      retryDelayOnClusterDown: 200,
      retryDelayOnTryAgain: 200,
    });
  }
  return cluster.duplicate([], options);
}

/** What a masked secret is shown as. */
export const MASK = '***';

/** Query parameters of a URL whose values are secrets (`redis://host?password=...`). */
export const SECRET_PARAM = /^(password|pass|pwd|passwd|secret|token|auth|key)$/i;

/**
 * `url` with its password and the values of its secret-named query parameters
 * ({@link SECRET_PARAM}: `?password=`, `?token=`...) replaced by `***`. Of a string that does not
 * parse as a URL, what comes before its last `@` after the scheme (where a user and password would
 * be) is replaced by `***`, and so are those parameters' values.
 */
export function maskUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = MASK;
    // (the query is rewritten by hand: URLSearchParams would re-encode the parameters kept)
    return maskParams(u.toString()).replace(/\/$/, '');
  } catch {
    const at = url.lastIndexOf('@');
    if (at < 0) return maskParams(url);
    const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.exec(url)?.[0] ?? '';
    return maskParams(`${scheme}${MASK}${url.slice(at)}`);
  }
}

/** `text` with the value of every secret-named query parameter (`?password=...`, `&token=...`) masked. */
function maskParams(text: string): string {
  // (each part bounded, so that a long text costs a linear scan)
  return text.replace(/([?&]([^=&#?\s"']{1,64})=)([^&#\s"']*)/g, (all, head: string, name: string) =>
    SECRET_PARAM.test(name) ? `${head}${MASK}` : all,
  );
}

/**
 * `text` (a log line, an error message) with the secrets of every URL in it masked: the password
 * (`scheme://user:***@`) and the values of secret-named query parameters. What the CLI prints and
 * what an executor logs pass through it.
 */
export function maskText(text: string): string {
  return maskParams(text.replace(/\b([a-z][a-z0-9+.-]{0,31}:\/\/[^\s:@/"'[]{0,256}):[^\s@/"'[]{0,1024}@/gi, `$1:${MASK}@`));
}

/**
 * A log line's field with its URLs' secrets masked ({@link maskText}): a string, or an error (a
 * copy of it, its message and stack masked, its class and own fields kept); anything else as it is.
 */
export function maskValue(value: unknown): unknown {
  if (typeof value === 'string') return maskText(value);
  if (!(value instanceof Error)) return value;
  const copy = Object.assign(Object.create(Object.getPrototypeOf(value)) as Error, value);
  for (const key of ['message', 'stack'] as const) {
    const text = value[key];
    if (text !== undefined) Object.defineProperty(copy, key, { value: maskText(text), writable: true, configurable: true });
  }
  if (value.cause !== undefined)
    Object.defineProperty(copy, 'cause', { value: maskValue(value.cause), writable: true, configurable: true });
  return copy;
}

/** A log line's fields, each masked as {@link maskValue} does. */
export function maskFields(obj: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) out[k] = maskValue(v);
  return out;
}

/** What each cause of a failed connection means, by its code. */
const CAUSES: Array<[RegExp, string, string]> = [
  [/^WRONGPASS\b/, 'WRONGPASS', 'the user name or password was refused (WRONGPASS)'],
  [/^NOAUTH\b/, 'NOAUTH', 'the server asks for a password and none was given (NOAUTH)'],
  [/^NOPERM\b/, 'NOPERM', 'the user lacks a permission it needs (NOPERM)'],
  [/^Protocol error\b/, 'PROTOCOL', 'what answers there does not speak the Redis protocol (an HTTP server? a wrong port?)'],
  [DB_REFUSED, 'DB', 'the server has no database of that number (SELECT: DB index is out of range); nothing was run'],
];
const CODES: Record<string, string> = {
  ECONNREFUSED: 'nothing listens there (ECONNREFUSED)',
  ENOTFOUND: 'the host name does not resolve (ENOTFOUND)',
  EAI_AGAIN: 'the host name could not be resolved now (EAI_AGAIN)',
  ETIMEDOUT: 'the connection timed out (ETIMEDOUT)',
  EHOSTUNREACH: 'the host is unreachable (EHOSTUNREACH)',
  ECONNRESET: 'the server closed the connection (ECONNRESET; a TLS server reached without TLS?)',
};

/**
 * The {@link ConnectionError} for a failed connection to `target` (a URL, masked here): its cause
 * is `err`, the client's last connection error (ioredis reports a refused AUTH or an untrusted
 * certificate through its error event, and the command only as "Connection is closed").
 */
export function connectionError(target: string, err: unknown): ConnectionError {
  if (err instanceof ConnectionError) return err;
  const e: NodeJS.ErrnoException = err instanceof Error ? err : new Error(String(err));
  const where = maskUrl(target);
  for (const [pattern, reason, detail] of CAUSES) if (pattern.test(e.message)) return new ConnectionError(where, reason, detail);
  const code = typeof e.code === 'string' ? e.code : '';
  if (CODES[code]) return new ConnectionError(where, code, CODES[code]);
  if (/CERT|SSL|TLS/i.test(code) || /certificate/i.test(e.message)) {
    return new ConnectionError(
      where,
      code || 'TLS',
      `the server's TLS certificate is not trusted (${code || e.message}); pass its CA`,
    );
  }
  return new ConnectionError(where, code || 'UNKNOWN', e.message);
}

/**
 * The state of the Redis Cluster `node` is a node of (`ok`, `fail`; '' when CLUSTER INFO is
 * refused), or undefined when it is no Cluster node. A server that refuses INFO (an ACL) is taken
 * for a single server, as ioredis's ready check does.
 */
export async function clusterState(node: Redis): Promise<string | undefined> {
  const info = await node.info('cluster').catch(() => '');
  if (!/^cluster_enabled:1\b/m.test(info)) return undefined;
  const state = await node.cluster('INFO').catch(() => '');
  return /^cluster_state:(\w+)/m.exec(state)?.[1] ?? '';
}

/** Resolves once `client` answers a PING: a single server, or every primary of a Cluster. */
export async function pingPrimaries(client: Redis | Cluster): Promise<void> {
  await Promise.all(isCluster(client) ? client.nodes('master').map((n) => n.ping()) : [client.ping()]);
}

/** The Redis server's clock, ms (the clock leases, registry entries and finished times are in). */
export async function serverTime(client: Redis | Cluster): Promise<number> {
  const [sec, usec] = await client.time();
  return Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
}

/** What the CLI's commands share: opening the queue, printing tables and JSON, failing clearly. */

import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { type Command, InvalidArgumentError } from 'commander';
import { Cluster, type ClusterNode, type ClusterOptions, Redis, type RedisOptions } from 'ioredis';
import { ConnectionError, RedisFullError, RotaError, ShardCountError } from '../errors.js';
import { Queue } from '../queue/queue.js';
import { clusterState, connectionError, guardDb, MAX_DB, maskUrl, pingPrimaries, urlDb } from '../redis/connection.js';
import { readShardCount } from '../redis/schema.js';
import { MAX_SHARDS } from '../redis/shards.js';
import { EXIT_INVALID, EXIT_UNREACHABLE } from './exit-codes.js';
import { keepSecret, printMessage } from './secrets.js';

/** Options every command can read with `command.optsWithGlobals()`. */
export interface GlobalOptions {
  /** Redis URL (default: $REDIS_URL or redis://127.0.0.1:6379; `--redis-file` reads it from a file). */
  redis: string;
  /** File holding the Redis URL (read into `redis` before the command runs). */
  redisFile?: string;
  /** Queue name (default: "default"). */
  queue: string;
  /** PEM file of the CA that signed the server's TLS certificate. */
  tlsCa?: string;
  /** PEM file of the client's TLS certificate (for servers that ask for one). */
  tlsCert?: string;
  /** PEM file of the client certificate's private key. */
  tlsKey?: string;
  /** Print times in UTC rather than in each periodic task's zone (or calendar's --tz). */
  utc?: boolean;
  /** The queue's shard count (`--shards` or $ROTA_SHARDS); when absent, read from the queue's layout (see shardsOf). */
  shards?: number;
}

/** A failure the CLI reports in one line, with the exit status it calls for. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

/** The global options, seen from a command's action. */
export function globals(cmd: Command): GlobalOptions & { json?: boolean } {
  return cmd.optsWithGlobals() as GlobalOptions & { json?: boolean };
}

/**
 * The connection the global options describe: `--redis` parsed (redis:// or rediss://, with user,
 * password and database), and the TLS files of `--tls-ca`, `--tls-cert`, `--tls-key`.
 * @throws {CliError} (invalid value) for a URL that is not a Redis URL or an unreadable file.
 */
export function connectionOf(g: GlobalOptions): RedisOptions {
  let u: URL;
  try {
    u = new URL(g.redis);
  } catch {
    throw new CliError(
      `--redis: "${maskUrl(g.redis)}" is not a URL (expected redis://[user:password@]host[:port][/db] or rediss://...)`,
      EXIT_INVALID,
    );
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') {
    throw new CliError(`--redis: "${maskUrl(g.redis)}" is not a Redis URL (expected redis:// or rediss://)`, EXIT_INVALID);
  }
  const db = urlDb(u);
  if (db === null) {
    throw new CliError(
      `--redis: "${u.pathname.replace(/^\//, '')}" is not a database number (a whole number from 0 to ${MAX_DB})`,
      EXIT_INVALID,
    );
  }
  const options: RedisOptions = {
    host: u.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1',
    port: u.port ? Number(u.port) : 6379,
    db,
  };
  if (u.username) options.username = decodeURIComponent(u.username);
  if (u.password) options.password = decodeURIComponent(u.password);
  const file = (flag: string, path: string | undefined) => {
    if (path === undefined) return undefined;
    try {
      return readFileSync(path);
    } catch (err) {
      throw new CliError(`${flag}: cannot read ${path} (${(err as Error).message})`, EXIT_INVALID);
    }
  };
  const tls = { ca: file('--tls-ca', g.tlsCa), cert: file('--tls-cert', g.tlsCert), key: file('--tls-key', g.tlsKey) };
  if (u.protocol === 'rediss:' || tls.ca || tls.cert || tls.key) {
    options.tls = Object.fromEntries(Object.entries(tls).filter(([, v]) => v !== undefined));
  }
  return options;
}

/** A client of the CLI: the `--redis` server, or the Redis Cluster that server is a node of. */
export type Client = Redis | Cluster;

/** How a client of a short-lived command connects: it fails at once rather than retry. */
const FAIL_FAST = { maxRetriesPerRequest: 1, connectTimeout: 3000 } satisfies RedisOptions;

/**
 * A client that fails fast when Redis is unreachable or refuses it, instead of retrying forever.
 * When the `--redis` server is a Redis Cluster node (`cluster_enabled:1` in its `INFO cluster`),
 * the client is a {@link Cluster} started from that node, with the same user, password and TLS,
 * so that commands reach every shard wherever its slot lives.
 * @throws {CliError} naming the URL (password masked) and the cause.
 */
export async function openClient(g: GlobalOptions): Promise<Client> {
  const options = connectionOf(g);
  const single = new Redis({ ...options, ...FAIL_FAST, lazyConnect: true, retryStrategy: () => null });
  // (a database the server does not have fails the connection, rather than use database 0)
  if (options.db) guardDb(single);
  const node = await reach(g, single);
  const state = await clusterState(node);
  if (state === undefined) return node;
  node.disconnect();
  if (options.db) throw new CliError(`--redis: database ${options.db}: a Redis Cluster has database 0 only`, EXIT_INVALID);
  if (state !== 'ok' && state !== '') {
    const e = new ConnectionError(
      maskUrl(g.redis),
      'CLUSTERDOWN',
      `its Redis Cluster is down (cluster_state:${state}; a primary is unreachable and no replica took over?)`,
    );
    throw new CliError(e.message, EXIT_UNREACHABLE);
  }
  return reach(g, clusterOf(options, { lazyConnect: true, clusterRetryStrategy: () => null, redisOptions: { ...FAIL_FAST } }));
}

/**
 * Connects `client` (made with `lazyConnect`) and checks that it answers (a Cluster: every
 * primary), or disconnects it and throws the reason as a CliError naming where (a Cluster's node
 * that failed).
 */
async function reach<C extends Client>(g: GlobalOptions, client: C): Promise<C> {
  let last: Error | undefined;
  let where = maskUrl(g.redis);
  client.on('error', (err: Error) => (last = err));
  const cluster = client instanceof Cluster ? client : undefined;
  cluster?.on('node error', (err: Error, node: string) => {
    last = err;
    where = `${node}, a node of the Redis Cluster of ${maskUrl(g.redis)}`;
  });
  // (a Cluster whose ready check fails, its state not ok, ends without settling `connect` when it
  // may not retry)
  const closed = cluster ? 'its Redis Cluster is down (its state is not ok)' : 'Connection is closed';
  const ended = new Promise<never>((_, reject) => client.once('end', () => reject(new Error(closed))));
  ended.catch(() => {});
  try {
    await Promise.race([client.connect(), ended]);
    // (every primary of a Cluster, so that no command finds a shard's node gone)
    await pingPrimaries(client);
  } catch (err) {
    client.disconnect();
    // (a Cluster's error when no node answered carries the node's own error)
    const e = connectionError(where, (last as { lastNodeError?: Error } | undefined)?.lastNodeError ?? last ?? err);
    const message = e.message.replace(/\.$/, '');
    throw new CliError(
      cluster ? message : `${message}. Start one (redis-server), or point --redis / REDIS_URL at yours.`,
      EXIT_UNREACHABLE,
    );
  }
  return client;
}

/**
 * A Cluster client started from the node `options` name (and `more` nodes after it), carrying its
 * user, password and TLS to every node (`redisOptions`). Under TLS with a host name, the name is
 * kept rather than resolved first (`dnsLookup`), so that the node's certificate is checked
 * against the name given.
 */
function clusterOf(options: RedisOptions, clusterOptions: Partial<ClusterOptions>, more: ClusterNode[] = []): Cluster {
  const { host, port, db: _db, ...nodeOptions } = options;
  const all: ClusterOptions = { ...clusterOptions, redisOptions: { ...nodeOptions, ...clusterOptions.redisOptions } };
  if (options.tls && host && isIP(host) === 0) all.dnsLookup = (address, callback) => callback(null, address);
  return new Cluster([{ host, port }, ...more], all);
}

/**
 * The `connection` a long-running command (executor, scheduler, dashboard, demo) hands Rota,
 * which opens its own connections from it and retries them through outages: the `--redis`
 * options for a single server; for a Cluster (`client` is one, see {@link openClient}) a Cluster
 * client with Rota's defaults, which Rota copies for each connection it needs. Its startup nodes
 * are the `--redis` node and every node `client` knows, so that it can connect again while that
 * node is gone. Disconnect a Cluster when the command ends.
 */
function connectionFor(g: GlobalOptions, client: Client): RedisOptions | Cluster {
  if (!(client instanceof Cluster)) return connectionOf(g);
  const known = client.nodes('all').map((n) => ({ host: n.options.host, port: n.options.port }));
  const cluster = clusterOf(connectionOf(g), {}, known);
  // (a failed command reports its error; without a listener ioredis would print each one)
  cluster.on('error', () => {});
  return cluster;
}

/**
 * The shard count the CLI opens queue `name` with (default: the `--queue` one): the count the
 * queue's layout records (field `shards` of `{rota:<queue>}:meta`), so that operators need not
 * repeat it; `--shards` (or $ROTA_SHARDS) for a queue not laid out yet; else 1.
 * @throws {ShardCountError} when `--shards` is not the count the queue has (the queue's reads
 * would miss shards: they are refused before any is made).
 * @throws {CliError} (invalid value) when the layout holds no shard count.
 */
export async function shardsOf(g: GlobalOptions, client: Client, name = g.queue): Promise<number> {
  const found = await readShardCount(client, name);
  if (found === null) return g.shards ?? 1;
  const n = Number(found);
  if (!/^\d+$/.test(found) || n < 1 || n > MAX_SHARDS) {
    throw new CliError(`queue "${name}" records shards "${found}", which is no shard count`, EXIT_INVALID);
  }
  if (g.shards !== undefined && g.shards !== n) throw new ShardCountError(name, n, g.shards);
  return n;
}

/** Where a long-running command connects, and the shard counts of its queues. */
export interface Target {
  /** The `connection` to hand Rota (see {@link connectionFor}). */
  connection: RedisOptions | Cluster;
  /** Each queue's shard count ({@link shardsOf}). */
  shards: Record<string, number>;
  /** Closes what the target holds (a Cluster's connections); call it when the command ends. */
  close(): void;
}

/**
 * Checks that Redis can be reached (see {@link openClient}), reads the shard count of each of
 * `queues` (default: the `--queue` one) and gives the connection for a command that opens
 * connections of its own (an executor, a scheduler, the dashboard).
 */
export async function openTarget(g: GlobalOptions, queues = [g.queue]): Promise<Target> {
  const client = await openClient(g);
  try {
    const shards: Record<string, number> = {};
    for (const q of queues) shards[q] = await shardsOf(g, client, q);
    const connection = connectionFor(g, client);
    const close = () => {
      if (connection instanceof Cluster) connection.disconnect();
    };
    return { connection, shards, close };
  } finally {
    client.disconnect();
  }
}

/** Runs `fn` with the queue named on the command line, closing it after; reports errors. */
export async function withQueue(
  cmd: Command,
  fn: (queue: Queue, opts: ReturnType<typeof globals>) => Promise<void>,
): Promise<void> {
  const opts = globals(cmd);
  await run(async () => {
    const client = await openClient(opts);
    try {
      const queue = new Queue(opts.queue, { connection: client, shards: await shardsOf(opts, client) });
      await fn(queue, opts);
    } finally {
      client.disconnect();
    }
  });
}

/** Runs an action, turning known errors into a message on stderr (secrets masked) and an exit status. */
export async function run(fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    if (err instanceof CliError) {
      printMessage(err.message);
      process.exitCode = err.exitCode;
    } else if (err instanceof RotaError) {
      printMessage(err.message);
      // (Redis refusing a write for memory is Redis's refusal, not a bad value; a bulk submit
      // stopped by it carries it as its cause)
      const full = err instanceof RedisFullError || err.cause instanceof RedisFullError;
      process.exitCode = full ? EXIT_UNREACHABLE : EXIT_INVALID;
    } else {
      throw err;
    }
  }
}

/** Prints rows as an aligned table with a header. */
export function printTable(columns: string[], rows: Array<Array<string | number | undefined>>): void {
  const cells = [columns, ...rows.map((r) => r.map((c) => (c === undefined ? '-' : String(c))))];
  const widths = columns.map((_, i) => Math.max(...cells.map((r) => r[i].length)));
  const lines = cells.map((r) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i])))
      .join('  ')
      .trimEnd(),
  );
  process.stdout.write(lines.join('\n') + '\n');
}

/** Prints a value as JSON on one line. */
export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)) + '\n');
}

/** Formats an epoch-ms time as ISO-8601, or '-' when absent. */
export function iso(ms: number | undefined): string | undefined {
  return ms === undefined ? undefined : new Date(ms).toISOString();
}

/**
 * The secret a file holds (`--redis-file`, `--token-file`): its text without the line break at
 * its end, so that a password or token need not be on the command line (where any user of the
 * machine can read it in the process list).
 * @throws {CliError} (invalid value) when the file cannot be read or holds nothing.
 */
export function readSecretFile(flag: string, path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new CliError(`${flag}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`, EXIT_INVALID);
  }
  const secret = text.replace(/\r?\n$/, '');
  if (secret.trim() === '') throw new CliError(`${flag}: ${path} is empty`, EXIT_INVALID);
  // (what the file holds is a secret as a whole: a URL's password, or a password alone, or a token)
  keepSecret(secret);
  keepSecret(secret.trim());
  return secret;
}

/** Parses a whole-number option. */
export function intOption(name: string, min: number, max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || n < min || n > max)
      throw new InvalidArgumentError(`${name} must be a whole number from ${min} to ${max}`);
    return n;
  };
}

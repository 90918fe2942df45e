/** What the CLI's commands share: opening the queue, printing tables and JSON, failing clearly. */

import { readFileSync } from 'node:fs';
import { type Command, InvalidArgumentError } from 'commander';
import { Redis, type RedisOptions } from 'ioredis';
import { RotaError, ShardCountError } from '../errors.js';
import { Queue } from '../queue/queue.js';
import { connectionError, maskUrl } from '../redis/connection.js';
import { queueKeys } from '../redis/keys.js';
import { MAX_SHARDS } from '../redis/shards.js';
import { EXIT_INVALID, EXIT_UNREACHABLE } from './exit-codes.js';
import type { GlobalOptions } from './main.js';

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
      `--redis: "${g.redis}" is not a URL (expected redis://[user:password@]host[:port][/db] or rediss://...)`,
      EXIT_INVALID,
    );
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') {
    throw new CliError(`--redis: "${maskUrl(g.redis)}" is not a Redis URL (expected redis:// or rediss://)`, EXIT_INVALID);
  }
  const db = u.pathname.replace(/^\//, '');
  if (db !== '' && !/^\d+$/.test(db)) throw new CliError(`--redis: "${db}" is not a database number`, EXIT_INVALID);
  const options: RedisOptions = {
    host: u.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1',
    port: u.port ? Number(u.port) : 6379,
    db: db ? Number(db) : 0,
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

/**
 * A client that fails fast when Redis is unreachable or refuses it, instead of retrying forever.
 * @throws {CliError} naming the URL (password masked) and the cause.
 */
export async function openClient(g: GlobalOptions): Promise<Redis> {
  const client = new Redis({
    ...connectionOf(g),
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
    connectTimeout: 3000,
  });
  let last: Error | undefined;
  client.on('error', (err: Error) => (last = err));
  try {
    await client.connect();
    await client.ping();
  } catch (err) {
    client.disconnect();
    const e = connectionError(g.redis, last ?? err);
    throw new CliError(`${e.message}. Start one (redis-server), or point --redis / REDIS_URL at yours.`, EXIT_UNREACHABLE);
  }
  return client;
}

/**
 * The shard count the CLI opens queue `name` with (default: the `--queue` one): the count the
 * queue's layout records (field `shards` of `{rota:<queue>}:meta`), so that operators need not
 * repeat it; `--shards` (or $ROTA_SHARDS) for a queue not laid out yet; else 1.
 * @throws {ShardCountError} when `--shards` is not the count the queue has (the queue's reads
 * would miss shards: they are refused before any is made).
 * @throws {CliError} (invalid value) when the layout holds no shard count.
 */
export async function shardsOf(g: GlobalOptions, client: Redis, name = g.queue): Promise<number> {
  const found = await client.hget(queueKeys(name).meta, 'shards');
  if (found === null) return g.shards ?? 1;
  const n = Number(found);
  if (!/^\d+$/.test(found) || n < 1 || n > MAX_SHARDS) {
    throw new CliError(`queue "${name}" records shards "${found}", which is no shard count`, EXIT_INVALID);
  }
  if (g.shards !== undefined && g.shards !== n) throw new ShardCountError(name, n, g.shards);
  return n;
}

/**
 * Checks that Redis can be reached (see {@link openClient}) and answers the shard count of queue
 * `name` ({@link shardsOf}), for a command that opens connections of its own (an executor, a
 * scheduler, the dashboard).
 */
export async function probeShards(g: GlobalOptions, name = g.queue): Promise<number> {
  const client = await openClient(g);
  try {
    return await shardsOf(g, client, name);
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

/** Runs an action, turning known errors into a message on stderr and an exit status. */
export async function run(fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    if (err instanceof CliError) {
      process.stderr.write(`rota: ${err.message}\n`);
      process.exitCode = err.exitCode;
    } else if (err instanceof RotaError) {
      process.stderr.write(`rota: ${err.message}\n`);
      process.exitCode = EXIT_INVALID;
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

/** Parses a whole-number option. */
export function intOption(name: string, min: number, max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || n < min || n > max)
      throw new InvalidArgumentError(`${name} must be a whole number from ${min} to ${max}`);
    return n;
  };
}

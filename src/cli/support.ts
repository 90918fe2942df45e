/** What the CLI's commands share: opening the queue, printing tables and JSON, failing clearly. */
import { InvalidArgumentError, type Command } from 'commander';
import { Redis } from 'ioredis';
import { RotaError } from '../errors.js';
import { Queue } from '../queue/queue.js';
import { EXIT_INVALID, EXIT_UNREACHABLE } from './exit-codes.js';
import type { GlobalOptions } from './main.js';

/** A failure the CLI reports in one line, with the exit status it calls for. */
export class CliError extends Error {
  constructor(message: string, readonly exitCode: number) {
    super(message);
  }
}

/** The global options, seen from a command's action. */
export function globals(cmd: Command): GlobalOptions & { json?: boolean } {
  return cmd.optsWithGlobals() as GlobalOptions & { json?: boolean };
}

/** A client that fails fast when Redis is unreachable, instead of retrying forever. */
export async function openClient(url: string): Promise<Redis> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null, connectTimeout: 3000 });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (err) {
    client.disconnect();
    throw new CliError(
      `cannot reach Redis at ${url} (${(err as Error).message}). Start one (redis-server), or point --redis / REDIS_URL at yours.`,
      EXIT_UNREACHABLE,
    );
  }
  return client;
}

/** Runs `fn` with the queue named on the command line, closing it after; reports errors. */
export async function withQueue(cmd: Command, fn: (queue: Queue, opts: ReturnType<typeof globals>) => Promise<void>): Promise<void> {
  const opts = globals(cmd);
  await run(async () => {
    const client = await openClient(opts.redis);
    const queue = new Queue(opts.queue, { connection: client });
    try {
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
  const lines = cells.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ').trimEnd());
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
    if (!/^\d+$/.test(value) || n < min || n > max) throw new InvalidArgumentError(`${name} must be a whole number from ${min} to ${max}`);
    return n;
  };
}

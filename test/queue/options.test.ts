/**
 * Every option of every public class and function, given bad values (NaN, Infinity, 1e300,
 * fractions, wrong types, out of bounds): a ValidationError naming the option, thrown before any
 * connection is opened (no socket of this process, none accepted by the server) and nothing written.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  dashboard,
  installShutdownHandlers,
  PeriodicTasks,
  Queue,
  reshard,
  Scheduler,
  serveDashboard,
  serveMetrics,
  ValidationError,
  Worker,
} from '../../src/index.js';
import { RedisServer } from '../helpers/redis-server.js';

let server: RedisServer;
let admin: Redis;
beforeAll(async () => {
  server = await RedisServer.start();
  admin = new Redis(server.url);
  // (once it answers, the sockets the server's start-up check opened are gone)
  await admin.ping();
});
afterAll(async () => {
  admin.disconnect();
  await server.destroy();
});

/** Connections the server has accepted so far. */
async function accepted(): Promise<number> {
  return Number((await admin.info('stats')).match(/total_connections_received:(\d+)/)![1]);
}

/** The sockets this process holds open (ioredis opens its socket on the next tick after `new`). */
async function sockets(): Promise<number> {
  await new Promise((r) => setImmediate(r));
  return process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap' || r === 'TCPServerWrap').length;
}

/** The numbers (and other values) an option bounded to [min, max] must refuse. */
function badNumbers(min: number, max: number): unknown[] {
  return [NaN, Infinity, -Infinity, 1e300, 1.5, '1', null, true, {}, min - 1, max + 1];
}

type Make = (opts: Record<string, unknown>) => unknown;

/** A constructor or function under test: how to call it with options, and its bad option values. */
interface Subject {
  name: string;
  make: Make;
  /** Options every call gets (the required ones). */
  base: () => Record<string, unknown>;
  /** Bad values per option name (the field the error must name, when not the option's). */
  bad: Record<string, unknown[]>;
}

const url = () => server.url;
const numbers = (min: number, max: number) => badNumbers(min, max);
const keep = (max: number) => [
  ...[NaN, -2, 1.5, max + 1, 'x'].map((count) => ({ count })),
  ...[NaN, -2, 1e300, 'x'].map((age) => ({ age })),
  { count: 1, colour: 'red' },
  'all',
];
const connectionBad = [
  undefined,
  42,
  null,
  'notaurl',
  'http://x',
  `redis://127.0.0.1:1/abc`,
  'redis://127.0.0.1:1/-1',
  { db: -1 },
  { db: 1.5 },
];
const queueBad = {
  maxArgsBytes: numbers(1, 256 * 1024 * 1024),
  maxEvents: numbers(0, 100_000_000),
  durability: ['fast', 1, null],
  replicaTimeoutMs: numbers(1, 3_600_000),
  replicaAcks: numbers(1, 100),
  shards: numbers(1, 1024),
};

const SUBJECTS: Subject[] = [
  {
    name: 'Queue',
    make: (o) => new Queue('opts', o as never),
    base: () => ({ connection: url() }),
    bad: { connection: connectionBad, ...queueBad },
  },
  {
    name: 'Worker',
    make: (o) => new Worker('opts', { t: () => 1 }, o as never),
    base: () => ({ connection: url() }),
    bad: {
      connection: connectionBad,
      ...queueBad,
      concurrency: numbers(1, 100_000),
      id: ['', 1, 'x'.repeat(201)],
      countingScheme: [[0, 0], [1], [1, 2, 3], [NaN, 1], [1.5, 1], [-1, 1], 'high'],
      retryDelay: numbers(0, 86_400_000),
      leaseMs: [...numbers(1000, 86_400_000), 0, 999],
      graceMs: numbers(0, 3_600_000),
      fallbackWakeMs: [...numbers(1000, 3_600_000), 0, 10],
      keepSucceeded: keep(1_000_000_000),
      keepFailed: keep(1_000_000_000),
      maxResultBytes: numbers(1, 256 * 1024 * 1024),
      logger: [{}, 'pino', { debug: () => {} }],
      autorun: ['yes', 1],
      progressIntervalMs: numbers(0, 3_600_000),
    },
  },
  {
    name: 'Scheduler',
    make: (o) => new Scheduler('opts', o as never),
    base: () => ({ connection: url() }),
    bad: {
      connection: connectionBad,
      id: ['', 7],
      now: [1, 'now'],
      lookaheadMs: numbers(0, 600_000),
      claimTtlMs: numbers(1000, 3_600_000),
      batchSize: numbers(1, 10_000),
      misfireGraceMs: numbers(0, 86_400_000),
      fallbackWakeMs: numbers(1000, 3_600_000),
      bufferPollMs: numbers(100, 60_000),
      keepRuns: keep(1_000_000),
      maxEvents: queueBad.maxEvents,
      shards: queueBad.shards,
    },
  },
  {
    name: 'PeriodicTasks',
    make: (o) => new PeriodicTasks('opts', o as never),
    base: () => ({ connection: url() }),
    bad: { connection: connectionBad, now: [0, {}], maxArgsBytes: queueBad.maxArgsBytes, shards: queueBad.shards },
  },
  {
    name: 'dashboard',
    make: (o) => dashboard(o as never),
    base: () => ({ connection: url(), queues: ['opts'] }),
    bad: {
      connection: connectionBad,
      queues: ['opts', [], [1], null],
      basePath: [1, 'no slash'],
      readOnly: ['yes', 0],
      token: ['short', 12_345_678, 'x'.repeat(1001)],
      // (an empty object is no per-queue count: every queue has 1)
      shards: [...numbers(1, 1024).filter((v) => typeof v !== 'object' || v === null), { opts: 0 }, { opts: NaN }, { other: 2 }],
    },
  },
  {
    name: 'serveDashboard',
    make: (o) => serveDashboard(o as never),
    base: () => ({ connection: url(), queues: ['opts'] }),
    bad: { port: numbers(0, 65_535), host: ['', 1], token: ['short'], readOnly: ['yes'] },
  },
  {
    name: 'serveMetrics',
    make: (o) => serveMetrics(o as never),
    base: () => ({ port: 0, queue: { counts: () => ({}) } }),
    bad: {
      port: [undefined, ...numbers(0, 65_535)],
      host: ['', 1],
      queue: [undefined, 'opts', {}],
      workers: ['w', [1]],
      groups: ['', 'some', 'top:0', 'top:100001', 'top:1.5', 1],
      sweepIntervalMs: numbers(1000, 3_600_000),
    },
  },
  {
    name: 'installShutdownHandlers',
    make: (o) => installShutdownHandlers([], o as never),
    base: () => ({}),
    bad: { timeout: numbers(0, 86_400_000), signals: ['SIGTERM', [1]], onClosed: ['x'], exit: ['no'], log: [1] },
  },
  {
    name: 'reshard',
    make: (o) => reshard(url(), 'opts', o as never),
    base: () => ({ to: 2 }),
    bad: { to: [undefined, ...numbers(1, 1024)], batch: numbers(1, 10_000), onProgress: [1, 'log'] },
  },
];

/** The ValidationError `make(opts)` throws or rejects with (fails the test when it gives none). */
async function refusal(make: Make, opts: Record<string, unknown>): Promise<ValidationError> {
  let result: unknown;
  try {
    result = await make(opts);
  } catch (err) {
    expect(
      err,
      JSON.stringify(opts, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v)),
    ).toBeInstanceOf(ValidationError);
    return err as ValidationError;
  }
  await (result as { close?: () => Promise<void> } | undefined)?.close?.();
  throw new Error(`accepted ${String(Object.keys(opts))}: ${String(Object.values(opts).map(String))}`);
}

/** How a bad value shows in a test title. */
function shown(v: unknown): string {
  if (typeof v === 'number' || typeof v === 'bigint' || v === undefined) return String(v);
  if (typeof v === 'string') return JSON.stringify(v.length > 20 ? `${v.slice(0, 10)}…(${v.length})` : v);
  if (typeof v === 'function') return 'a function';
  return JSON.stringify(v, (_k, x) => (typeof x === 'number' && !Number.isFinite(x) ? String(x) : x)) ?? String(v);
}

describe('every option of every class and function, refused with a ValidationError naming it, before anything is opened', () => {
  for (const s of SUBJECTS) {
    it(`${s.name}: ${Object.keys(s.bad).join(', ')}`, async () => {
      const before = await sockets();
      const connections = await accepted();
      const failures: string[] = [];
      for (const [option, values] of Object.entries(s.bad)) {
        for (const value of values) {
          const err = await refusal(s.make, { ...s.base(), [option]: value });
          // (a nested option names the field inside it, e.g. keepSucceeded.count)
          if (err.field !== option && !err.field.startsWith(`${option}.`) && !err.field.startsWith(`${option}[`)) {
            failures.push(`${option}=${shown(value)}: named "${err.field}" (${err.message})`);
          }
          if ((await sockets()) !== before) failures.push(`${option}=${shown(value)}: a socket was opened`);
        }
      }
      expect(failures).toEqual([]);
      // The server accepted no connection (and nothing was written).
      expect(await accepted()).toBe(connections);
      expect(await admin.dbsize()).toBe(0);
    });
  }

  it('refuses an option no class has, naming the one it likely misspells', async () => {
    const before = await sockets();
    const cases: Array<[Make, Record<string, unknown>, string, RegExp]> = [
      [(o) => new Queue('opts', o as never), { connection: url(), maxEvent: 10 }, 'maxEvent', /did you mean "maxEvents"/],
      [
        (o) => new Worker('opts', {}, o as never),
        { connection: url(), concurency: 2 },
        'concurency',
        /did you mean "concurrency"/,
      ],
      [(o) => new Scheduler('opts', o as never), { connection: url(), lookahead: 1 }, 'lookahead', /did you mean "lookaheadMs"/],
      [(o) => new PeriodicTasks('opts', o as never), { connection: url(), clock: () => 1 }, 'clock', /is not a known field/],
    ];
    for (const [make, opts, field, message] of cases) {
      const err = await refusal(make, opts);
      expect(err.field).toBe(field);
      expect(err.message).toMatch(message);
    }
    expect(await sockets()).toBe(before);
  });

  it('refuses a bad queue name before opening anything', async () => {
    const before = await sockets();
    for (const make of [
      () => new Queue('a b', { connection: url() }),
      () => new Worker('', {}, { connection: url() }),
      () => new Scheduler('x{y}', { connection: url() }),
      () => new PeriodicTasks('x'.repeat(101), { connection: url() }),
    ]) {
      expect(make).toThrow(ValidationError);
    }
    expect(await sockets()).toBe(before);
  });

  it('refuses a bad close timeout, and closes with a good one', async () => {
    const w = new Worker('opts', { t: () => 1 }, { connection: url(), autorun: false });
    for (const timeout of [NaN, -1, 1e300, 'soon'])
      await expect(w.close({ timeout } as never)).rejects.toMatchObject({ field: 'timeout' });
    await w.close({ timeout: 0 });
  });

  it('accepts the bounds themselves', async () => {
    const q = new Queue('opts', { connection: url(), maxEvents: 0, maxArgsBytes: 1, replicaAcks: 100, shards: 1 });
    const w = new Worker(
      'opts',
      { t: () => 1 },
      { connection: url(), autorun: false, leaseMs: 1000, fallbackWakeMs: 1000, progressIntervalMs: 0, retryDelay: 0 },
    );
    const s = new Scheduler('opts', { connection: url(), lookaheadMs: 0, keepRuns: { count: -1, age: -1 } });
    await Promise.all([q.close(), w.close(), s.close()]);
  });
});

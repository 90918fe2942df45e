/**
 * `rota bench` run as a user would: every workload on a server that holds other data (which it
 * leaves as it was, with no key of its own left), on a private server of its own, stopped by
 * SIGINT mid-run (no key left either), and its refusals: a replica, an evicting server, a bad
 * URL, bad flags. Small sizes: the figures are not checked, only that they are there.
 */
import { spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_INVALID, EXIT_UNREACHABLE, EXIT_USAGE } from '../../src/cli/exit-codes.js';
import { cliEntry, rota } from '../helpers/cli.js';
import { freePort, RedisServer } from '../helpers/redis-server.js';
import { eventually } from '../helpers/setup.js';

/** Small sizes that still run every phase of every workload. */
const SMALL = ['--jobs', '200', '--groups', '10', '--concurrency', '20', '--executors', '1', '--duration', '1'];

/** The other data of the shared server: names near the bench's own, and of Rota's and the peers' layouts. */
const OTHER = ['app:user:1', '{rota:orders}:meta', '{rota:rota-bench}:x', 'bull:emails:wait', 'groupmq:jobs:g', 'rota-bench-1'];

let shared: RedisServer;
let admin: Redis;

/** DUMP of every key of the server, by name. */
async function dumpAll(client: Redis): Promise<Record<string, string | null>> {
  const out: Record<string, string | null> = {};
  for (const k of await client.keys('*')) out[k] = (await client.dumpBuffer(k))?.toString('base64') ?? null;
  return out;
}

beforeAll(async () => {
  shared = await RedisServer.start();
  admin = new Redis(shared.url);
  await admin.set(OTHER[0], 'alice');
  await admin.hset(OTHER[1], 'schema', '9', 'shards', '1');
  await admin.zadd(OTHER[2], 1, 'a');
  await admin.rpush(OTHER[3], 'j1', 'j2');
  await admin.sadd(OTHER[4], 'x');
  await admin.set(OTHER[5], 'mine', 'EX', 3600);
});

afterAll(async () => {
  admin.disconnect();
  await shared.destroy();
});

describe('rota bench', () => {
  it('runs every workload on a shared server, reports every field, and leaves only the data that was there', async () => {
    const before = await dumpAll(admin);
    const r = await rota(['--redis', shared.url, 'bench', ...SMALL, '--workload', 'all', '--json']);
    expect(r.stderr).toMatch(/\[5\/5\] periodic on rota/);
    expect(r.code).toBe(0);
    const rep = JSON.parse(r.stdout);
    expect(rep.version).toBe(1);
    expect(rep.server).toMatchObject({ private: false, cluster: false, role: 'master', maxmemoryPolicy: 'noeviction' });
    expect(rep.server.pingMs).toBeGreaterThan(0);
    expect(rep.namespace).toMatch(/^rota-bench-[0-9a-f]{8}$/);
    expect(rep.runs.map((x: { workload: string }) => x.workload)).toEqual(['ingest', 'drain', 'latency', 'fairness', 'periodic']);
    for (const run of rep.runs) {
      expect(run.system).toBe('rota');
      expect(run.jobsPerSec).toBeGreaterThan(0);
      expect(run.duplicates).toBe(0);
      expect(run.redisCpuUsPerJob).toBeGreaterThanOrEqual(0);
      expect(run.redisCommandsPerJob).toBeGreaterThan(0);
      expect(run.clientCpuUsPerJob).toBeGreaterThan(0);
      expect(run.primaries).toHaveLength(1);
    }
    const by = (w: string) => rep.runs.find((x: { workload: string }) => x.workload === w);
    for (const w of ['latency', 'fairness', 'periodic']) expect(by(w).p99Ms).toBeGreaterThan(0);
    expect(by('latency').maxJobsPerSec).toBeGreaterThan(0);
    // Figures rounded to what they mean: jobs/s whole, ms to 0.01, µs to 0.1, ratios to 0.01.
    const places = (v: number | null) => (v === null ? 0 : (String(v).split('.')[1] ?? '').length);
    for (const run of rep.runs) {
      expect(Number.isInteger(run.jobsPerSec), `${run.workload} ${run.jobsPerSec}`).toBe(true);
      for (const v of [run.p50Ms, run.p99Ms, run.seconds, run.redisCommandsPerJob, run.balance])
        expect(places(v), String(v)).toBeLessThanOrEqual(2);
      for (const v of [run.redisCpuUsPerJob, run.clientCpuUsPerJob, run.redisBusyPct])
        expect(places(v), String(v)).toBeLessThanOrEqual(1);
    }
    expect(places(rep.server.pingMs)).toBeLessThanOrEqual(2);
    expect(Number.isInteger(rep.sizing.jobsPerSec)).toBe(true);
    // Fairness: the baseline without the flood, and the verdict on both.
    const fair = by('fairness');
    expect(fair.baseline.p99Ms).toBeGreaterThan(0);
    expect(fair.baseline.jobsPerSec).toBeGreaterThan(0);
    expect(Number.isInteger(fair.baseline.jobsPerSec)).toBe(true);
    expect(fair.verdict.waitRatio).toBeCloseTo(fair.p99Ms / fair.baseline.p99Ms, 1);
    expect(places(fair.verdict.rateShare)).toBeLessThanOrEqual(2);
    expect(fair.verdict.text).toMatch(
      /^fairness on rota: (FAIR|NOT FAIR): light tenants wait [\d.]+ ms p99 beside the flood, [\d.]+ ms alone/,
    );
    expect(fair.verdict.fair).toBe(fair.verdict.waitRatio <= 2 && fair.verdict.rateShare >= 0.95);
    for (const w of ['ingest', 'drain', 'latency', 'periodic']) expect(by(w).baseline).toBeUndefined();
    expect(rep.sizing.text).toMatch(
      /^this server sustains about [\d,]+ jobs\/s at \d+ % of one core; with 0 ms handlers, 1 executor of concurrency 20 keep up with [\d,]+ jobs\/s$/,
    );
    expect(rep.comparison).toEqual([]);
    expect(rep.keysLeft).toBe(0);
    // nothing of the bench is left, and every other key is as it was (value and TTL kept)
    expect(await dumpAll(admin)).toEqual(before);
    expect(await admin.ttl(OTHER[5])).toBeGreaterThan(3000);
  }, 120_000);

  it('compares with BullMQ and GroupMQ (interleaved, ratios), removing their keys too', async () => {
    const before = await dumpAll(admin);
    const r = await rota([
      '--redis',
      shared.url,
      'bench',
      ...SMALL,
      '--workload',
      'ingest,drain',
      '--compare',
      'bullmq,groupmq',
      '--json',
    ]);
    expect(r.code).toBe(0);
    // each workload on every system before the next workload
    expect(
      r.stderr
        .trim()
        .split('\n')
        .map((l) => l.replace(/^rota bench: \[\d+\/6\] /, '')),
    ).toEqual([
      'ingest on rota',
      'ingest on bullmq',
      'ingest on groupmq',
      'drain on rota',
      'drain on bullmq',
      'drain on groupmq',
    ]);
    const rep = JSON.parse(r.stdout);
    expect(rep.settings.systems).toEqual(['rota', 'bullmq', 'groupmq']);
    expect(rep.comparison.map((c: { workload: string; peer: string }) => `${c.workload} ${c.peer}`)).toEqual([
      'ingest bullmq',
      'ingest groupmq',
      'drain bullmq',
      'drain groupmq',
    ]);
    for (const c of rep.comparison) expect(c.jobsPerSec).toBeGreaterThan(0);
    for (const run of rep.runs) expect(run.duplicates).toBe(0);
    expect(await dumpAll(admin)).toEqual(before);
  }, 120_000);

  it('starts a private server without --redis, and prints a text report', async () => {
    const r = await rota(['bench', ...SMALL, '--workload', 'ingest'], { REDIS_URL: '' });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/\(private server\)/);
    expect(r.stdout).toMatch(/^ingest +rota +[\d,]+ /m);
    // (no drain: no sizing line)
    expect(r.stdout).not.toMatch(/sizing/);
    // a plain line per phase when stderr is not a terminal
    expect(r.stderr).toBe('rota bench: [1/1] ingest on rota\n');
  }, 60_000);

  it.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)(
    'removes its keys when stopped by %s mid-run, and leaves the other data',
    async (signal, status) => {
      const before = await dumpAll(admin);
      const child = spawn(
        process.execPath,
        [...cliEntry(), '--redis', shared.url, 'bench', '--workload', 'drain', '--jobs', '1000000', '--groups', '100'],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stderr = '';
      child.stderr.on('data', (d) => (stderr += d));
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      // mid-run: the drain's queue is filling
      await eventually(async () => (await admin.keys('{rota:rota-bench-*')).length > 0, 30_000);
      child.kill(signal);
      expect(await exited).toBe(status);
      expect(stderr).toMatch(new RegExp(`${signal}: removing the keys of rota-bench-`));
      expect(await dumpAll(admin)).toEqual(before);
    },
    60_000,
  );

  it('refuses a replica', async () => {
    const replica = await RedisServer.start({ args: ['--replicaof', '127.0.0.1', String(shared.port)] });
    try {
      const r = await rota(['--redis', replica.url, 'bench', ...SMALL]);
      expect(r.code).toBe(EXIT_INVALID);
      expect(r.stderr).toMatch(/^rota: 127\.0\.0\.1:\d+ is a replica \(role slave\): point --redis at its primary\n$/);
    } finally {
      await replica.destroy();
    }
  }, 30_000);

  it('refuses a server that evicts keys (allkeys-lru) unless --force, and writes nothing', async () => {
    const lru = await RedisServer.start({ args: ['--maxmemory-policy', 'allkeys-lru'] });
    const c = new Redis(lru.url);
    try {
      const r = await rota(['--redis', lru.url, 'bench', ...SMALL]);
      expect(r.code).toBe(EXIT_INVALID);
      expect(r.stderr).toMatch(/evicts keys \(maxmemory-policy allkeys-lru\).*--force to run anyway\n$/);
      expect(await c.dbsize()).toBe(0);
      const forced = await rota(['--redis', lru.url, 'bench', ...SMALL, '--workload', 'ingest', '--force', '--json']);
      expect(forced.code).toBe(0);
      expect(JSON.parse(forced.stdout).warnings).toContain('maxmemory-policy is allkeys-lru, not noeviction');
      expect(await c.dbsize()).toBe(0);
    } finally {
      c.disconnect();
      await lru.destroy();
    }
  }, 60_000);

  it('refuses a run whose data could reach maxmemory unless --force, and writes nothing', async () => {
    const small = await RedisServer.start({ args: ['--maxmemory', '4mb'] });
    const c = new Redis(small.url);
    try {
      await c.set('app:keep', 'v');
      const r = await rota(['--redis', small.url, 'bench', ...SMALL, '--jobs', '5000', '--workload', 'ingest']);
      expect(r.code, r.stderr).toBe(EXIT_INVALID);
      expect(r.stderr).toMatch(
        /plans up to [\d.]+ MiB of data, and 127\.0\.0\.1:\d+ has [\d.]+ MiB left below its maxmemory.*--force to run anyway\n$/,
      );
      expect(await c.keys('*')).toEqual(['app:keep']);
      // (a run that fits is not refused)
      const fits = await rota(['--redis', small.url, 'bench', ...SMALL, '--jobs', '100', '--workload', 'ingest', '--json']);
      expect(fits.code, fits.stderr).toBe(0);
      expect(await c.keys('*')).toEqual(['app:keep']);
    } finally {
      c.disconnect();
      await small.destroy();
    }
  }, 60_000);

  it('refuses a bad or unreachable URL, and bad flags, with one line', async () => {
    const bad = await rota(['--redis', 'not a url', 'bench']);
    expect(bad.code).toBe(EXIT_INVALID);
    expect(bad.stderr).toMatch(/^rota: --redis: "not a url" is not a URL[^\n]*\n$/);
    const gone = await rota(['--redis', `redis://127.0.0.1:${await freePort()}`, 'bench']);
    expect(gone.code).toBe(EXIT_UNREACHABLE);
    expect(gone.stderr.trim().split('\n')).toHaveLength(1);
    const flag = await rota(['bench', '--nope']);
    expect(flag.code).toBe(EXIT_USAGE);
    expect(flag.stderr).toMatch(/^rota: unknown option '--nope'\n/);
    const workload = await rota(['bench', '--workload', 'sprint']);
    expect(workload.code).toBe(EXIT_INVALID);
    expect(workload.stderr).toMatch(/--workload must be all or one or more of ingest, drain, latency, fairness, periodic/);
    const peer = await rota(['bench', '--compare', 'sidekiq']);
    expect(peer.code).toBe(EXIT_INVALID);
    expect(peer.stderr).toMatch(/--compare takes bullmq, groupmq/);
  }, 30_000);
});

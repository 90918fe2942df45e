/**
 * Dashboard page-timing benchmark: response times of every page and API route at 100,000 groups
 * and 1,000,000 jobs.
 *
 *   npx tsx benchmarks/dashboard.ts [--quick | --tiny] [--requests 40]
 *
 * Starts a private redis-server (or uses REDIS_URL), then fills one queue: 50,000 jobs drained
 * by an executor at concurrency 100 (three in four succeed, the rest fail), so the finished sets
 * hold jobs; then 950,000 waiting jobs over 100,000 groups (a thousand paused, a thousand with a
 * limit and a rate), 10,000 delayed jobs, and 20 periodic tasks. `--quick`: 10,000 groups and
 * 100,000 jobs (1,000 delayed); `--tiny` (a smoke run of the script, no figure to keep): 1,000
 * groups and 10,000 jobs. During the requests an executor holds 100 runs (its handlers wait), so
 * the executors page lists its jobs and the groups' states see a live executor. A dashboard handler
 * is served in this process with one page kept open (an event stream, so the shared reader ticks
 * and sweeps the groups as it would), and each route is requested `--requests` times one after
 * the other (pages at varying offsets, sorts and ids), after one warm-up request each. Prints
 * p50, p95 and max per route, the first groups request (it waits for the group index to load),
 * and the Redis commands slower than 10 ms during the requests (SLOWLOG: a call that read a whole
 * set would show there). Writes benchmarks/results/runs/<date>-dashboard[-quick].json (git-ignored).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, get } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { dashboard } from '../src/dashboard/index.js';
import { PeriodicTasks, Queue, Worker } from '../src/index.js';
import { RedisServer } from '../test/helpers/redis-server.js';

const tiny = process.argv.includes('--tiny');
const quick = !tiny && process.argv.includes('--quick');
const argAt = process.argv.indexOf('--requests');
const REQUESTS = argAt > 0 ? Number(process.argv[argAt + 1]) : 40;
const GROUPS = tiny ? 1000 : quick ? 10_000 : 100_000;
const JOBS = tiny ? 10_000 : quick ? 100_000 : 1_000_000;
const DRAINED = tiny ? 2000 : quick ? 10_000 : 50_000;
const DELAYED = tiny ? 100 : quick ? 1000 : 10_000;
/** Runs the executor holds during the requests. */
const HELD_RUNS = 100;
const RESULTS = new URL('./results/runs/', import.meta.url).pathname;
const queueName = 'bench';

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
}

async function fill(url: string): Promise<{ failedId: string; succeededId: string; waitingIds: string[] }> {
  const queue = new Queue(queueName, { connection: url });
  const t0 = Date.now();
  // Jobs that run first, so that the finished sets hold some.
  for (let i = 0; i < DRAINED; i += 1000) {
    await queue.submitBulk(
      Array.from({ length: 1000 }, (_, k) => ({
        task: (i + k) % 4 === 0 ? 'bad' : 'ok',
        group: `d${(i + k) % 100}`,
        args: { n: i + k },
        maxRetries: 0,
      })),
    );
  }
  const worker = new Worker(
    queueName,
    {
      ok: async () => ({ done: true }),
      bad: async () => {
        throw new Error('failed on purpose');
      },
    },
    { connection: url, concurrency: 100, keepSucceeded: { count: -1, age: -1 }, keepFailed: { count: -1, age: -1 } },
  );
  for (;;) {
    const c = await queue.counts();
    if (c.success + c.failed >= DRAINED) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  await worker.close();
  process.stdout.write(`drained ${DRAINED} jobs in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
  const t1 = Date.now();
  const rest = JOBS - DRAINED;
  const waitingIds: string[] = [];
  for (let i = 0; i < rest; i += 1000) {
    const jobs = await queue.submitBulk(
      Array.from({ length: Math.min(1000, rest - i) }, (_, k) => ({
        task: (i + k) % 3 === 0 ? 'report' : 'mail',
        group: `g${(i + k) % GROUPS}`,
        args: { user: i + k, to: `user${i + k}@example.com` },
        priority: (i + k) % 5 === 0 ? ('high' as const) : ('low' as const),
      })),
    );
    if (i % 50_000 === 0) waitingIds.push(jobs[0].id);
  }
  process.stdout.write(`submitted ${rest} waiting jobs over ${GROUPS} groups in ${((Date.now() - t1) / 1000).toFixed(1)} s\n`);
  // Delayed jobs, due over the next hours (the delayed set, which the jobs page lists in due order).
  for (let i = 0; i < DELAYED; i += 1000) {
    await queue.submitBulk(
      Array.from({ length: 1000 }, (_, k) => ({
        task: 'mail',
        group: `g${(i + k) % GROUPS}`,
        args: { user: i + k },
        delay: 3_600_000 + (i + k) * 100,
      })),
    );
  }
  for (let g = 0; g < 1000; g++) {
    if (g % 2) await queue.pauseGroup(`g${g * 7}`);
    else await queue.setGroupLimit(`g${g * 7}`, { concurrency: 5, weight: 2, rate: { max: 10, perMs: 1000 } });
  }
  const tasks = new PeriodicTasks(queueName, { connection: url });
  for (let i = 0; i < 20; i++) {
    await tasks.upsert({
      id: `task-${i}`,
      task: 'report',
      timer: i % 2 ? `*-*-* 0${i % 10}:00` : `every ${i + 1}m`,
      timezone: 'Europe/Paris',
    });
  }
  await tasks.close();
  const [failed] = await queue.jobs({ state: 'failed', limit: 1 });
  const [succeeded] = await queue.jobs({ state: 'success', limit: 1 });
  await queue.close();
  return { failedId: failed.id, succeededId: succeeded.id, waitingIds };
}

async function main(): Promise<void> {
  const own = process.env.REDIS_URL ? undefined : await RedisServer.start();
  const url = process.env.REDIS_URL ?? own!.url;
  const admin = new Redis(url);
  await admin.flushall();
  const ids = await fill(url);
  process.stdout.write(
    `memory: ${(Number(/used_memory:(\d+)/.exec(await admin.info('memory'))![1]) / 2 ** 20).toFixed(0)} MiB\n`,
  );

  // An executor that holds HELD_RUNS runs until the end (its handlers wait).
  let release: () => void = () => {};
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const holder = new Worker(
    queueName,
    { mail: async () => gate, report: async () => gate },
    { connection: url, concurrency: HELD_RUNS },
  );
  const counter = new Queue(queueName, { connection: url });
  for (;;) {
    const c = await counter.counts();
    if (c.running >= HELD_RUNS) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await counter.close();

  const handler = dashboard({ connection: url, queues: [queueName] });
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // One page kept open: the shared reader ticks (and sweeps the groups) during the requests.
  const stream = get(`${base}/live?view=%2F`, (res) => res.resume());

  const t = Date.now();
  await (await fetch(`${base}/groups`)).text();
  const firstGroups = Date.now() - t;

  const n = (i: number) => i % GROUPS;
  const routes: Record<string, (i: number) => string> = {
    'GET /': () => '/',
    'GET /groups (by waiting)': (i) => `/groups?offset=${(i * 50) % GROUPS}`,
    'GET /groups (by name, deep page)': (i) => `/groups?sort=group&dir=asc&offset=${(GROUPS / 2 + i * 500) % GROUPS}`,
    'GET /groups (by stuck, ascending)': (i) => `/groups?sort=stuck&dir=asc&offset=${i * 50}`,
    'GET /groups (by oldest wait)': (i) => `/groups?sort=oldest&offset=${i * 50}`,
    'GET /groups?group= (find)': (i) => `/groups?group=g${n(i * 997)}`,
    'GET /jobs (waiting)': (i) => `/jobs?state=waiting&offset=${i * 50}`,
    'GET /jobs (waiting, one group)': (i) => `/jobs?state=waiting&group=g${n(i * 13)}`,
    'GET /jobs (success, deep page)': (i) => `/jobs?state=success&offset=${i * 500}`,
    'GET /jobs (delayed)': (i) => `/jobs?state=delayed&start=${i * 10}`,
    'GET /jobs (failed, task filter)': (i) => `/jobs?state=failed&task=bad&offset=${i * 50}`,
    'GET /jobs (success, filter matching none)': () => `/jobs?state=success&task=nothing`,
    'GET /jobs/<id>': (i) => `/jobs/${[ids.failedId, ids.succeededId, ...ids.waitingIds][i % (2 + ids.waitingIds.length)]}`,
    'GET /jobs/<waiting id> (why waiting)': (i) => `/jobs/${ids.waitingIds[i % ids.waitingIds.length]}`,
    'GET /groups (paused and limited: states)': (i) => `/groups?group=g${((i * 37) % 1000) * 7}`,
    'GET /groups (by paused: states)': (i) => `/groups?sort=paused&offset=${i * 50}`,
    'GET /executors': () => '/executors',
    'GET /redis': () => '/redis',
    'GET /periodic': () => '/periodic',
    'GET /periodic/<id>': (i) => `/periodic/task-${i % 20}`,
    'GET /api/tick': () => '/api/tick',
    'GET /groups?fragment=1 (live view)': (i) => `/groups?fragment=1&offset=${i * 50}`,
  };
  await admin.config('SET', 'slowlog-log-slower-than', '10000');
  await admin.slowlog('RESET');
  const rows: Array<{ route: string; p50: number; p95: number; max: number; bytes: number }> = [];
  for (const [route, path] of Object.entries(routes)) {
    await (await fetch(base + path(0))).text();
    const times: number[] = [];
    let size = 0;
    for (let i = 1; i <= REQUESTS; i++) {
      const t0 = performance.now();
      const r = await fetch(base + path(i));
      const body = await r.text();
      times.push(performance.now() - t0);
      if (r.status !== 200) throw new Error(`${route}: ${r.status} ${body.slice(0, 200)}`);
      size = body.length;
    }
    rows.push({ route, p50: pct(times, 0.5), p95: pct(times, 0.95), max: Math.max(...times), bytes: size });
    process.stdout.write(
      `${route.padEnd(44)} p50 ${pct(times, 0.5).toFixed(1).padStart(6)} ms  p95 ${pct(times, 0.95).toFixed(1).padStart(6)} ms  max ${Math.max(
        ...times,
      )
        .toFixed(1)
        .padStart(6)} ms  ${size} B\n`,
    );
  }
  const slow = (await admin.slowlog('GET', 100)) as Array<[number, number, number, string[]]>;
  process.stdout.write(`\nfirst /groups (waits for the group index to load): ${firstGroups} ms\n`);
  process.stdout.write(`Redis commands slower than 10 ms during the requests: ${slow.length}\n`);
  // By command (a script call by its function), with the slowest of each.
  const byCommand = new Map<string, { n: number; max: number }>();
  for (const s of slow) {
    const name = s[3][0] === 'FCALL' ? String(s[3][1]).replace(/^rota_[0-9a-f]+_/, 'FCALL ') : s[3].slice(0, 2).join(' ');
    const e = byCommand.get(name) ?? { n: 0, max: 0 };
    e.n++;
    e.max = Math.max(e.max, s[2] / 1000);
    byCommand.set(name, e);
  }
  for (const [name, e] of byCommand)
    process.stdout.write(`  ${String(e.n).padStart(4)} × ${name}, slowest ${e.max.toFixed(1)} ms\n`);

  mkdirSync(RESULTS, { recursive: true });
  const file = `${RESULTS}${new Date().toISOString().replace(/[:.]/g, '-')}-dashboard${quick ? '-quick' : tiny ? '-tiny' : ''}.json`;
  writeFileSync(
    file,
    JSON.stringify({ groups: GROUPS, jobs: JOBS, requests: REQUESTS, firstGroups, rows, slow: slow.length }, null, 2),
  );
  process.stdout.write(`written ${file}\n`);

  stream.destroy();
  release();
  await holder.close();
  await handler.close();
  server.closeAllConnections();
  server.close();
  admin.disconnect();
  await own?.destroy();
}

await main();

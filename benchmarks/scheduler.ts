/**
 * Periodic scheduler benchmark: Rota's scheduler replicas against BullMQ job schedulers.
 *
 *   npx tsx benchmarks/scheduler.ts [--quick | --tiny] [--only burst|spread|idle|overload|bigburst|bullmq]
 *     [--capacity 20000] [--big-burst 100000] [--big-burst-margin 10]
 * (`--tiny`: every case at a few hundred tasks, to check that they run; its figures mean nothing.)
 *
 * Starts a private redis-server (or uses REDIS_URL), then:
 *  1. burst: 10,000 Rota tasks all due at the same second, every 5 s (`*:*:0/5`), 3 replicas in
 *     their own processes, for 4 occurrences;
 *  2. spread: 100,000 tasks spread over a minute (`*:*:SS`, SS = i mod 60), 3 replicas, one
 *     occurrence each;
 *  3. idle: Redis commands per minute sent by 3 idle replicas holding 10,000 tasks due tomorrow;
 *  4. overload: one replica (its own process) holding 0.5×, 1.5× and 3× its capacity of tasks due
 *     at the same second every 5 s (`--capacity N`: the tasks a replica stages and releases within
 *     one 5-second period on this machine, default 20,000), for 4 occurrences: Redis commands
 *     (those scripts run included, INFO commandstats) and script µs per occurrence submitted,
 *     missed occurrences, and the submission lateness;
 *  5. big burst: 100,000 tasks (`--big-burst N`) due once, in the same second (a daily calendar
 *     timer at a second chosen past the definitions, so that the replicas are idle until then),
 *     3 replicas: the p99 of submission lateness, waiting until every occurrence is submitted (at
 *     most 2 minutes; one still unsubmitted then counts as a miss, and as infinitely late in the
 *     percentiles);
 *  6. peer: 10,000 BullMQ job schedulers due at the same second every 5 s (`upsertJobScheduler`
 *     with a six-field cron `pattern` firing at seconds 0, 5, 10...) and a no-op worker at
 *     concurrency 1,000, for 4 occurrences.
 * Lateness: Rota = job submitted (server clock) minus occurrence; BullMQ = job processedOn minus
 * its planned time (the millis its job id ends with), since BullMQ records no time for a delayed
 * job becoming runnable (so its figure includes the pickup by the worker). Duplicates: job
 * additions per occurrence beyond one (Rota: from the events stream; BullMQ: runs per scheduler and
 * planned time). Misses: occurrences of the window with no job (Rota), or not run by the end of
 * the window + 3 s (BullMQ, whose backlog is still draining then).
 * Prints a table and writes benchmarks/results/runs/<date>-scheduler[-quick].json (git-ignored); a
 * full run (not --quick or --only) also writes benchmarks/results/scheduler.json, which the README quotes.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Queue as BullQueue, Worker as BullWorker } from 'bullmq';
import { Redis } from 'ioredis';
import { PeriodicTasks } from '../src/index.js';
import { parseEntry } from '../src/queue/events.js';
import { queueKeys } from '../src/redis/keys.js';
import { NodeProcess } from '../test/helpers/processes.js';
import { RedisServer } from '../test/helpers/redis-server.js';

const REPLICA = new URL('../test/fixtures/scheduler-replica.ts', import.meta.url).pathname;
const RESULTS = new URL('./results/', import.meta.url).pathname;
const tiny = process.argv.includes('--tiny');
const quick = tiny || process.argv.includes('--quick');
const numArg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
/** `--only burst|spread|idle|overload|bigburst|bullmq` runs one case (for tuning); the results file is then not written. */
const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : null;
const runs = (name: string) => only === null || only === name;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

interface Lateness {
  n: number;
  min: number;
  p50: number;
  p99: number;
  max: number;
}

interface Result {
  case: string;
  system: string;
  tasks: number;
  occurrences: number;
  jobs: number;
  lateness: Lateness;
  duplicates: number;
  misses: number;
}

function stats(xs: number[]): Lateness {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => (s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : NaN);
  return { n: s.length, min: s.length ? s[0] : NaN, p50: q(0.5), p99: q(0.99), max: s.length ? s[s.length - 1] : NaN };
}

async function replicas(url: string, queue: string, n: number): Promise<NodeProcess[]> {
  const out: NodeProcess[] = [];
  for (let i = 0; i < n; i++) {
    const p = new NodeProcess(REPLICA, [url, queue, `bench-${i}`]);
    await p.waitFor((m) => m.ready, 30_000);
    out.push(p);
  }
  return out;
}

async function stop(procs: NodeProcess[]): Promise<void> {
  for (const p of procs) p.send({ close: true });
  await Promise.all(procs.map((p) => p.exited));
}

async function define(tasks: PeriodicTasks, n: number, timer: (i: number) => string): Promise<void> {
  for (let i = 0; i < n; i += 1000) {
    await Promise.all(
      Array.from({ length: Math.min(1000, n - i) }, (_, k) =>
        tasks.upsert({ id: `t${i + k}`, task: 'noop', timer: timer(i + k), overlap: 'allow' }),
      ),
    );
  }
}

/** Reads back every job of the window from the tasks' histories and the events stream. */
async function collect(
  redis: Redis,
  queue: string,
  n: number,
  from: number,
  to: number,
  every: (i: number) => number[],
  /** Count an occurrence with no job as infinitely late in the percentiles (else they leave it out). */
  missesLate = false,
): Promise<Omit<Result, 'case' | 'system' | 'tasks'>> {
  const qk = queueKeys(queue);
  const adds = new Map<string, number>();
  let last = '-';
  for (;;) {
    const entries = (await redis.xrange(qk.events, last, '+', 'COUNT', 1000)) as Array<[string, string[]]>;
    const fresh = last === '-' ? entries : entries.slice(1);
    if (fresh.length === 0) break;
    for (const [sid, fields] of fresh) {
      for (const e of parseEntry(sid, fields)) if (e.state === 'waiting') adds.set(e.id, (adds.get(e.id) ?? 0) + 1);
    }
    last = entries[entries.length - 1][0];
  }
  const late: number[] = [];
  let misses = 0;
  let occurrences = 0;
  let duplicates = 0;
  for (let i = 0; i < n; i += 2000) {
    const pipe = redis.pipeline();
    const wanted: string[] = [];
    for (let k = i; k < Math.min(n, i + 2000); k++) {
      for (const o of every(k)) {
        if (o < from || o > to) continue;
        const id = `t${k}@${o}`;
        wanted.push(id);
        pipe.hmget(qk.job(id), 'submitted', 'occurrence');
      }
    }
    const rows = wanted.length ? (await pipe.exec())! : [];
    rows.forEach(([, v], j) => {
      occurrences += 1;
      const [submitted, occurrence] = v as [string | null, string | null];
      if (!submitted) {
        misses += 1;
        return;
      }
      late.push(Number(submitted) - Number(occurrence));
      duplicates += Math.max(0, (adds.get(wanted[j]) ?? 0) - 1);
    });
  }
  const jobs = late.length;
  if (missesLate) for (let k = 0; k < misses; k++) late.push(Number.POSITIVE_INFINITY);
  return { occurrences, jobs, lateness: stats(late), duplicates, misses };
}

function grid(periodMs: number, offsetMs: number, from: number, to: number): number[] {
  const out: number[] = [];
  for (let o = Math.ceil((from - offsetMs) / periodMs) * periodMs + offsetMs; o <= to; o += periodMs) out.push(o);
  return out;
}

async function rotaBurst(url: string, redis: Redis, n: number, rounds: number): Promise<Result> {
  const queue = `bench-burst-${Date.now()}`;
  const tasks = new PeriodicTasks(queue, { connection: url });
  const procs = await replicas(url, queue, 3);
  await define(tasks, n, () => '*:*:0/5');
  const from = Math.ceil((Date.now() + 1500) / 5000) * 5000; // first occurrence wholly after the definitions
  const to = from + (rounds - 1) * 5000;
  await sleep(to - Date.now() + 3000);
  await stop(procs);
  const r = await collect(redis, queue, n, from, to, () => grid(5000, 0, from, to));
  await tasks.close();
  return { case: `burst: ${n} tasks due at the same second, every 5 s`, system: 'rota (3 replicas)', tasks: n, ...r };
}

/** `--big-burst-margin S`: seconds added to the estimated definition time before the burst's second. */
const burstMarginS = numArg('big-burst-margin', 10);

/**
 * `n` tasks due once, at the same second, on 3 replicas (their own processes): a daily calendar
 * timer at a second past the definitions (estimated from the first 1,000 of them), so that no
 * replica has work before it. Waits until every occurrence is submitted (at most 2 minutes).
 */
async function rotaBigBurst(url: string, redis: Redis, n: number): Promise<Result> {
  const queue = `bench-bigburst-${Date.now()}`;
  const qk = queueKeys(queue);
  const tasks = new PeriodicTasks(queue, { connection: url });
  const procs = await replicas(url, queue, 3);
  const daily = (at: number) => `*-*-* ${new Date(at).toISOString().slice(11, 19)} UTC`;
  const t0 = Date.now();
  // the first 1,000 (defined again below) time the definitions
  await define(tasks, Math.min(n, 1000), () => daily(t0 + 3_600_000));
  const perTask = (Date.now() - t0) / Math.min(n, 1000);
  const at = Math.ceil((Date.now() + 1.5 * perTask * n + burstMarginS * 1000) / 1000) * 1000;
  await define(tasks, n, () => daily(at));
  if (Date.now() > at - 3000)
    throw new Error(`big burst: the definitions ended too late for ${new Date(at).toISOString()}; raise --big-burst-margin`);
  console.log(`  (big burst: ${n} tasks defined in ${Date.now() - t0} ms, due at ${new Date(at).toISOString()})`);
  const deadline = at + 120_000;
  while (Date.now() < deadline && Number((await redis.hget(qk.counts, 'waiting')) ?? 0) < n) await sleep(200);
  await stop(procs);
  const r = await collect(redis, queue, n, at, at, () => [at], true);
  await tasks.close();
  return { case: `big burst: ${n} tasks due once, in the same second`, system: 'rota (3 replicas)', tasks: n, ...r };
}

/** INFO commandstats: every command's calls (those scripts run included), and the µs spent in script calls. */
async function commandStats(redis: Redis): Promise<{ commands: number; scriptUs: number }> {
  let commands = 0;
  let scriptUs = 0;
  for (const m of ((await redis.info('commandstats')) as string).matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    if (/^(fcall|fcall_ro|evalsha|eval)$/.test(m[1])) scriptUs += Number(m[3]);
    else if (m[1] !== 'info') commands += Number(m[2]);
  }
  return { commands, scriptUs };
}

interface OverloadResult extends Result {
  /** Redis commands (inside scripts included) per occurrence submitted. */
  commandsPerOccurrence: number;
  /** Redis µs in scripts per occurrence submitted. */
  scriptUsPerOccurrence: number;
}

/**
 * One replica holding `n` tasks all due every 5 s, for `rounds` occurrences: what each submitted
 * occurrence costs Redis (commands and script µs), the misses and the submission lateness.
 */
async function rotaOverload(url: string, redis: Redis, n: number, rounds: number, label: string): Promise<OverloadResult> {
  const queue = `bench-over-${Date.now()}`;
  const tasks = new PeriodicTasks(queue, { connection: url });
  await define(tasks, n, () => '*:*:0/5');
  const before = await commandStats(redis);
  const procs = await replicas(url, queue, 1);
  const from = Math.ceil((Date.now() + 1500) / 5000) * 5000;
  const to = from + (rounds - 1) * 5000;
  await sleep(to - Date.now() + 3000);
  await stop(procs);
  const after = await commandStats(redis);
  // every occurrence the replica may have submitted while it ran (staged ahead of `from` too)
  const all = await collect(redis, queue, n, from - 5000, to + 5000, () => grid(5000, 0, from - 5000, to + 5000));
  const r = await collect(redis, queue, n, from, to, () => grid(5000, 0, from, to));
  await tasks.close();
  const submitted = Math.max(1, all.jobs);
  return {
    case: `overload: ${n} tasks (${label}) due at the same second, every 5 s`,
    system: 'rota (1 replica)',
    tasks: n,
    ...r,
    commandsPerOccurrence: (after.commands - before.commands) / submitted,
    scriptUsPerOccurrence: (after.scriptUs - before.scriptUs) / submitted,
  };
}

async function rotaSpread(url: string, redis: Redis, n: number): Promise<Result> {
  const queue = `bench-spread-${Date.now()}`;
  const tasks = new PeriodicTasks(queue, { connection: url });
  const procs = await replicas(url, queue, 3);
  const t0 = Date.now();
  await define(tasks, n, (i) => `*:*:${String(i % 60).padStart(2, '0')}`);
  const from = Math.ceil((Date.now() + 1000) / 1000) * 1000;
  const to = from + 60_000 - 1;
  await sleep(to - Date.now() + 3000);
  await stop(procs);
  const r = await collect(redis, queue, n, from, to, (i) => grid(60_000, (i % 60) * 1000, from, to));
  await tasks.close();
  console.log(`  (spread: defined ${n} tasks in ${Date.now() - t0 - (to - from) - 3000} ms)`);
  return { case: `spread: ${n} tasks over a minute`, system: 'rota (3 replicas)', tasks: n, ...r };
}

async function rotaIdle(url: string, redis: Redis, n: number, ms: number): Promise<number> {
  const queue = `bench-idle-${Date.now()}`;
  const tasks = new PeriodicTasks(queue, { connection: url });
  await define(tasks, n, () => 'daily');
  const procs = await replicas(url, queue, 3);
  await sleep(1000);
  const before = await commandCount(redis);
  await sleep(ms);
  const after = await commandCount(redis);
  await stop(procs);
  await tasks.close();
  return ((after - before - 1) * 60_000) / ms; // the INFO call of `before` counts once
}

async function commandCount(redis: Redis): Promise<number> {
  const text = (await redis.info('commandstats')) as string;
  let total = 0;
  for (const m of text.matchAll(/calls=(\d+)/g)) total += Number(m[1]);
  return total;
}

async function bullBurst(url: string, n: number, rounds: number): Promise<Result> {
  const name = `bench-bull-${Date.now()}`;
  const u = new URL(url);
  const connection = { host: u.hostname, port: Number(u.port), maxRetriesPerRequest: null };
  const queue = new BullQueue(name, { connection });
  const late: Array<{ id: string; planned: number; processed: number; scheduler: string }> = [];
  const worker = new BullWorker(
    name,
    async (job) => {
      // Scheduler job ids end with the planned time: repeat:<scheduler>:<millis>.
      const planned = Number(job.id!.split(':').pop());
      late.push({
        id: job.id!,
        planned,
        processed: job.processedOn ?? Date.now(),
        scheduler: job.repeatJobKey ?? job.id!.split(':')[1],
      });
    },
    { connection, concurrency: 1000 },
  );
  // A cron pattern, so that all schedulers are due at the same second (`every` anchors each
  // scheduler at its own creation time, which spreads them out).
  for (let i = 0; i < n; i += 500) {
    await Promise.all(
      Array.from({ length: Math.min(500, n - i) }, (_, k) =>
        queue.upsertJobScheduler(
          `s${i + k}`,
          { pattern: '*/5 * * * * *' },
          { name: 'noop', data: {}, opts: { removeOnComplete: true } },
        ),
      ),
    );
  }
  const from = Math.ceil((Date.now() + 1500) / 5000) * 5000;
  const to = from + (rounds - 1) * 5000;
  await sleep(to - Date.now() + 3000);
  await worker.close();
  for (let i = 0; i < n; i += 500) {
    await Promise.all(Array.from({ length: Math.min(500, n - i) }, (_, k) => queue.removeJobScheduler(`s${i + k}`)));
  }
  await queue.obliterate({ force: true }).catch(() => {});
  await queue.close();
  const inWindow = late.filter((l) => l.planned >= from && l.planned <= to);
  const perOcc = new Map<string, number>();
  for (const l of inWindow) perOcc.set(`${l.scheduler}@${l.planned}`, (perOcc.get(`${l.scheduler}@${l.planned}`) ?? 0) + 1);
  let duplicates = 0;
  for (const c of perOcc.values()) duplicates += c - 1;
  const expected = n * rounds;
  return {
    case: `burst: ${n} tasks due at the same second, every 5 s`,
    system: 'bullmq job schedulers',
    tasks: n,
    occurrences: expected,
    jobs: inWindow.length,
    lateness: stats(inWindow.map((l) => l.processed - l.planned)),
    duplicates,
    misses: Math.max(0, expected - perOcc.size),
  };
}

async function main(): Promise<void> {
  const server = process.env.REDIS_URL ? null : await RedisServer.start();
  const url = process.env.REDIS_URL ?? server!.url;
  const redis = new Redis(url);
  const burstN = tiny ? 200 : quick ? 2000 : 10_000;
  const spreadN = tiny ? 300 : quick ? 10_000 : 100_000;
  const idleMs = tiny ? 2000 : quick ? 10_000 : 60_000;
  const capacity = numArg('capacity', tiny ? 200 : 20_000);
  const bigBurstN = numArg('big-burst', tiny ? 500 : 100_000);
  const results: Result[] = [];
  try {
    console.log(`redis ${url}; burst ${burstN}, spread ${spreadN}, idle window ${idleMs} ms`);
    if (runs('burst')) {
      results.push(await rotaBurst(url, redis, burstN, 4));
      console.log(results.at(-1));
    }
    if (runs('bullmq')) {
      results.push(await bullBurst(url, burstN, 4));
      console.log(results.at(-1));
    }
    if (runs('spread')) {
      await redis.flushall();
      results.push(await rotaSpread(url, redis, spreadN));
      console.log(results.at(-1));
    }
    if (runs('overload')) {
      for (const [factor, label] of [
        [0.5, 'half the capacity'],
        [1.5, '1.5 × the capacity'],
        [3, '3 × the capacity'],
      ] as const) {
        await redis.flushall();
        const o = await rotaOverload(url, redis, Math.round(capacity * factor), 4, label);
        results.push(o);
        console.log(o);
      }
    }
    if (runs('bigburst')) {
      await redis.flushall();
      results.push(await rotaBigBurst(url, redis, bigBurstN));
      console.log(results.at(-1));
    }
    await redis.flushall();
    const idle = runs('idle') ? await rotaIdle(url, redis, burstN, idleMs) : NaN;
    console.log(`idle: ${idle.toFixed(1)} Redis commands per minute from 3 replicas holding ${burstN} tasks`);
    const cost = (r: Result) =>
      'commandsPerOccurrence' in r
        ? `${(r as OverloadResult).commandsPerOccurrence.toFixed(1)} | ${(r as OverloadResult).scriptUsPerOccurrence.toFixed(1)}`
        : ' | ';
    const rows = results.map(
      (r) =>
        `| ${r.case} | ${r.system} | ${r.lateness.p50} | ${r.lateness.p99} | ${r.lateness.max} | ${r.duplicates} | ${r.misses} | ${r.jobs}/${r.occurrences} | ${cost(r)} |`,
    );
    const table = [
      '| case | system | p50 ms | p99 ms | max ms | duplicates | misses | jobs/occurrences | commands/occurrence | script µs/occurrence |',
      '|---|---|---|---|---|---|---|---|---|---|',
      ...rows,
    ].join('\n');
    console.log(`\n${table}\n\nidle: ${idle.toFixed(1)} commands/min (3 replicas, ${burstN} tasks)`);
    if (only !== null || tiny) return;
    const at = new Date().toISOString();
    const body = JSON.stringify({ at, quick, results, idleCommandsPerMinute: idle }, null, 2);
    const stamp = at.replace(/[:]/g, '-').replace(/\..*$/, '');
    mkdirSync(`${RESULTS}runs`, { recursive: true });
    writeFileSync(`${RESULTS}runs/${stamp}-scheduler${quick ? '-quick' : ''}.json`, body);
    if (!quick) writeFileSync(`${RESULTS}scheduler.json`, body);
  } finally {
    await redis.quit();
    await server?.destroy();
  }
}

await main();

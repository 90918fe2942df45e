/**
 * How long one script call of Queue.clean and Queue.retryFailed holds Redis, over a large failed
 * set: the server's own time per FCALL, read from SLOWLOG (every command logged), per phase:
 * a clean of one group (every member visited, few removed), a retry of every failed job, and a
 * clean of every failed job. Each failed job has 100 bytes of args, a 500-byte error and three log lines.
 * Usage: npx tsx benchmarks/probes/clean-cost.ts [--jobs 100000] [--groups 1000]
 */
import type { Redis } from 'ioredis';
import { Queue } from '../../src/index.js';
import { addRun, QueueStore } from '../../src/redis/queue-store.js';
import type { StringValue } from '../../src/redis/string-array.js';
import { OUTCOME } from '../../src/redis/wire.js';
import { arg, labRedis, scriptStats, serverCpuUs, submitSpread, takeAll } from './lab.js';

const jobs = arg('jobs', 100_000);
const groups = arg('groups', 1000);
const lab = await labRedis();
const { url, admin } = lab;
const q = new Queue('clean', { connection: url });
const store = new QueueStore(q.client, 'clean', { maxEvents: 10_000 });
const ERROR = `Error: boom\n${'    at handler (file:///app/tasks.js:10:11)\n'.repeat(11)}`.slice(0, 500);

/** Takes every waiting job and fails it for good (no retries, every failed job kept), with three log lines each. */
async function failAll(): Promise<void> {
  const taken = await takeAll(store, (await q.counts()).waiting, 1000);
  for (let i = 0; i < taken.length; i += 1000) {
    const runs: StringValue[] = [];
    const pipe = admin.pipeline();
    for (const [id, seq] of taken.slice(i, i + 1000)) {
      addRun(runs, id, seq, OUTCOME.permanent, true, ERROR);
      pipe.rpush(q.keys.logs(id), 'a log line of the run', 'another log line', 'the last log line');
    }
    await pipe.exec();
    await store.finish(
      { workerId: '', countingScheme: [2, 1], leaseMs: 60_000, retryDelay: 1000 },
      { succeeded: -1, failed: -1 },
      0,
      runs,
    );
  }
}

/** The FCALL durations (µs) the slow log holds, emptying it. */
async function fcallDurations(r: Redis): Promise<number[]> {
  const entries = (await r.call('SLOWLOG', 'GET', '-1')) as Array<[number, number, number, string[]]>;
  await r.call('SLOWLOG', 'RESET');
  return entries.filter((e) => String(e[3][0]).toUpperCase() === 'FCALL').map((e) => Number(e[2]));
}

/**
 * Runs a phase and prints its calls' durations: wall time in Redis per call (the slow log; on a
 * busy machine it counts the time Redis waited for a core too), and Redis CPU per call (mean).
 */
async function phase(name: string, body: () => Promise<number>): Promise<void> {
  await admin.call('SLOWLOG', 'RESET');
  const cpu0 = await serverCpuUs(admin);
  const calls0 = (await scriptStats(admin)).calls;
  const n = await body();
  const cpuMs = ((await serverCpuUs(admin)) - cpu0) / 1000;
  const calls = (await scriptStats(admin)).calls - calls0;
  const us = (await fcallDurations(admin)).sort((a, b) => a - b);
  if (us.length !== calls) throw new Error(`the slow log holds ${us.length} of ${calls} calls`);
  const at = (p: number) => us[Math.min(us.length - 1, Math.floor(p * us.length))] / 1000;
  console.log(
    `${name.padEnd(24)} ${String(n).padStart(7)} jobs ${String(us.length).padStart(4)} calls | per call: ` +
      `CPU ${(cpuMs / us.length).toFixed(2)} ms mean; wall p50 ${at(0.5).toFixed(2)} ms, p99 ${at(0.99).toFixed(2)} ms, max ${at(1).toFixed(2)} ms`,
  );
}

await submitSpread(q, jobs, groups);
await failAll();
await admin.config('SET', 'slowlog-log-slower-than', '0');
await admin.config('SET', 'slowlog-max-len', '100000');
console.log(`${jobs} failed jobs over ${groups} groups`);
await phase('clean one group', () => q.clean({ state: 'failed', group: 'g1' }));
await phase('retryFailed, every job', () => q.retryFailed());
await failAll();
await phase('clean, every failed job', () => q.clean({ state: 'failed' }));
await admin.config('SET', 'slowlog-log-slower-than', '10000');
await q.close();
await lab.close();

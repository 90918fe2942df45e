/**
 * Redis cost of one job from submit to success: script calls and commands per job, read from
 * INFO commandstats before and after draining N jobs (bulk submit, one executor).
 * Usage: npx tsx benchmarks/probes/job-cost.ts [--jobs 10000] [--concurrency 100] [--groups 1000]
 */
import type { Redis } from 'ioredis';
import { Queue, Worker } from '../../src/index.js';
import { arg, labRedis, serverCpuUs, submitSpread } from './lab.js';

/** Parses INFO commandstats into calls per command, and used CPU (µs). */
export async function redisStats(r: Redis): Promise<{ calls: Map<string, number>; usec: Map<string, number>; cpuUs: number }> {
  const stats = await r.info('commandstats');
  const calls = new Map<string, number>();
  const usec = new Map<string, number>();
  for (const m of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    calls.set(m[1], Number(m[2]));
    usec.set(m[1], Number(m[3]));
  }
  return { calls, usec, cpuUs: await serverCpuUs(r) };
}

const jobs = arg('jobs', 10_000);
const concurrency = arg('concurrency', 100);
const groups = arg('groups', 1000);
const lab = await labRedis();
const { url, admin } = lab;
await admin.config('RESETSTAT');
const q = new Queue('cost', { connection: url });
const before = await redisStats(admin);
const cpu0 = process.cpuUsage();
const t0 = performance.now();
await submitSpread(q, jobs, groups);
let done = 0;
await new Promise<void>((resolve) => {
  const w = new Worker('cost', { noop: () => undefined }, { connection: url, concurrency });
  w.on('completed', () => {
    if (++done === jobs) void w.close().then(resolve);
  });
});
const ms = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
const after = await redisStats(admin);
const rows: Array<[string, number]> = [];
for (const [cmd, n] of after.calls) {
  const d = n - (before.calls.get(cmd) ?? 0);
  if (d > 0 && cmd !== 'info' && cmd !== 'config') rows.push([cmd, d]);
}
rows.sort((a, b) => b[1] - a[1]);
const scripts = rows.filter(([c]) => c === 'evalsha' || c === 'eval' || c === 'fcall').reduce((s, [, n]) => s + n, 0);
const total = rows.reduce((s, [, n]) => s + n, 0);
console.log(
  `${jobs} jobs, ${groups} groups, concurrency ${concurrency}: ${(jobs / (ms / 1000)).toFixed(0)} jobs/s (submit + drain)`,
);
console.log(
  `script calls per job: ${(scripts / jobs).toFixed(3)}; Redis commands per job (those run inside scripts included): ${(total / jobs).toFixed(3)}`,
);
console.log(
  `Redis CPU per job: ${((after.cpuUs - before.cpuUs) / jobs).toFixed(1)} µs; Node CPU per job (submitter and executor, one process): ${((cpu.user + cpu.system) / jobs).toFixed(1)} µs`,
);
for (const [cmd, n] of rows.slice(0, 25)) {
  const us = (after.usec.get(cmd) ?? 0) - (before.usec.get(cmd) ?? 0);
  console.log(`  ${cmd.padEnd(16)} ${(n / jobs).toFixed(3)} per job, ${(us / jobs).toFixed(2)} µs per job`);
}
await q.close();
await lab.close();

/**
 * What a reshard costs: jobs moved a second, Redis CPU a job (INFO cpu around the whole reshard),
 * and how long each reshard script call holds Redis (SLOWLOG of every command: time in Redis, so on
 * a busy machine it counts waits for a core too), for 1 -> 4 -> 2 -> 1 shards of a queue of waiting
 * jobs with 100 bytes of args each.
 * Usage: npx tsx benchmarks/probes/reshard-cost.ts [--jobs 100000] [--groups 1000] [--batch 500]
 */
import { Queue, reshard } from '../../src/index.js';
import { arg, labRedis, serverCpuUs, submitSpread } from './lab.js';

const jobs = arg('jobs', 100_000);
const groups = arg('groups', 1000);
const batch = arg('batch', 500);
const lab = await labRedis();
const { url, admin } = lab;
const q = new Queue('reshard', { connection: url });
await submitSpread(q, jobs, groups);
await q.close();
console.log(`${jobs} waiting jobs over ${groups} groups, steps of ${batch} jobs`);
await admin.config('SET', 'slowlog-log-slower-than', '0');
await admin.config('SET', 'slowlog-max-len', String(20 * jobs));
for (const to of [4, 2, 1]) {
  await admin.slowlog('RESET');
  const cpu0 = await serverCpuUs(admin);
  const t0 = performance.now();
  const r = await reshard(url, 'reshard', { to, batch });
  const s = (performance.now() - t0) / 1000;
  const cpu = (await serverCpuUs(admin)) - cpu0;
  const log = (await admin.slowlog('GET', -1)) as Array<[number, number, number, string[]]>;
  const calls = new Map<string, number[]>();
  for (const [, , usec, [command, fn]] of log) {
    const script = command.toUpperCase() === 'FCALL' ? /_(reshard_\w+)$/.exec(fn)?.[1] : undefined;
    if (script) calls.set(script, [...(calls.get(script) ?? []), usec]);
  }
  const ms = (xs: number[], p: number) => (xs[Math.min(xs.length - 1, Math.floor(p * xs.length))] / 1000).toFixed(1);
  console.log(
    `${r.from} -> ${r.to}: ${r.moved} jobs moved in ${s.toFixed(1)} s (${Math.round(r.moved / s)}/s), Redis CPU ${(cpu / r.moved).toFixed(1)} µs a job`,
  );
  for (const [script, xs] of calls) {
    xs.sort((a, b) => a - b);
    console.log(
      `  ${script.padEnd(16)} ${String(xs.length).padStart(5)} calls, ms: p50 ${ms(xs, 0.5)} p99 ${ms(xs, 0.99)} max ${ms(xs, 1)}`,
    );
  }
}
await lab.close();

/**
 * Whether an executor's slots free up in waves: one executor of C slots drains a backlog of N
 * jobs of R ms (one group), while L light tenants each submit a job every E ms (the harness's
 * noisy-neighbour case, in one process). For each round it gives the backlog's rate, the light
 * jobs' waits (submit -> handler start, p50 and p99), how bunched the starts were (the share of
 * quarter-milliseconds, after the first half second, in which no job started: about 0 when the
 * starts are spread over the run time, about a half when they bunch into half of it), and
 * Redis's CPU a backlog job (user and system) with the script calls a job.
 *
 * Usage: npx tsx benchmarks/probes/slot-waves.ts [--jobs 20000] [--run-ms 10] [--concurrency 100]
 *          [--light 10] [--light-every 50] [--rounds 3]
 */

import { parseInfo, percentiles, sleep } from '../../src/bench/measure.js';
import { Queue, Worker } from '../../src/index.js';
import { arg, labRedis, scriptStats, submitSpread } from './lab.js';

const jobs = arg('jobs', 20_000);
const runMs = arg('run-ms', 10);
const concurrency = arg('concurrency', 100);
const lightTenants = arg('light', 10);
const lightEvery = arg('light-every', 50);
const rounds = arg('rounds', 3);
/** The backlog's group (submitSpread over one group). */
const HEAVY = 'g0';

const lab = await labRedis();
const { url, admin } = lab;
const cpu = async () => {
  const info = parseInfo(await admin.info('cpu'));
  return { user: Number(info.used_cpu_user) * 1e6, sys: Number(info.used_cpu_sys) * 1e6 };
};

console.log(
  `${jobs} jobs of ${runMs} ms, one executor of ${concurrency} slots, ${lightTenants} light tenants every ${lightEvery} ms`,
);
for (let round = 1; round <= rounds; round++) {
  await admin.flushall();
  const q = new Queue('waves', { connection: url });
  // the backlog: the probes' jobs (task noop, 100-byte args), all in group g0
  await submitSpread(q, jobs, 1);
  const cpu0 = await cpu();
  const calls0 = (await scriptStats(admin)).calls;
  const t0 = performance.now();
  const starts: number[] = [];
  const waits: number[] = [];
  let heavyDone = 0;
  let t1 = 0;
  const w = new Worker(
    'waves',
    {
      noop: async ({ job, args }) => {
        const now = performance.now();
        const heavy = job.group === HEAVY;
        if (heavy) starts.push(now - t0);
        else waits.push(now - (args as { t: number }).t);
        await sleep(runMs);
        if (heavy && ++heavyDone === jobs) t1 = performance.now();
      },
    },
    { connection: url, concurrency },
  );
  // The light tenants' timers fire in one turn: their jobs arrive together, as in the harness.
  const timers = Array.from({ length: lightTenants }, (_, k) =>
    setInterval(() => {
      void q.submit({ task: 'noop', group: `light${k}`, args: { t: performance.now() } });
    }, lightEvery),
  );
  while (t1 === 0) await sleep(5);
  const cpu1 = await cpu();
  const calls1 = (await scriptStats(admin)).calls;
  timers.forEach(clearInterval);
  await w.close();
  const seconds = (t1 - t0) / 1000;
  const bins = new Set(starts.filter((s) => s >= 500).map((s) => Math.floor(s * 4)));
  const span = Math.floor((t1 - t0 - 500) * 4);
  const [p50, p99] = percentiles(waits, [50, 99]);
  console.log(
    `round ${round}: ${Math.round(jobs / seconds)} jobs/s; light waits p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms ` +
      `(${waits.length} jobs); quarter-ms without a start ${((1 - bins.size / span) * 100).toFixed(0)}%; ` +
      `Redis a job: user ${((cpu1.user - cpu0.user) / jobs).toFixed(1)} µs, system ${((cpu1.sys - cpu0.sys) / jobs).toFixed(1)} µs, ` +
      `${((calls1 - calls0) / jobs).toFixed(2)} script calls`,
  );
  await q.close();
}
await lab.close();

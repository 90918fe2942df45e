/**
 * Executor CPU per job of a no-op drain with the handler in-process, in a thread pool and in a
 * process pool (process.cpuUsage of this process, threads included, plus the children's CPU as
 * the pool reports it): CPU time, not a rate, so it may run on a busy machine. The pool is
 * started before the measured drain.
 * Usage: npx tsx benchmarks/probes/isolate-cpu.ts [--jobs 5000] [--concurrency 100] [--max N] [--only thread|process|inprocess]
 */
import { isolated, Queue, Worker } from '../../src/index.js';
import { arg, labRedis, submitSpread } from './lab.js';

const jobs = arg('jobs', 5000);
const concurrency = arg('concurrency', 100);
const max = arg('max', 0);
const jobsEach = arg('jobs-each', 0);
const onlyAt = process.argv.indexOf('--only');
const only = onlyAt > 0 ? process.argv[onlyAt + 1] : undefined;
const lab = await labRedis();
const noop = new URL('../../src/bench/isolated-noop.ts', import.meta.url);
for (const where of ['inprocess', 'thread', 'process'] as const) {
  if (only && only !== where) continue;
  const name = `cpu-${where}`;
  const q = new Queue(name, { connection: lab.url });
  await submitSpread(q, jobs, 1000);
  const handler =
    where === 'inprocess'
      ? () => undefined
      : isolated(noop, { in: where, ...(max ? { max, min: max } : { min: concurrency }), ...(jobsEach ? { jobsEach } : {}) });
  const w = new Worker(name, { noop: handler }, { connection: lab.url, concurrency, autorun: false });
  let done = 0;
  let finished!: () => void;
  const all = new Promise<void>((r) => (finished = r));
  w.on('completed', () => {
    if (++done === jobs) finished();
  });
  await w.run();
  const children0 = w.poolStats().reduce((s, p) => s + p.cpuUs, 0);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await all;
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const children = w.poolStats().reduce((s, p) => s + p.cpuUs, 0) - children0;
  const us = (cpu.user + cpu.system + children) / jobs;
  const rss = process.memoryUsage.rss() / 1_048_576;
  const restarts = JSON.stringify(w.poolStats().map((s) => s.restarts));
  await w.close();
  await q.close();
  console.log(
    `${where}: ${us.toFixed(0)} µs CPU a job (${((cpu.user + cpu.system) / jobs).toFixed(0)} this process), ${Math.round((jobs / ms) * 1000)} jobs/s (loaded machine), RSS ${Math.round(rss)} MB; ${jobs} jobs, concurrency ${concurrency}${max ? `, ${max} members` : ''}; restarts ${restarts}`,
  );
}
await lab.close();

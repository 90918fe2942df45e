/**
 * Instructions Redis executes per job in each hot-path phase, counted by valgrind's callgrind:
 * the same count on every run and machine load, where CPU time on a shared 2-core machine moves
 * by a factor of two from one minute to the next. For comparing two versions of the scripts.
 *
 * Phases: bulk submit (batches of --submit-batch over --groups groups), take (--batch jobs per
 * call), finish (--batch runs per call, each with its start folded in, as executors send quick
 * runs), then --single one-job submits one after another (the cost of a call, not of a job).
 *
 * With --drain N, then N jobs filled in bulk and drained by one real executor of --concurrency
 * slots (default 100): instructions per drained job, and jobs per script call.
 *
 * With --fixed-drain, the drain sends the calls of such an executor in fixed sizes instead
 * (lab.ts drainInBatches): the same calls on every run, where a real executor's take sizes
 * follow how fast the server answers.
 *
 * With --scripts-only, only what Redis executes inside the scripts is counted, on a server whose
 * timers are settled (callgrind.ts SCRIPTS_ONLY): with --fixed-drain, counts that do not move
 * with machine load (the performance budget, benchmarks/budget.ts, runs this). --json prints
 * the figures as one JSON object instead.
 *
 * With --cache-sim, valgrind also simulates the caches (several times slower), and each phase
 * gives the data accesses per job that miss the first-level (D1) and the last-level (LL) cache:
 * a layout change can add instructions and still save time through the misses it spares.
 *
 * Usage: npx tsx benchmarks/probes/instructions.ts [--jobs 5000] [--groups 1000] [--batch 25]
 *          [--submit-batch 1000] [--single 500] [--drain 0] [--concurrency 100]
 *          [--fixed-drain] [--scripts-only] [--json] [--redis-server PATH] [--keep] [--cache-sim]
 * Needs valgrind (callgrind_control). A redis-server built with symbols (see README) lets
 * `callgrind_annotate <dir>/cg.out.N` name the functions; --keep keeps that directory.
 */
import { Queue, Worker } from '../../src/index.js';
import { QueueStore } from '../../src/redis/queue-store.js';
import { startCallgrindServer } from './callgrind.js';
import { arg, drainInBatches, finishAll, PROBE_ARGS, scriptStats, submitSpread, takeAll } from './lab.js';

const jobs = arg('jobs', 5000);
const groups = arg('groups', 1000);
const batch = arg('batch', 25);
const submitBatch = arg('submit-batch', 1000);
const single = arg('single', 500);
const drain = arg('drain', 0);
const concurrency = arg('concurrency', 100);
const serverAt = process.argv.indexOf('--redis-server');
const server = serverAt > 0 ? process.argv[serverAt + 1] : 'redis-server';
const keep = process.argv.includes('--keep');
const cacheSim = process.argv.includes('--cache-sim');
const scriptsOnly = process.argv.includes('--scripts-only');
const fixedDrain = process.argv.includes('--fixed-drain');
const json = process.argv.includes('--json');

const cg = await startCallgrindServer(server, { cacheSim, scriptsOnly });
const { url, client, dump, counted } = cg;

const q = new Queue('cg', { connection: url });
const store = new QueueStore(client, 'cg', { maxEvents: 10_000 });
// The library loaded and the server warm before counting (and the queue's schema recorded).
await q.submit({ task: 'noop', group: 'warm', args: PROBE_ARGS });
await client.flushall();
await store.ready();
dump('setup');

await submitSpread(q, jobs, groups, submitBatch);
dump('submit');
const taken = await takeAll(store, jobs, batch);
dump('take');
await finishAll(store, taken, batch, '+s');
dump('finish');
for (let i = 0; i < single; i++) await q.submit({ task: 'noop', group: `s${i % 10}`, args: PROBE_ARGS });
dump('single');

// A drain through a real executor (--drain jobs, filled in bulks of 1,000 over --groups groups,
// one executor of --concurrency slots with a no-op handler): the take and finish calls as the
// executor sizes and combines them.
let drainCalls = 0;
if (drain > 0) {
  const dq = new Queue('cgd', { connection: url });
  const dstore = new QueueStore(client, 'cgd', { maxEvents: 10_000 });
  await submitSpread(dq, drain, groups);
  await dstore.ready();
  const calls0 = (await scriptStats(client)).calls;
  dump('drain-fill');
  if (fixedDrain) await drainInBatches(dstore, concurrency);
  else {
    let done = 0;
    await new Promise<void>((resolve) => {
      const w = new Worker('cgd', { noop: () => undefined }, { connection: url, concurrency });
      w.on('completed', () => {
        if (++done === drain) void w.close().then(resolve);
      });
    });
  }
  dump('drain');
  drainCalls = (await scriptStats(client)).calls - calls0;
  await dq.close();
}

const per = (phase: string, n: number) => Math.round(counted(phase) / n);
/** Data accesses per job of `phase` that missed the first-level and the last-level cache. */
const misses = (phase: string, n: number) => {
  const e = cg.events(phase);
  return `${phase}: D1 ${Math.round((e.D1mr + e.D1mw) / n)}, LL ${Math.round((e.DLmr + e.DLmw) / n)}`;
};
if (json) {
  // (the performance budget's figures, per job: benchmarks/budget.ts)
  const figures: Record<string, number> = { submit: per('submit', jobs), take: per('take', jobs), finish: per('finish', jobs) };
  if (single > 0) figures.single = per('single', single);
  if (drain > 0) figures.drain = per('drain', drain);
  console.log(JSON.stringify(figures));
} else {
  console.log(`${jobs} jobs over ${groups} groups; submit batches of ${submitBatch}, take and finish batches of ${batch}`);
  console.log(
    `instructions per job: submit ${per('submit', jobs)}, take ${per('take', jobs)}, finish ${per('finish', jobs)}; ` +
      `lifecycle ${per('submit', jobs) + per('take', jobs) + per('finish', jobs)}`,
  );
  if (single > 0) console.log(`instructions per one-job submit call: ${per('single', single)}`);
  if (drain > 0) {
    const what = fixedDrain
      ? 'take and finish calls in fixed sizes'
      : 'take, start and finish calls, worker registry and heartbeat';
    console.log(
      `drain of ${drain} jobs at concurrency ${concurrency}: ${per('drain', drain)} instructions per job ` +
        `(${what}), ${(drain / drainCalls).toFixed(1)} jobs per script call`,
    );
  }
}
if (cacheSim) {
  const phases = [misses('submit', jobs), misses('take', jobs), misses('finish', jobs)];
  if (drain > 0) phases.push(misses('drain', drain));
  console.log(`data cache misses per job: ${phases.join('; ')}`);
}
await q.close();
const dir = await cg.stop(keep);
if (dir) console.log(`callgrind dumps: ${dir}`);

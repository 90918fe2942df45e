/**
 * What keeps Redis idle in a drain: one executor drains N no-op jobs (filled in bulk over G
 * groups), and the probe gives the drain's rate, how busy Redis was (its CPU time over the
 * drain's wall time), how often Redis went idle waiting for a request (its voluntary context
 * switches, read from /proc when the server runs on this machine), and the executor's garbage
 * collections during the drain (count, total and longest pause, from perf_hooks). Redis holds
 * at most the executor's slots of work (about 1 ms at 100 slots), so any executor pause longer
 * than that leaves it idle.
 *
 * Usage: npx tsx benchmarks/probes/executor-pauses.ts [--jobs 100000] [--groups 1000]
 *          [--concurrency 100] [--rounds 3]
 */
import { readFileSync } from 'node:fs';
import { constants, type PerformanceEntry, PerformanceObserver } from 'node:perf_hooks';
import { Queue, Worker } from '../../src/index.js';
import { arg, labRedis, serverCpuUs, submitSpread } from './lab.js';

const jobs = arg('jobs', 100_000);
const groups = arg('groups', 1000);
const concurrency = arg('concurrency', 100);
const rounds = arg('rounds', 3);

const lab = await labRedis();
const { url, admin } = lab;
const pid = Number(/process_id:(\d+)/.exec(await admin.info('server'))![1]);
/** The server's voluntary context switches so far (null when its /proc entry is not readable). */
function serverWaits(): number | null {
  try {
    return Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
  } catch {
    return null;
  }
}

const collections: PerformanceEntry[] = [];
const observer = new PerformanceObserver((list) => collections.push(...list.getEntries()));
observer.observe({ entryTypes: ['gc'] });

/** Count, total and longest pause (ms) of the collections of `kind` between `from` and `to`. */
function pauses(kind: number, from: number, to: number): string {
  const of = collections.filter(
    (e) =>
      (e as PerformanceEntry & { detail: { kind: number } }).detail.kind === kind && e.startTime >= from && e.startTime <= to,
  );
  const total = of.reduce((s, e) => s + e.duration, 0);
  const longest = of.reduce((m, e) => Math.max(m, e.duration), 0);
  return `${of.length} (${total.toFixed(0)} ms, longest ${longest.toFixed(1)} ms)`;
}

console.log(`${jobs} jobs over ${groups} groups, one executor of ${concurrency} slots`);
for (let round = 1; round <= rounds; round++) {
  await admin.flushall();
  const q = new Queue('pauses', { connection: url });
  await submitSpread(q, jobs, groups);
  const cpu0 = await serverCpuUs(admin);
  const waits0 = serverWaits();
  const t0 = performance.now();
  let done = 0;
  let t1 = 0;
  await new Promise<void>((resolve) => {
    // counted in the handler, as the harness's adapter does (no event listener builds job objects)
    const w = new Worker(
      'pauses',
      {
        noop: () => {
          if (++done < jobs) return;
          t1 = performance.now();
          setImmediate(() => void w.close().then(resolve));
        },
      },
      { connection: url, concurrency },
    );
  });
  const cpu1 = await serverCpuUs(admin);
  const waits1 = serverWaits();
  // (the observer hears of collections a turn of the event loop later)
  await new Promise((r) => setTimeout(r, 50));
  const seconds = (t1 - t0) / 1000;
  const waits = waits0 === null || waits1 === null ? 'n/a' : `${Math.round((waits1 - waits0) / seconds)}/s`;
  console.log(
    `round ${round}: ${Math.round(jobs / seconds)} jobs/s, Redis busy ${((cpu1 - cpu0) / 1e4 / seconds).toFixed(0)}%, ` +
      `idle waits ${waits}; executor scavenges ${pauses(constants.NODE_PERFORMANCE_GC_MINOR, t0, t1)}, ` +
      `full collections ${pauses(constants.NODE_PERFORMANCE_GC_MAJOR, t0, t1)}`,
  );
  await q.close();
}
observer.disconnect();
await lab.close();

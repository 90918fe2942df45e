/**
 * The cost of a backfill (PeriodicTasks.backfill): N past occurrences of an every-minute task,
 * submitted in steps (allow), queued in the task's buffer-all backlog, and backfilled again (each
 * occurrence found already run). Prints the throughput (occurrences/s, wall clock, one process)
 * and the longest single Redis call each makes, from the slowlog (slowlog-log-slower-than 0), and
 * the script's mean time per call from INFO commandstats.
 * Usage: npx tsx benchmarks/probes/backfill-cost.ts [--occurrences 100000]
 */
import { PeriodicTasks } from '../../src/index.js';
import { PeriodicStore } from '../../src/redis/periodic-store.js';
import { QueueStore } from '../../src/redis/queue-store.js';
import { arg, labRedis, scriptStats } from './lab.js';

const n = arg('occurrences', 100_000);
const lab = await labRedis();
const { url, admin } = lab;
await admin.config('SET', 'slowlog-max-len', '100000');

type Entry = [number, number, number, string[]];
/** The script calls of the slowlog since its reset: the longest (µs) and its command, and the 99th percentile. */
async function longest(): Promise<{ us: number; what: string; p99: number }> {
  const log = (await admin.call('SLOWLOG', 'GET', '-1')) as Entry[];
  let top = { us: 0, what: '' };
  const all: number[] = [];
  for (const [, , us, args] of log) {
    // (the backfill's script calls; its few reads of the task are short)
    if (!/^fcall$/i.test(String(args[0]))) continue;
    all.push(us);
    if (us > top.us) top = { us, what: `${args[0]} ${args[1]}` };
  }
  all.sort((a, b) => a - b);
  return { ...top, p99: all[Math.floor(all.length * 0.99)] ?? 0 };
}

const tasks = new PeriodicTasks('bfcost', { connection: url });
const M = 60_000;
const to = Math.floor(Date.now() / M) * M;
const from = to - n * M;
for (const [id, label, overlap] of [
  ['a', 'allow', 'allow'],
  ['q', 'buffer-all', 'buffer-all'],
  ['a', 'again', 'allow'],
] as const) {
  if (label !== 'again') await tasks.upsert({ id, task: 'noop', timer: '*-*-* *:*:00', overlap: 'allow' });
  await admin.config('SET', 'slowlog-log-slower-than', '0');
  await admin.call('SLOWLOG', 'RESET');
  const before = await scriptStats(admin);
  const t0 = performance.now();
  const r = await tasks.backfill(id, { from, to, overlap });
  const ms = performance.now() - t0;
  await admin.config('SET', 'slowlog-log-slower-than', '10000');
  const after = await scriptStats(admin);
  const top = await longest();
  const calls = after.calls - before.calls;
  console.log(
    `${label.padEnd(10)} ${r!.occurrences} occurrences (${r!.submitted} submitted, ${r!.alreadyRan} already ran) in ${ms.toFixed(0)} ms: ` +
      `${Math.round((r!.occurrences / ms) * 1000)} occurrences/s; ${calls} script calls, ` +
      `${((after.usec - before.usec) / calls).toFixed(0)} µs each on average; 99% of its script calls under ${(top.p99 / 1000).toFixed(2)} ms, the longest ${(top.us / 1000).toFixed(2)} ms (${top.what})`,
  );
}
// The claims that follow trim the task's history (100,000 entries past the keep count of 100) in steps.
const store = new PeriodicStore(new QueueStore(admin, 'bfcost', { maxEvents: 10_000 }));
const history = store.keys.history('a');
const entries = await admin.zcard(history);
await admin.config('SET', 'slowlog-log-slower-than', '0');
await admin.call('SLOWLOG', 'RESET');
let claims = 0;
for (; claims < 5; claims++) {
  const due = Number((await admin.zscore(store.keys.nextrun, 'a')) ?? 0);
  await store.claim({
    lookaheadMs: 2500,
    max: 10,
    claimTtlMs: 6000,
    now: due,
    keepCount: 100,
    keepAgeMs: -1,
    misfireGraceMs: 15_000,
  });
}
await admin.config('SET', 'slowlog-log-slower-than', '10000');
const trim = await longest();
console.log(
  `history trim: ${entries} entries, ${await admin.zcard(history)} after ${claims} claims; the longest claim ${(trim.us / 1000).toFixed(2)} ms`,
);
const mem = String(await admin.call('MEMORY', 'USAGE', '{rota:bfcost}:p:bf:a'));
console.log(`ledger of ${n} occurrences: ${(Number(mem) / 1e6).toFixed(1)} MB (MEMORY USAGE)`);
await tasks.close();
await lab.close();

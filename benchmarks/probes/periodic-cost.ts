/**
 * Redis CPU per task of each periodic script on its own (claim, stage, release), for tuning the
 * Lua: N tasks due at the same moment, claimed, staged and released in batches as a replica does,
 * with INFO commandstats read around each phase. Runs the scheduler's scripts, without timers.
 * With --callgrind, the server runs under callgrind and each phase reports instructions per task
 * (the same on every run, whatever the machine's load) instead of µs.
 * Usage: npx tsx benchmarks/probes/periodic-cost.ts [--tasks 10000] [--batch 500] [--rounds 3] [--callgrind]
 */
import { Redis } from 'ioredis';
import { PeriodicTasks, Queue } from '../../src/index.js';
import { type ClaimedTask, claimedPart, PeriodicStore, type StageRecord } from '../../src/redis/periodic-store.js';
import { QueueStore } from '../../src/redis/queue-store.js';
import { startCallgrindServer } from './callgrind.js';
import { arg, labRedis, scriptUsec } from './lab.js';

const n = arg('tasks', 10_000);
const batch = arg('batch', 500);
const rounds = arg('rounds', 3);
const cg = process.argv.includes('--callgrind') ? await startCallgrindServer('redis-server') : null;
const lab = cg ? { url: cg.url, admin: cg.client, close: () => cg.stop(false) } : await labRedis();
const { url, admin } = lab;
const client = new Redis(url);
const store = new PeriodicStore(new QueueStore(client, 'pcost', { maxEvents: 10_000 }));
const keys = store.keys;

let phases = 0;
async function phase<T>(name: string, body: () => Promise<T>): Promise<T> {
  const label = `${name}-${++phases}`;
  cg?.dump(`before-${label}`);
  const before = await scriptUsec(admin);
  const t0 = performance.now();
  const out = await body();
  const ms = performance.now() - t0;
  const us = (await scriptUsec(admin)) - before;
  if (cg) {
    cg.dump(label);
    console.log(
      `  ${name.padEnd(8)} ${Math.round(cg.counted(label) / n)
        .toLocaleString('en-US')
        .padStart(9)} instructions per task`,
    );
  } else {
    console.log(`  ${name.padEnd(8)} ${(us / n).toFixed(2).padStart(7)} µs Redis per task, ${ms.toFixed(0)} ms in all`);
  }
  return out;
}

// (defined on a fixed clock, so that a slow server does not spread their first occurrences)
const definedAt = Date.now();
const tasks = new PeriodicTasks('pcost', { connection: url, now: () => definedAt });
// A calendar timer every 10 s (seconds 0, 10, ...): every task's occurrence is the same instant;
// the clock is injected (ARGV now) so every round is due at once.
for (let i = 0; i < n; i += 1000) {
  await Promise.all(
    Array.from({ length: Math.min(1000, n - i) }, (_, k) =>
      tasks.upsert({ id: `t${i + k}`, task: 'noop', timer: '*:*:0/10', overlap: 'allow' }),
    ),
  );
}
for (let round = 0; round < rounds; round++) {
  const first = Number((await admin.zrange(keys.nextrun, 0, 0, 'WITHSCORES'))[1]);
  const now = first - 1000;
  console.log(`round ${round + 1}: ${n} tasks due at ${new Date(first).toISOString()}`);
  const claimed = await phase('claim', async () => {
    const out: ClaimedTask[] = [];
    for (;;) {
      const { tasks: got } = await store.claim({
        lookaheadMs: 2500,
        max: batch,
        claimTtlMs: 6000,
        now,
        keepCount: 100,
        keepAgeMs: -1,
        misfireGraceMs: 15_000,
      });
      if (got.length === 0) break;
      out.push(...got);
      if (out.length >= n) break;
    }
    return out;
  });
  // What the scheduler sends: the plan (one occurrence, the next 10 s later), then the task's fields.
  const recs = claimed.map(
    (t): StageRecord => ({
      id: t.id,
      token: t.token,
      triggered: '',
      nextrun: String(Number(t.nextrun) + 10_000),
      period: '10000',
      missed: '0',
      missedFirst: '',
      missedLast: '',
      occurrences: t.nextrun,
      ...claimedPart(t),
      failure: '',
      excluded: '',
      dues: '',
      runs: '',
      ended: '',
      idSuffix: '',
    }),
  );
  await phase('stage', async () => {
    for (let i = 0; i < recs.length; i += batch) await store.stage(recs.slice(i, i + batch));
  });
  await phase('release', async () => {
    for (;;) {
      const { submitted, skipped } = await store.release({
        now: first + 1,
        max: batch,
        bufferPollMs: 1000,
        misfireGraceMs: 15_000,
        keepAgeMs: -1,
      });
      if (submitted + skipped === 0) break;
    }
  });
}
const queue = new Queue('pcost', { connection: url });
const jobs = (await queue.counts()).waiting;
await queue.close();
console.log(`jobs waiting: ${jobs} (expected ${n * rounds})`);
await tasks.close();
client.disconnect();
await lab.close();

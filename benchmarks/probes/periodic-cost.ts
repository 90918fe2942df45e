/**
 * Redis CPU per task of each periodic script on its own (claim, stage, release), for tuning the
 * Lua: N tasks due at the same moment, claimed, staged and released in batches as a replica does,
 * with INFO commandstats read around each phase. Runs the scheduler's scripts, without timers.
 * Usage: npx tsx benchmarks/probes/periodic-cost.ts [--tasks 10000] [--batch 500] [--rounds 3]
 */
import { Redis } from 'ioredis';
import { PeriodicTasks } from '../../src/index.js';
import { arg, labRedis, scriptUsec } from './lab.js';
import { runScript } from '../../src/redis/scripts.js';
import { periodicKeys } from '../../src/periodic/keys.js';
import { encodeRecord } from '../../src/periodic/record.js';

const n = arg('tasks', 10_000);
const batch = arg('batch', 500);
const rounds = arg('rounds', 3);
const lab = await labRedis();
const { url, admin } = lab;
const client = new Redis(url);
const keys = periodicKeys('pcost');

async function phase<T>(name: string, body: () => Promise<T>): Promise<T> {
  const before = await scriptUsec(admin);
  const t0 = performance.now();
  const out = await body();
  const ms = performance.now() - t0;
  const us = (await scriptUsec(admin)) - before;
  console.log(`  ${name.padEnd(8)} ${(us / n).toFixed(2).padStart(7)} µs Redis per task, ${ms.toFixed(0)} ms in all`);
  return out;
}

const tasks = new PeriodicTasks('pcost', { connection: url });
// An interval timer every 10 s; the clock is injected (ARGV now) so every round is due at once.
for (let i = 0; i < n; i += 1000) {
  await Promise.all(Array.from({ length: Math.min(1000, n - i) }, (_, k) =>
    tasks.upsert({ id: `t${i + k}`, task: 'noop', timer: 'every 10s', overlap: 'allow' })));
}
const CLAIM_WIDTH = 20;
for (let round = 0; round < rounds; round++) {
  const first = Number((await admin.zrange(keys.nextrun, 0, 0, 'WITHSCORES'))[1]);
  const now = first - 1000;
  console.log(`round ${round + 1}: ${n} tasks due at ${new Date(first).toISOString()}`);
  const claimed = await phase('claim', async () => {
    const out: string[][] = [];
    for (;;) {
      const [, , , flat] = await runScript<[unknown, unknown, unknown, Array<Buffer | number | null>]>(client, 'periodic-claim', [keys.nextrun],
        [keys.prefix, 2500, batch, 6000, now, 100, -1], true);
      if (flat.length === 0) break;
      for (let i = 0; i < flat.length; i += CLAIM_WIDTH) out.push(flat.slice(i, i + CLAIM_WIDTH).map((v) => (Buffer.isBuffer(v) ? v.toString('latin1') : String(v ?? ''))));
      if (out.length >= n) break;
    }
    return out;
  });
  // What the scheduler sends: the plan (one occurrence, the next 10 s later), then the task's fields.
  const recs = claimed.map((c) => {
    const fields = [...c.slice(9, CLAIM_WIDTH - 1), c[8], c[CLAIM_WIDTH - 1]].map((v) => Buffer.from(v, 'latin1'));
    return encodeRecord([c[0], c[1], '', String(Number(c[2]) + 10_000), '10000', '0', '', '', c[2], ...fields.slice(8), ...fields.slice(0, 8)]);
  });
  await phase('stage', async () => {
    for (let i = 0; i < recs.length; i += batch) {
      await runScript(client, 'periodic-stage', [keys.nextrun], [keys.prefix, ...recs.slice(i, i + batch)]);
    }
  });
  await phase('release', async () => {
    for (;;) {
      const [, submitted, skipped] = await runScript<[string, number, number]>(client, 'periodic-release', [keys.staged],
        [keys.prefix, 10_000, first + 1, batch, 1000, 15_000]);
      if (submitted + skipped === 0) break;
    }
  });
}
const jobs = Number(await admin.hget(`${keys.prefix}counts`, 'waiting'));
console.log(`jobs waiting: ${jobs} (expected ${n * rounds})`);
await tasks.close();
client.disconnect();
await lab.close();

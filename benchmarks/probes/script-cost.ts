/**
 * Redis CPU per job of each hot-path script on its own (submit, take, start, finish), read from
 * INFO commandstats around each phase. For tuning the Lua; it does not run handlers.
 * Usage: npx tsx benchmarks/probes/script-cost.ts [--jobs 20000] [--groups 1000] [--batch 25]
 */
import { Redis } from 'ioredis';
import { Queue } from '../../src/index.js';
import { QueueStore } from '../../src/redis/queue-store.js';
import { arg, finishAll, labRedis, scriptUsec, submitSpread, takeAll } from './lab.js';

const jobs = arg('jobs', 20_000);
const groups = arg('groups', 1000);
const batch = arg('batch', 25);
const lab = await labRedis();
const { url, admin } = lab;
const client = new Redis(url);
const store = new QueueStore(client, 'cost', { maxEvents: 10_000 });

async function phase(name: string, body: () => Promise<void>): Promise<void> {
  const before = await scriptUsec(admin);
  const t0 = performance.now();
  await body();
  const ms = performance.now() - t0;
  const us = (await scriptUsec(admin)) - before;
  console.log(
    `${name.padEnd(8)} ${(us / jobs).toFixed(2).padStart(7)} µs Redis per job   (${(jobs / (ms / 1000)).toFixed(0)} jobs/s)`,
  );
}

const q = new Queue('cost', { connection: url });
await phase('submit', () => submitSpread(q, jobs, groups));
let taken: Array<[string, string]> = [];
await phase('take', async () => {
  taken = await takeAll(store, jobs, batch);
});
await phase('start', async () => {
  for (let i = 0; i < taken.length; i += batch) {
    await store.start(
      60_000,
      taken.slice(i, i + batch).map(([id, seq]) => ({ id, takeSeq: Number(seq) })),
    );
  }
});
await phase('finish', () => finishAll(store, taken, batch, 's'));
await q.close();
client.disconnect();
await lab.close();

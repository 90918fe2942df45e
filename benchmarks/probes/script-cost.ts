/**
 * Redis CPU per job of each hot-path script on its own (submit, take, start, finish), read from
 * INFO commandstats around each phase. For tuning the Lua; it does not run handlers.
 * Usage: npx tsx benchmarks/probes/script-cost.ts [--jobs 20000] [--groups 1000] [--batch 25]
 */
import { Redis } from 'ioredis';
import { Queue } from '../../src/index.js';
import { arg, finishAll, labRedis, scriptUsec, submitSpread, takeAll } from './lab.js';
import { runScript } from '../../src/redis/scripts.js';
import { queueKeys } from '../../src/redis/keys.js';

const jobs = arg('jobs', 20_000);
const groups = arg('groups', 1000);
const batch = arg('batch', 25);
const lab = await labRedis();
const { url, admin } = lab;
const client = new Redis(url);
const keys = queueKeys('cost');

async function phase(name: string, body: () => Promise<void>): Promise<void> {
  const before = await scriptUsec(admin);
  const t0 = performance.now();
  await body();
  const ms = performance.now() - t0;
  const us = (await scriptUsec(admin)) - before;
  console.log(`${name.padEnd(8)} ${(us / jobs).toFixed(2).padStart(7)} µs Redis per job   (${(jobs / (ms / 1000)).toFixed(0)} jobs/s)`);
}

const q = new Queue('cost', { connection: url });
await phase('submit', () => submitSpread(q, jobs, groups));
let taken: Array<[string, string]> = [];
await phase('take', async () => {
  taken = await takeAll(client, keys, jobs, batch);
});
await phase('start', async () => {
  for (let i = 0; i < taken.length; i += batch) {
    await runScript(client, 'start', [keys.leases], [keys.prefix, 10_000, 60_000, ...taken.slice(i, i + batch).flat()]);
  }
});
await phase('finish', () => finishAll(client, keys, taken, batch, 's'));
await q.close();
client.disconnect();
await lab.close();

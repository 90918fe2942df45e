/**
 * Redis CPU per job of each hot-path script on its own (submit, take, start, finish), read from
 * INFO commandstats around each phase. For tuning the Lua; it does not run handlers.
 * Usage: node dist/benchmarks/script-cost.js [--jobs 20000] [--groups 1000] [--batch 25]
 */
import { Redis } from 'ioredis';
import { Queue } from '../src/index.js';
import { arg, labRedis, scriptUsec } from './lab.js';
import { runScript } from '../src/redis/scripts.js';
import { queueKeys } from '../src/redis/keys.js';
import { TAKEN_WIDTH } from '../src/queue/job.js';

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
const payload = 'x'.repeat(100);
await phase('submit', async () => {
  for (let i = 0; i < jobs; i += 1000) {
    await q.submitBulk(Array.from({ length: Math.min(1000, jobs - i) }, (_, k) => ({ task: 'noop', group: `g${(i + k) % groups}`, args: payload })));
  }
});
const taken: Array<[string, string]> = [];
await phase('take', async () => {
  while (taken.length < jobs) {
    const [list] = await runScript<[string[], number]>(client, 'take', [keys.ready], [keys.prefix, 10_000, 'w1', batch, 2, 1, 60_000]);
    if (list.length === 0) throw new Error('take found nothing');
    for (let i = 0; i < list.length; i += TAKEN_WIDTH) taken.push([list[i], list[i + 1]]);
  }
});
await phase('start', async () => {
  for (let i = 0; i < taken.length; i += batch) {
    await runScript(client, 'start', [keys.active], [keys.prefix, 10_000, ...taken.slice(i, i + batch).flat()]);
  }
});
await phase('finish', async () => {
  for (let i = 0; i < taken.length; i += batch) {
    const args = taken.slice(i, i + batch).flatMap(([id, seq]) => [id, seq, 's', '']);
    await runScript(client, 'finish', [keys.active], [keys.prefix, 10_000, 1000, 1000, 1000, 0, '', 2, 1, 60_000, ...args]);
  }
});
await q.close();
client.disconnect();
await lab.close();

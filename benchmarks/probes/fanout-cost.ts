/**
 * What one large fan-out (ctx.fanOut) costs, step by step: checking and packing the children in
 * the executor, staging them, the finish call that commits them with the parent's success, and
 * the fanout.lua calls that submit them (the longest one is what a fan-out holds Redis for at once).
 * Usage: npx tsx benchmarks/probes/fanout-cost.ts [--children 100000]
 */
import { Redis } from 'ioredis';
import { Queue } from '../../src/index.js';
import { packChildren } from '../../src/queue/fanout.js';
import { addRun, QueueStore } from '../../src/redis/queue-store.js';
import { stageChildren } from '../../src/redis/side-writes.js';
import { OUTCOME } from '../../src/redis/wire.js';
import { arg, labRedis, scriptStats } from './lab.js';

const children = arg('children', 100_000);
const lab = await labRedis();
const client = new Redis(lab.url);
const store = new QueueStore(client, 'fanout', { maxEvents: 10_000 });
const q = new Queue('fanout', { connection: lab.url });
const settings = { workerId: 'probe', countingScheme: [2, 1] as const, leaseMs: 60_000, retryDelay: 1000 };

await q.submit({ task: 'parent', group: 'g' });
const [job] = (await store.take(1, settings)).jobs;
const items = Array.from({ length: children }, (_, i) => ({ account: `acct-${i}`, month: '2026-10' }));

let t0 = performance.now();
const packed = await packChildren(job, items, { task: 'child' }, 512 * 1024);
const packMs = performance.now() - t0;
const bytes = packed.chunks.reduce((n, c) => n + c.length, 0);

t0 = performance.now();
await stageChildren(client, store.keys, job.id, String(job.takeSeq), packed.total, packed.chunks);
const stageMs = performance.now() - t0;

const runs: Parameters<typeof addRun>[0] = [];
addRun(runs, job.id, String(job.takeSeq), OUTCOME.fannedOut, true, '');
let before = await scriptStats(lab.admin);
await store.finish(settings, { succeeded: -1, failed: -1 }, 0, runs);
let after = await scriptStats(lab.admin);
const commitUs = after.usec - before.usec;

const perCall: number[] = [];
for (;;) {
  before = await scriptStats(lab.admin);
  const r = await store.fanout(job.id);
  after = await scriptStats(lab.admin);
  perCall.push(after.usec - before.usec);
  if (r.left === 0) break;
}
const total = perCall.reduce((a, b) => a + b, 0);
console.log(`${children} children, ${packed.chunks.length} chunks, ${(bytes / 1e6).toFixed(1)} MB staged`);
console.log(`executor: check and pack ${packMs.toFixed(0)} ms, stage ${stageMs.toFixed(0)} ms`);
console.log(`finish call that commits them: ${commitUs} µs of Redis`);
console.log(
  `fanout.lua: ${perCall.length} calls, ${(total / 1000).toFixed(0)} ms of Redis in all (${(total / children).toFixed(2)} µs a child), longest call ${Math.max(...perCall)} µs`,
);
console.log(`waiting jobs now: ${(await q.counts()).waiting}`);

await q.close();
client.disconnect();
await lab.close();

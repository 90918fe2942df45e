/**
 * How long one batch of the operator's job actions holds Redis: the scripts delete, promote,
 * cancel and retry, each given ACTION_BATCH jobs by id (the batches a walk over a filter sends),
 * over jobs spread over groups. Per call: Redis CPU (INFO cpu around it, an upper bound) and the
 * time in Redis (INFO commandstats around it).
 * Usage: npx tsx benchmarks/probes/job-actions-cost.ts [--jobs 20000] [--groups 200]
 */
import { Queue } from '../../src/index.js';
import { ACTION_BATCH } from '../../src/queue/job-actions.js';
import { type JobAction, JobAdminStore } from '../../src/redis/job-admin-store.js';
import { QueueStore } from '../../src/redis/queue-store.js';
import { arg, labRedis, PROBE_ARGS, scriptStats, serverCpuUs } from './lab.js';

const jobs = arg('jobs', 20_000);
const groups = arg('groups', 200);
const lab = await labRedis();
const { url, admin } = lab;
const q = new Queue('actions', { connection: url });
const store = new JobAdminStore(new QueueStore(q.client, 'actions', { maxEvents: 10_000 }));

/** Acts on `ids` a batch at a time, in take order, and prints the cost per call. */
async function phase(name: string, action: JobAction, ids: readonly string[], state: 'waiting' | 'delayed' | 'cancelled') {
  const cpu: number[] = [];
  const wall: number[] = [];
  let done = 0;
  for (let i = 0; i < ids.length; i += ACTION_BATCH) {
    const [cpu0, usec0] = [await serverCpuUs(admin), (await scriptStats(admin)).usec];
    const out = await store.act(action, ids.slice(i, i + ACTION_BATCH), state);
    wall.push((await scriptStats(admin)).usec - usec0);
    cpu.push((await serverCpuUs(admin)) - cpu0);
    done += out.filter((o) => o === 'done').length;
  }
  const ms = (xs: number[], p: number) =>
    ([...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))] / 1000).toFixed(2);
  console.log(
    `${name.padEnd(22)} ${String(done).padStart(6)} jobs ${String(cpu.length).padStart(4)} calls | per call, ms: ` +
      `CPU p50 ${ms(cpu, 0.5)} max ${ms(cpu, 1)}; time in Redis p50 ${ms(wall, 0.5)} max ${ms(wall, 1)}`,
  );
}

// Delayed jobs, spread over the groups, in submit order (the order a walk visits them in).
const ids: string[] = [];
for (let i = 0; i < jobs; i += 1000) {
  const bulk = await q.submitBulk(
    Array.from({ length: Math.min(1000, jobs - i) }, (_, k) => ({
      task: 'probe',
      group: `g${(i + k) % groups}`,
      args: PROBE_ARGS,
      delay: 3_600_000,
    })),
  );
  ids.push(...bulk.map((j) => j.id));
}
console.log(`${jobs} delayed jobs over ${groups} groups, batches of ${ACTION_BATCH}`);
await phase('promote (delayed)', 'promote', ids, 'delayed');
// (each batch's jobs went in front of the batches before: the last batch is taken first, each in order)
const takeOrder: string[] = [];
for (let i = Math.floor((ids.length - 1) / ACTION_BATCH) * ACTION_BATCH; i >= 0; i -= ACTION_BATCH) {
  takeOrder.push(...ids.slice(i, i + ACTION_BATCH));
}
await phase('cancel (waiting)', 'cancel', takeOrder, 'waiting');
await phase('retry (cancelled)', 'retry', ids, 'cancelled');
await phase('delete (waiting)', 'delete', ids, 'waiting');
await q.close();
await lab.close();

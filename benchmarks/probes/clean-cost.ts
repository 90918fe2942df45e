/**
 * How long one script call of Queue.clean and Queue.retryFailed holds Redis, over a large failed
 * set: the server's own time per call (INFO commandstats around each), with the steps those
 * methods make (their batch sizes), per phase:
 * a clean of one group (every member visited, few removed), a retry of every failed job, and a
 * clean of every failed job. Each failed job has 100 bytes of args, a 500-byte error and three log lines.
 * Usage: npx tsx benchmarks/probes/clean-cost.ts [--jobs 100000] [--groups 1000]
 */
import { Queue } from '../../src/index.js';
import { CLEAN_BATCH, RETRY_BATCH } from '../../src/queue/queue.js';
import { addRun, type FinishedCursor, QueueStore, type WalkStep } from '../../src/redis/queue-store.js';
import type { StringValue } from '../../src/redis/string-array.js';
import { OUTCOME } from '../../src/redis/wire.js';
import { arg, labRedis, scriptStats, serverCpuUs, submitSpread, takeAll } from './lab.js';

const jobs = arg('jobs', 100_000);
const groups = arg('groups', 1000);
const lab = await labRedis();
const { url, admin } = lab;
const q = new Queue('clean', { connection: url });
const store = new QueueStore(q.client, 'clean', { maxEvents: 10_000 });
const ERROR = `Error: boom\n${'    at handler (file:///app/tasks.js:10:11)\n'.repeat(11)}`.slice(0, 500);

/** Takes every waiting job and fails it for good (no retries, every failed job kept), with three log lines each. */
async function failAll(): Promise<void> {
  const taken = await takeAll(store, (await q.counts()).waiting, 1000);
  for (let i = 0; i < taken.length; i += 1000) {
    const runs: StringValue[] = [];
    const pipe = admin.pipeline();
    for (const [id, seq] of taken.slice(i, i + 1000)) {
      addRun(runs, id, seq, OUTCOME.permanent, true, ERROR);
      pipe.rpush(q.keys.logs(id), 'a log line of the run', 'another log line', 'the last log line');
    }
    await pipe.exec();
    await store.finish(
      { workerId: '', countingScheme: [2, 1], leaseMs: 60_000, retryDelay: 1000 },
      { succeeded: -1, failed: -1 },
      0,
      runs,
    );
  }
}

/**
 * Runs a walk step by step from its first step, and prints per call its Redis CPU (INFO cpu
 * around it, the INFO call's own included: an upper bound that a busy machine does not inflate)
 * and its time in Redis (INFO commandstats around it: on a busy machine it counts the time Redis
 * waited for a core too).
 */
async function phase(name: string, step: (cursor?: FinishedCursor) => Promise<WalkStep>): Promise<void> {
  const cpu: number[] = [];
  const wall: number[] = [];
  let n = 0;
  let cursor: FinishedCursor | undefined;
  do {
    const [cpu0, usec0] = [await serverCpuUs(admin), (await scriptStats(admin)).usec];
    const s = await step(cursor);
    wall.push((await scriptStats(admin)).usec - usec0);
    cpu.push((await serverCpuUs(admin)) - cpu0);
    n += s.count;
    cursor = s.next;
  } while (cursor);
  const ms = (xs: number[], p: number) =>
    ([...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))] / 1000).toFixed(2);
  console.log(
    `${name.padEnd(24)} ${String(n).padStart(6)} jobs ${String(cpu.length).padStart(4)} calls | per call, ms: ` +
      `CPU p50 ${ms(cpu, 0.5)} p99 ${ms(cpu, 0.99)} max ${ms(cpu, 1)}; time in Redis p50 ${ms(wall, 0.5)} p99 ${ms(wall, 0.99)} max ${ms(wall, 1)}`,
  );
}

await submitSpread(q, jobs, groups);
await failAll();
console.log(`${jobs} failed jobs over ${groups} groups`);
const clean = { state: 'failed', ageMs: 0, most: CLEAN_BATCH, batch: CLEAN_BATCH } as const;
await phase('clean one group', (cursor) => store.clean({ ...clean, group: 'g1' }, cursor));
await phase('retryFailed, every job', (cursor) => store.retryFailed({ batch: RETRY_BATCH }, cursor));
await failAll();
await phase('clean, every failed job', (cursor) => store.clean(clean, cursor));
await q.close();
await lab.close();

/**
 * What the queue's history costs the finish calls, counted by callgrind in one server run: the
 * same finish phase (--jobs runs over --groups groups, --batch per call, starts folded in) with no
 * history counts and with those an executor sends for a batch of one task whose runs fall in
 * --fields run-time buckets (one HINCRBY per field and hash, one EXPIRE per hash, a call).
 * Each phase starts from an empty server (FLUSHALL; the library stays), the two kinds alternate
 * (without, with, without, with) and the server's cron runs at 1 Hz, so that what the phases
 * count differs by the calls' work only.
 *
 * Usage: npx tsx benchmarks/probes/history-cost.ts [--jobs 5000] [--groups 1000] [--batch 25] [--fields 2]
 */
import { Queue } from '../../src/index.js';
import { historyFields } from '../../src/redis/history.js';
import { QueueStore } from '../../src/redis/queue-store.js';
import { startCallgrindServer } from './callgrind.js';
import { arg, finishAll, submitSpread, takeAll } from './lab.js';

const jobs = arg('jobs', 5000);
const groups = arg('groups', 1000);
const batch = arg('batch', 25);
const fields = arg('fields', 2);

const cg = await startCallgrindServer('redis-server');
const { url, client, dump, counted } = cg;
await client.config('SET', 'hz', '1');

/** The finish phase's instructions per job of queue `name`, each call with `history`. */
async function finishPhase(name: string, history: (runs: number) => ReturnType<typeof historyFields>): Promise<number> {
  await client.flushall();
  const q = new Queue(name, { connection: url });
  const store = new QueueStore(client, name, { maxEvents: 10_000 });
  await store.ready();
  await submitSpread(q, jobs, groups);
  const taken = await takeAll(store, jobs, batch);
  dump(`${name}-setup`);
  await finishAll(store, taken, batch, '+s', history);
  dump(name);
  await q.close();
  return counted(name) / jobs;
}

// (a first phase warms the library and the server up; it is not reported)
await finishPhase('warm', () => []);
// A batch's runs spread over `fields` buckets of one task (1 ms, 2 ms, 4 ms...).
const counts = (n: number) =>
  historyFields(Array.from({ length: n }, (_, i) => ({ task: 'noop', group: 'g', ms: 2 ** (i % fields), failed: false })));
const phases: number[] = [];
for (const name of ['without', 'with', 'without2', 'with2'])
  phases.push(await finishPhase(name, name.startsWith('with') && !name.startsWith('without') ? counts : () => []));
const without = (phases[0] + phases[2]) / 2;
const withHistory = (phases[1] + phases[3]) / 2;
console.log(`phases (without, with, without, with): ${phases.map((p) => p.toFixed(0)).join(', ')}`);
console.log(`finish, ${batch} runs a call: ${without.toFixed(0)} instructions per job without history counts`);
console.log(
  `with ${fields} history fields a call: ${withHistory.toFixed(0)} (+${(withHistory - without).toFixed(0)} a job, ` +
    `+${((withHistory - without) * batch).toFixed(0)} a call, +${((100 * (withHistory - without)) / without).toFixed(2)} %)`,
);
await cg.stop(false);
process.exit(0);

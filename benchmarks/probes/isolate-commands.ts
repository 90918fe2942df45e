/**
 * Redis commands per job of a drain with the handler in-process, in a thread pool and in a
 * process pool (INFO commandstats, commands inside scripts included): counts, not timings, so it
 * may run on a busy machine. A handler that returns at once in-process has its start sent with its
 * finish in one call; one that takes a round trip (any async handler, or an isolated one) has its
 * start sent apart, so the reference of the isolated runs is an in-process handler that waits a
 * millisecond (`wait`; `now`: one that returns at once).
 * Usage: npx tsx benchmarks/probes/isolate-commands.ts [--jobs 300] [--concurrency 1]
 */
import { isolated, Queue, Worker } from '../../src/index.js';
import { arg, labRedis } from './lab.js';

const jobs = arg('jobs', 300);
const concurrency = arg('concurrency', 1);
const lab = await labRedis();
const noop = new URL('../../src/bench/isolated-noop.ts', import.meta.url);
const commands = async () => {
  const stats = await lab.admin.info('commandstats');
  let n = 0;
  for (const m of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) if (m[1] !== 'info' && m[1] !== 'config') n += Number(m[2]);
  return n;
};
for (const where of ['now', 'wait', 'thread', 'process'] as const) {
  const name = `cmds-${where}`;
  const q = new Queue(name, { connection: lab.url });
  await q.submitBulk(Array.from({ length: jobs }, (_, i) => ({ task: 'noop', group: `g${i % 10}` })));
  const handler =
    where === 'now'
      ? () => undefined
      : where === 'wait'
        ? () => new Promise((r) => setTimeout(r, 1))
        : isolated(noop, { in: where, min: concurrency });
  const w = new Worker(name, { noop: handler }, { connection: lab.url, concurrency, autorun: false });
  let done = 0;
  w.on('completed', () => done++);
  await lab.admin.config('RESETSTAT');
  const before = await commands();
  await w.run();
  while (done < jobs) await new Promise((r) => setTimeout(r, 20));
  const after = await commands();
  await w.close();
  await q.close();
  console.log(
    `${where ?? 'in-process'}: ${((after - before) / jobs).toFixed(2)} commands a job (${jobs} jobs, concurrency ${concurrency})`,
  );
}
await lab.close();

/**
 * What a flow of 1 parent and N children costs Redis beside a fan-out of N children, in
 * instructions (callgrind: load-independent). Per child: the submit (fan-out: staging, the finish
 * that commits, the fanout.lua calls; flow: staging, flow.lua, the fanout.lua calls) and the
 * children's runs (take and finish, the runs flagged as children; the flow's last finish also
 * releases the parent). And the most instructions one submitting call took (what a call holds
 * Redis for at once: each pumps one chunk of at most 1,000 jobs).
 * Usage: npx tsx benchmarks/probes/flow-cost.ts [--children 5000] [--batch 25] [--redis-server PATH]
 */
import { Queue } from '../../src/index.js';
import { packChildren } from '../../src/queue/fanout.js';
import { packFlowTree } from '../../src/queue/flow.js';
import { newJobId } from '../../src/queue/submitter.js';
import { addRun, QueueStore } from '../../src/redis/queue-store.js';
import { stageChildren } from '../../src/redis/side-writes.js';
import { OUTCOME } from '../../src/redis/wire.js';
import { startCallgrindServer } from './callgrind.js';
import { arg, PROBE_ARGS, takeAll } from './lab.js';

const children = arg('children', 5000);
const batch = arg('batch', 25);
const serverAt = process.argv.indexOf('--redis-server');
const cg = await startCallgrindServer(serverAt > 0 ? process.argv[serverAt + 1] : 'redis-server');
const { url, client, dump, counted } = cg;
const store = new QueueStore(client, 'flow', { maxEvents: 10_000 });
const q = new Queue('flow', { connection: url });
const settings = { workerId: 'w1', countingScheme: [2, 1] as const, leaseMs: 60_000, retryDelay: 1000 };
await q.submit({ task: 'warm', group: 'warm' });
await client.flushall();
await store.ready();
dump('setup');
const items = Array.from({ length: children }, () => PROBE_ARGS);

/** Finishes the taken children `batch` per call, flagged as children (their parent counts them). */
async function finishChildren(taken: Array<[string, string]>): Promise<void> {
  for (let i = 0; i < taken.length; i += batch) {
    const runs: Parameters<typeof addRun>[0] = [];
    const part = taken.slice(i, i + batch);
    for (const [id, seq] of part) addRun(runs, id, seq, OUTCOME.success, true, '');
    await store.finish({ ...settings, workerId: '' }, { succeeded: -1, failed: -1 }, 0, runs, part.length);
  }
}

/** Pumps the committed children of `parent` one fanout.lua call a dump; answers all calls' instructions and the largest call's. */
async function pump(parent: string, phase: string): Promise<{ sum: number; most: number }> {
  let most = 0;
  let sum = 0;
  for (let k = 0; ; k++) {
    const r = await store.fanout(parent);
    dump(`${phase}-${k}`);
    const n = counted(`${phase}-${k}`);
    most = Math.max(most, n);
    sum += n;
    if (r.left === 0) return { sum, most };
  }
}

// Fan-out: a parent taken and run, its children staged, committed by its finish, pumped.
await q.submit({ task: 'parent', group: 'g' });
const [job] = (await store.take(1, settings)).jobs;
dump('fan-parent');
const packed = await packChildren(job, items, { task: 'child' }, 512 * 1024);
await stageChildren(client, store.keys, job.id, String(job.takeSeq), packed.total, packed.chunks);
const runs: Parameters<typeof addRun>[0] = [];
addRun(runs, job.id, String(job.takeSeq), OUTCOME.fannedOut, true, '');
await store.finish(settings, { succeeded: -1, failed: -1 }, 0, runs);
dump('fan-commit');
const fanPump = await pump(job.id, 'fan-pump');
const fanSubmit = counted('fan-commit') + fanPump.sum;
await finishChildren(await takeAll(store, children, batch));
dump('fan-runs');

// Flow: the same children under a parent that waits for them.
// (as Queue.submitFlow does it, with a dump a call)
const flow = packFlowTree(
  { task: 'parent', group: 'g', children: items.map((a) => ({ task: 'child', args: a })) },
  512 * 1024,
  newJobId,
);
await store.flow(flow.rootRecord, flow.root.id, flow.total, flow.chunks);
dump('flow-commit');
const flowPump = await pump(flow.root.id, 'flow-pump');
const flowSubmit = counted('flow-commit') + flowPump.sum;
const flowRuns = await takeAll(store, children, batch);
await finishChildren(flowRuns);
dump('flow-runs');
const released = (await q.getJob(flow.root.id))!.state;

const per = (n: number) => Math.round(n / children);
console.log(`${children} children; take and finish batches of ${batch}`);
console.log(
  `fan-out: submit ${per(fanSubmit)} instructions a child (commit and ${packed.chunks.length} fanout.lua calls), runs ${per(counted('fan-runs'))} a child; largest submitting call ${fanPump.most}`,
);
console.log(
  `flow:    submit ${per(flowSubmit)} instructions a child (flow.lua and ${flow.chunks.length} fanout.lua calls), runs ${per(counted('flow-runs'))} a child (the parent ${released} after them); largest submitting call ${flowPump.most}`,
);
await q.close();
await cg.stop(false);

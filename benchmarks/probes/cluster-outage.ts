/**
 * The healthy shards' rate through another primary's outage: a 6-shard queue placed as the
 * `cluster` benchmark places it (shard i on primary i mod 3) on a local cluster of three primaries
 * with a replica each; one executor (concurrency 100, no-op jobs) drains a backlog over 1,000
 * groups while a producer submits 20 jobs every 50 ms to the healthy shards' groups. After
 * `--before` ms, primary 0 is killed (kill -9); its replica takes over (cluster-node-timeout
 * 1 s), then it comes back as a replica. Prints, per 500 ms, the starts of the healthy shards'
 * jobs and the producer's refused submits, then the healthy shards' mean rate before the kill and
 * from the kill to the promotion, as a share. Compare within one run: the machine may be shared.
 *
 * Usage: npx tsx benchmarks/probes/cluster-outage.ts [--jobs 200000] [--before 4000] [--after 4000]
 *          [--full-coverage 1]   (cluster-require-full-coverage yes (1, Redis's default) or no (0))
 */
import { Cluster, Redis } from 'ioredis';
import { Queue, Worker } from '../../src/index.js';
import { shardOfGroup } from '../../src/redis/shards.js';
import { startCluster } from '../../test/helpers/cluster.js';
import { place } from '../workloads/cluster.js';
import { arg } from './lab.js';

const SHARDS = 6;
const GROUPS = 1000;
const jobs = arg('jobs', 200_000);
const beforeMs = arg('before', 4000);
const afterMs = arg('after', 4000);
const fullCoverage = arg('full-coverage', 1) === 1;

const cluster = await startCluster(3, 1);
const admins = cluster.nodes.map((n) => new Redis(n.port, '127.0.0.1'));
for (const a of admins) await a.config('SET', 'cluster-require-full-coverage', fullCoverage ? 'yes' : 'no');
const roles = await Promise.all(admins.map((a) => a.call('ROLE') as Promise<[string]>));
const primaryNodes = cluster.nodes.filter((_, i) => roles[i][0] === 'master');
const nodes = primaryNodes.map((n) => ({ host: '127.0.0.1', port: n.port }));
const placement = await place(
  nodes,
  primaryNodes.map((n) => admins[cluster.nodes.indexOf(n)]),
  'outage',
  SHARDS,
);
const victim = primaryNodes[0];
const struck = new Set(placement.slice(0, SHARDS).flatMap((p, shard) => (p === 0 ? [shard] : [])));
const healthy = (group: string) => !struck.has(shardOfGroup(group, SHARDS));
const connection = () => new Cluster(cluster.startupNodes).on('error', () => {});

const q = new Queue('outage', { connection: connection(), shards: SHARDS });
for (let i = 0; i < jobs; i += 10_000) {
  await q.submitBulk(
    Array.from({ length: Math.min(10_000, jobs - i) }, (_, k) => ({ task: 'noop', group: `g${(i + k) % GROUPS}` })),
  );
}
const healthyGroups = Array.from({ length: GROUPS }, (_, g) => `g${g}`).filter(healthy);

const t0 = performance.now();
const bucket = () => Math.floor((performance.now() - t0) / 500);
const starts: number[] = [];
const refused: number[] = [];
const w = new Worker(
  'outage',
  {
    noop: ({ job }) => {
      if (healthy(job.group)) starts[bucket()] = (starts[bucket()] ?? 0) + 1;
    },
  },
  { connection: connection(), shards: SHARDS, concurrency: 100 },
);
w.on('error', () => {});
let producing = true;
const producer = (async () => {
  for (let k = 0; producing; k++) {
    const batch = Array.from({ length: 20 }, (_, i) => ({
      task: 'noop',
      group: healthyGroups[(k * 20 + i) % healthyGroups.length],
    }));
    for (const spec of batch) {
      q.submit(spec).catch(() => {
        refused[bucket()] = (refused[bucket()] ?? 0) + 1;
      });
    }
    await new Promise((r) => setTimeout(r, 50));
  }
})();

await new Promise((r) => setTimeout(r, beforeMs));
const killedAt = bucket();
await victim.kill();
await cluster.waitOk(60_000);
const promotedAt = bucket();
await new Promise((r) => setTimeout(r, afterMs));
producing = false;
await producer;
const end = bucket();
await w.close({ timeout: 1000 });
await q.close();
for (const a of admins) a.disconnect();
await cluster.destroy();

const lines = ['t (s)  healthy starts  refused submits'];
for (let b = 0; b < end; b++) {
  const mark = b === killedAt ? '  <- kill' : b === promotedAt ? '  <- promoted' : '';
  lines.push(
    `${(b / 2).toFixed(1).padStart(5)}  ${String(starts[b] ?? 0).padStart(14)}  ${String(refused[b] ?? 0).padStart(15)}${mark}`,
  );
}
console.log(lines.join('\n'));
const mean = (from: number, to: number) => {
  let n = 0;
  for (let b = from; b < to; b++) n += starts[b] ?? 0;
  return n / Math.max(1, to - from);
};
// (the first second is the executor's warm-up)
const before = mean(2, killedAt);
const during = mean(killedAt, promotedAt);
console.log(
  `full coverage ${fullCoverage ? 'yes' : 'no'}; healthy shards ${[...Array(SHARDS).keys()].filter((s) => !struck.has(s)).join(',')}; ` +
    `per 500 ms: before ${before.toFixed(0)}, kill to promotion ${during.toFixed(0)} (${((100 * during) / before).toFixed(0)} %); ` +
    `lowest during ${Math.min(...Array.from({ length: promotedAt - killedAt }, (_, i) => starts[killedAt + i] ?? 0))}; ` +
    `refused submits ${refused.reduce((a, b) => a + (b ?? 0), 0)}`,
);

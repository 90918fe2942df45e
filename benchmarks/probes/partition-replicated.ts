/**
 * A real network partition under durability `replicated` (test/fixtures/partition.ts): the
 * primary, an executor and the producer on one side, the replica, three sentinels and a second
 * executor on the other; the partition lasts `--partition` ms, long enough for the sentinels to
 * promote the replica. Prints each run's counts as JSON: completions reported twice, reported
 * but not `success` afterwards, or followed by another run, and acknowledged submits missing.
 * Needs root and `ip netns` (it creates and removes its own namespaces, veth pair and rules).
 *
 * Usage: sudo node --import tsx benchmarks/probes/partition-replicated.ts [--runs 1] [--jobs 800]
 *          [--per-second 40] [--run-ms 200] [--partition 15000]
 */
import { partitionUnavailable, runPartition } from '../../test/fixtures/partition.js';
import { arg } from './lab.js';

const why = partitionUnavailable();
if (why) {
  console.error(`partition-replicated: ${why}`);
  process.exit(2);
}
const runs = arg('runs', 1);
for (let i = 0; i < runs; i++) {
  const counts = await runPartition({
    jobs: arg('jobs', 800),
    perSecond: arg('per-second', 40),
    runMs: arg('run-ms', 200),
    partitionMs: arg('partition', 15_000),
    log: (line) => console.error(`[run ${i + 1}] ${line}`),
  });
  console.log(JSON.stringify(counts));
}
process.exit(0);

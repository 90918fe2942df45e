/** The shard a taken job came from, kept on the job object for its start, finish and side writes. */
import type { Job } from '../queue/job.js';

const SHARD = Symbol('shard');
type ShardedJob = Job & { [SHARD]?: number };

/** Notes that `job` was taken from shard `shard` (shard 0, the default, is not written). */
export function setShard(job: Job, shard: number): void {
  if (shard > 0) (job as ShardedJob)[SHARD] = shard;
}

/** The shard job `job` was taken from. */
export function shardOf(job: Job): number {
  return (job as ShardedJob)[SHARD] ?? 0;
}

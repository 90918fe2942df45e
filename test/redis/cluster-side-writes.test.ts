/**
 * Side writes (ctx.log) and progress (ctx.progress) of a sharded queue (6 shards) on a Redis
 * Cluster of three primaries: each shard's writes go in a pipeline of their own (a Cluster
 * refuses a pipeline across nodes' slots), every line is kept, and the executor stays up.
 */
import { describe, expect, it } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { shardOfGroup, shardTag } from '../../src/redis/shards.js';
import { fileCluster } from '../helpers/file-cluster.js';

const SHARDS = 6;
const JOBS = 300;

const own = fileCluster(3, 0);

describe('side writes of a sharded queue on a Redis Cluster', () => {
  it('keeps every log line and progress of runs spread over every shard and primary, the executor up', async () => {
    const name = 'side-writes';
    const primaries = new Set(
      await Promise.all(Array.from({ length: SHARDS }, (_, i) => own.cluster.primaryOf(`${shardTag(name, i, SHARDS)}:x`))),
    );
    expect(primaries.size).toBe(3);
    const q = new Queue(name, { connection: own.connect(), shards: SHARDS });
    const w = new Worker(
      name,
      {
        talk: ({ job, log, progress }) => {
          log('first line of', job.id);
          progress(50);
          log('second line of', job.id);
          progress(100);
        },
      },
      { connection: own.connect(), shards: SHARDS, concurrency: 20 },
    );
    const errors: Error[] = [];
    w.on('error', (e) => errors.push(e));
    const completed = new Set<string>();
    const done = new Promise<void>((resolve) =>
      w.on('completed', (job) => {
        completed.add(job.id);
        if (completed.size === JOBS) resolve();
      }),
    );
    try {
      const jobs = await q.submitBulk(Array.from({ length: JOBS }, (_, i) => ({ task: 'talk', group: `tenant-${i % 60}` })));
      expect(new Set(jobs.map((j) => shardOfGroup(j.group, SHARDS))).size).toBe(SHARDS);
      await done;
      // the executor's side writes are all sent once it closes (its flush drains them)
      await w.close();
      const logs = await Promise.all(jobs.map((j) => q.jobLogs(j.id)));
      const missing = jobs.filter((j, i) => logs[i].length !== 2 || !logs[i][1].endsWith(`second line of ${j.id}`));
      expect(missing.map((j) => j.id)).toEqual([]);
      const read = await Promise.all(jobs.map((j) => q.getJob(j.id)));
      expect(read.filter((j) => j?.state !== 'success' || j.progress !== 100)).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await w.close();
      await q.close();
    }
  });
});

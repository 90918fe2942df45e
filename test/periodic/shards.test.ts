import { afterEach, describe, expect, it } from 'vitest';
import { type Job, PeriodicTasks, Queue, Scheduler, ShardCountError, Worker } from '../../src/index.js';
import { shardOfGroup } from '../../src/redis/shards.js';
import { closeAll, eventually, rawClient, redisUrl, streamEvents, track, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);

describe('periodic tasks of a sharded queue', () => {
  it('a scheduler or task store configured with another count than the queue has is refused with ShardCountError, and writes nothing', async () => {
    const name = uniqueQueue('pshards');
    const queue = track(new Queue(name, { connection: redisUrl(), shards: 3 }));
    await queue.submit({ task: 'x', group: 'g' });
    for (const shards of [undefined, 2, 4]) {
      const s = new Scheduler(name, { connection: redisUrl(), shards });
      const err = await s.start().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ShardCountError);
      expect(err).toMatchObject({ found: 3, configured: shards ?? 1 });
      const tasks = track(new PeriodicTasks(name, { connection: redisUrl(), shards }));
      await expect(tasks.upsert({ id: 't', task: 'x', timer: 'every 1s' })).rejects.toBeInstanceOf(ShardCountError);
    }
    const redis = rawClient();
    try {
      expect(await redis.keys(`{rota:${name}}:p:*`)).toEqual([]);
    } finally {
      redis.disconnect();
    }
  });

  it('a scheduler started first records the count it has: a queue opened with another is refused', async () => {
    const name = uniqueQueue('pshards');
    const s = track(new Scheduler(name, { connection: redisUrl(), shards: 3 }));
    await s.start();
    const queue = track(new Queue(name, { connection: redisUrl() }));
    await expect(queue.submit({ task: 'x', group: 'g' })).rejects.toBeInstanceOf(ShardCountError);
  });

  it('the tasks and their staged runs live in the home shard, under the unsharded tag', async () => {
    const name = uniqueQueue('pshards');
    const tasks = track(new PeriodicTasks(name, { connection: redisUrl(), shards: 3 }));
    await tasks.upsert({ id: 't', task: 'x', group: 'g', timer: 'every 1h' });
    const s = track(new Scheduler(name, { connection: redisUrl(), shards: 3 }));
    await s.start();
    await tasks.trigger('t');
    const run = await eventually(async () => (await tasks.runs('t')).find((r) => r.status === 'waiting'));
    const redis = rawClient();
    try {
      expect(await redis.exists(`{rota:${name}}:j:${run.jobId}`)).toBe(1);
      const keys = await redis.keys(`*${name}*`);
      const periodic = keys.filter((k) => k.includes(':p:'));
      expect(periodic.length).toBeGreaterThan(0);
      for (const k of periodic) expect(k.startsWith(`{rota:${name}}:`), k).toBe(true);
      expect(await redis.hget(`{rota:${name}}:meta`, 'shards')).toBe('3');
    } finally {
      redis.disconnect();
    }
  });

  it('fires each occurrence exactly once with two scheduler replicas and an executor taking from every shard', async () => {
    const name = uniqueQueue('pshards');
    const SHARDS = 3;
    const queue = track(new Queue(name, { connection: redisUrl(), shards: SHARDS }));
    const tasks = track(new PeriodicTasks(name, { connection: redisUrl(), shards: SHARDS }));
    // A task in a group of each shard (its runs are in the home shard all the same).
    const groups = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
    const byShard = Array.from({ length: SHARDS }, (_, i) => groups.find((g) => shardOfGroup(g, SHARDS) === i)!);
    for (const [i, group] of byShard.entries()) {
      await tasks.upsert({ id: `t${i}`, task: 'tick', group, timer: 'every 1s', overlap: 'allow' });
    }
    const ran = new Map<string, number>();
    const done: Job[] = [];
    const worker = track(
      new Worker(
        name,
        {
          tick: async ({ job }) => {
            ran.set(job.id, (ran.get(job.id) ?? 0) + 1);
          },
        },
        { connection: redisUrl(), shards: SHARDS, concurrency: 4 },
      ),
    );
    worker.on('completed', (j) => done.push(j));
    await worker.run();
    const replicas = [0, 1].map((i) => track(new Scheduler(name, { connection: redisUrl(), shards: SHARDS, id: `r${i}` })));
    await Promise.all(replicas.map((r) => r.start()));
    // about five occurrences of each task
    await eventually(
      async () => (await Promise.all(byShard.map((_, i) => tasks.runs(`t${i}`)))).every((r) => r.length >= 5),
      20_000,
    );
    for (const i of byShard.keys()) await tasks.disable(`t${i}`);
    for (const r of replicas) await r.close();
    const runs = (await Promise.all(byShard.map((_, i) => tasks.runs(`t${i}`, { limit: 1000 })))).map((r) =>
      r.filter((x) => x.jobId).sort((a, b) => a.occurrence - b.occurrence),
    );
    const all = runs.flat();
    await eventually(async () => done.length >= all.length && true, 20_000);

    const redis = rawClient();
    try {
      for (const [i, taskRuns] of runs.entries()) {
        // every occurrence from the first to the last, once each
        taskRuns.forEach((r, k) => {
          expect(r.jobId).toBe(`t${i}@${r.occurrence}`);
          if (k > 0) expect(r.occurrence - taskRuns[k - 1].occurrence).toBe(1000);
        });
        expect(taskRuns.length).toBeGreaterThanOrEqual(5);
      }
      for (const r of all) {
        expect(ran.get(r.jobId!), r.jobId).toBe(1);
        expect((await queue.getJob(r.jobId!))?.state).toBe('success');
        expect(await redis.exists(`{rota:${name}}:j:${r.jobId}`)).toBe(1);
      }
      expect(ran.size).toBe(all.length);
      // Submitted once each: one `waiting` change per run in the home shard's events.
      const added = (await streamEvents(name)).filter((e) => e.state === 'waiting').map((e) => e.id);
      expect(added.sort()).toEqual(all.map((r) => r.jobId!).sort());
    } finally {
      redis.disconnect();
    }
  }, 60_000);
});

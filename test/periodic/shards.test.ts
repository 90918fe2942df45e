import { afterEach, describe, expect, it } from 'vitest';
import { PeriodicTasks, Queue, Scheduler, ShardCountError } from '../../src/index.js';
import { closeAll, eventually, rawClient, redisUrl, track, uniqueQueue } from '../helpers/setup.js';

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
});

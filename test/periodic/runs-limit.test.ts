/** PeriodicTasks.runs({ limit }) counts runs, not history entries: staged occurrences are read past. */
import { afterEach, describe, expect, it } from 'vitest';
import { PeriodicTasks, Scheduler } from '../../src/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { closeAll, eventually, rawClient, redisUrl, track, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);

describe('run history limit', () => {
  it('gives `limit` runs when the newest history entries are staged occurrences', async () => {
    const name = uniqueQueue('runs-limit');
    const tasks = track(new PeriodicTasks(name, { connection: redisUrl() }));
    await tasks.upsert({ id: 'tick', task: 'tick', timer: 'every 1s', overlap: 'allow' });
    // A long look-ahead stages several occurrences ahead of their time.
    const scheduler = new Scheduler(name, { connection: redisUrl(), lookaheadMs: 5000 });
    await scheduler.start();
    const redis = rawClient();
    try {
      const planned = async (member: string) => (await redis.hget(queueKeys(name).job(member), 'state')) === 'planned';
      // Wait for two runs submitted below two or more staged occurrences...
      await eventually(async () => {
        const newest = await redis.zrevrange(tasks.keys.history('tick'), 0, -1);
        const staged = [];
        for (const m of newest) staged.push(await planned(m));
        return staged[0] && staged[1] && staged.filter((p) => !p).length >= 2;
      }, 20_000);
      // ...then stop the replica as a crash would, so that the history stays as it is.
      scheduler.destroy();
      const all = await tasks.runs('tick', { limit: 100 });
      expect(all.length).toBeGreaterThanOrEqual(2);
      expect(await tasks.runs('tick', { limit: 1 })).toEqual(all.slice(0, 1));
      expect(await tasks.runs('tick', { limit: 2 })).toEqual(all.slice(0, 2));
      await expect(tasks.runs('tick', { limit: 0 })).rejects.toThrow(/limit: must be a whole number/);
    } finally {
      scheduler.destroy();
      redis.disconnect();
    }
  }, 30_000);
});

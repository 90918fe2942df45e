/**
 * Claims that are behind (more tasks due than the replicas plan) are busy, not down: a task
 * claimed more than the misfire grace late while the claims kept running submits its due
 * occurrences, whatever its catch-up policy; the policy applies only to occurrences already past
 * the grace when the claims resumed after a pause. "The claims kept running" is the
 * periodic-claim script called on a clock the test moves (PeriodicStore.claim, `now`) claiming
 * nothing, as replicas busy with other tasks would; then a replica on that clock plans the task.
 */
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { PeriodicTasks, Scheduler } from '../../src/index.js';
import { PeriodicStore } from '../../src/redis/periodic-store.js';
import { QueueStore } from '../../src/redis/queue-store.js';
import { closeAll, eventually, redisUrl, track, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);

const T = Date.UTC(2021, 5, 1, 12, 0, 0);
const GRACE = 15_000;

/** A `catchup: 'none'` task every 5 s from T; claims (of nothing) at each of `claimsAt`; then a replica at T + 20 s. */
async function planLate(claimsAt: number[]) {
  const name = uniqueQueue('claimlate');
  let clock = T - 1000;
  const tasks = track(new PeriodicTasks(name, { connection: redisUrl(), now: () => clock }));
  await tasks.upsert({ id: 'a', task: 'x', timer: '*:*:0/5', overlap: 'allow', catchup: 'none' });
  const client = new Redis(redisUrl());
  track({ close: async () => client.disconnect() });
  const store = new PeriodicStore(new QueueStore(client, name, { maxEvents: 10_000 }));
  for (const now of claimsAt) {
    const claim = await store.claim({
      lookaheadMs: 0,
      max: 0,
      claimTtlMs: 6000,
      now,
      keepCount: 100,
      keepAgeMs: -1,
      misfireGraceMs: GRACE,
    });
    expect(claim.tasks).toEqual([]);
  }
  clock = T + 20_000;
  const s = track(new Scheduler(name, { connection: redisUrl(), now: () => clock, misfireGraceMs: GRACE }));
  await s.start();
  // planned once the task's next occurrence is past now
  await eventually(async () => ((await tasks.get('a'))?.nextrun ?? 0) > T + 20_000, 30_000);
  return (await tasks.runs('a')).map((r) => `${(r.occurrence - T) / 1000}:${r.status}`).sort();
}

describe('periodic planning behind its occurrences', () => {
  it('submits the occurrences of a task claimed more than the misfire grace late while the claims kept running', async () => {
    // claims every 10 s (within the grace): the task is 20 s late when a replica plans it
    expect(await planLate([T + 1, T + 10_000])).toEqual(['0:waiting', '10:waiting', '15:waiting', '20:waiting', '5:waiting']);
  });

  it('applies the catch-up policy when the claims resume after a pause longer than the grace', async () => {
    // the last claim at T + 1, then none for 19 s: the replicas were down, and `none` runs nothing
    const runs = await planLate([T + 1]);
    expect(runs.every((r) => r.endsWith(':missed'))).toBe(true);
    expect(runs.length).toBeGreaterThan(0);
  });
});

/**
 * A release that is behind (more occurrences due than the replicas release) is busy, not down:
 * what was staged is submitted however late, and the catch-up policy applies only to occurrences
 * that were past the misfire grace when the releases resumed after a pause. The releases are the
 * periodic-release script called on a clock the test moves (PeriodicStore.release, `now`), one
 * occurrence per call, as a replica that has too many due would release them.
 */
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { PeriodicTasks, Scheduler } from '../../src/index.js';
import { periodicKeys } from '../../src/redis/keys.js';
import { PeriodicStore } from '../../src/redis/periodic-store.js';
import { QueueStore } from '../../src/redis/queue-store.js';
import { closeAll, eventually, redisUrl, track, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);

const T = Date.UTC(2021, 5, 1, 12, 0, 0);
const GRACE = 15_000;

/** Three tasks every 5 s whose occurrence T a replica staged (and then died, releasing nothing); a store to release them. */
async function staged() {
  const name = uniqueQueue('rel');
  let clock = T - 1000;
  const tasks = track(new PeriodicTasks(name, { connection: redisUrl(), now: () => clock }));
  for (const id of ['a', 'b', 'c']) await tasks.upsert({ id, task: 'x', timer: '*:*:0/5', overlap: 'allow' });
  const s = track(new Scheduler(name, { connection: redisUrl(), now: () => clock, misfireGraceMs: GRACE }));
  await s.start();
  const client = new Redis(redisUrl());
  track({ close: async () => client.disconnect() });
  await eventually(async () => (await client.zcard(periodicKeys(name).staged)) === 3, 30_000);
  s.destroy();
  clock = T;
  const store = new PeriodicStore(new QueueStore(client, name, { maxEvents: 10_000 }));
  const release = (now: number) => store.release({ now, max: 1, bufferPollMs: 1000, misfireGraceMs: GRACE, keepAgeMs: -1 });
  const statuses = async () => {
    const out: string[] = [];
    for (const id of ['a', 'b', 'c']) for (const r of await tasks.runs(id)) out.push(`${r.occurrence - T}:${r.status}`);
    return out.sort();
  };
  return { release, statuses };
}

describe('periodic release behind its occurrences', () => {
  it('submits an occurrence released more than the misfire grace late while the releases kept running', async () => {
    const { release, statuses } = await staged();
    // one a call, each call within the grace of the one before: the last is 20 s late
    expect((await release(T + 1)).submitted).toBe(1);
    expect((await release(T + 10_000)).submitted).toBe(1);
    const last = await release(T + 20_000);
    expect(last.submitted).toBe(1);
    expect(last.earliest).toBeNull();
    expect(await statuses()).toEqual(['0:waiting', '0:waiting', '0:waiting']);
  });

  it('applies the catch-up policy to occurrences past the grace when the releases resume after a pause', async () => {
    const { release, statuses } = await staged();
    expect((await release(T + 1)).submitted).toBe(1);
    // no release for 30 s (the replicas were down): the two left were 30 s late when they resumed,
    // and `latest` leaves them to the plan of the tasks' next occurrences, which are past too
    const resumed = await release(T + 30_000);
    expect(resumed.submitted).toBe(0);
    expect((await release(T + 30_001)).submitted).toBe(0);
    expect(await statuses()).toEqual(['0:missed', '0:missed', '0:waiting']);
  });
});

/**
 * The shared reader's freshness: a request after the reader slept (no page open, so no tick)
 * reads a new tick before the page uses it, so that no page shows stale counts and times; a
 * request while the tick is fresh sends nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LiveReader, QueueLive } from '../../src/dashboard/reader.js';
import { Queue } from '../../src/queue/queue.js';
import { DashboardStore } from '../../src/redis/dashboard-store.js';
import { QueueStore } from '../../src/redis/queue-store.js';
import { rawClient, redisUrl, uniqueQueue } from '../helpers/setup.js';

describe('the shared reader', () => {
  const name = uniqueQueue('reader');
  const redis = rawClient();
  let queue: Queue;

  beforeAll(() => {
    queue = new Queue(name, { connection: redisUrl() });
  });
  afterAll(async () => {
    await queue?.close();
    redis.disconnect();
  });

  it('reads a new tick for a request once its last one is old, and not while it is fresh', async () => {
    const live = new QueueLive(name, [new DashboardStore(new QueueStore(redis, name, { maxEvents: 0 }))], redis);
    const counter = { sent: 0 };
    // Not started: it ticks only when a request asks (as after a minute without pages).
    const reader = new LiveReader([live], counter, async () => '', 1000);
    let ticks = 0;
    reader.on('tick', () => ticks++);
    await reader.touch(name);
    expect(ticks).toBe(1);
    expect(live.tick?.counts.waiting ?? 0).toBe(0);

    await queue.submitBulk(Array.from({ length: 3 }, () => ({ task: 't', group: 'g' })));
    // Fresh: the request uses it as it is.
    await reader.touch(name);
    expect(ticks).toBe(1);
    // Old (three intervals, its time set back rather than waited out): requests that come together read one new tick.
    live.tickedAt -= 3100;
    await Promise.all([reader.touch(name), reader.touch(name), reader.touch(name)]);
    expect(ticks).toBe(2);
    expect(live.tick?.counts.waiting).toBe(3);
    reader.close();
  });
});

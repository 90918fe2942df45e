/**
 * Issue 38, item 11: every delay and due time is bounded, with a ValidationError past the bound,
 * so that no time a caller gives makes a later computation throw (a Date out of range) or wrap.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PeriodicTasks, ValidationError } from '../../src/index.js';
import { MAX_DELAY_MS } from '../../src/redis/wire.js';
import { closeAll, openQueue, rawClient, redisUrl, track, uniqueQueue } from '../helpers/setup.js';
import { finishRuns, settings, storeOf, takeRuns } from '../helpers/store.js';

afterEach(closeAll);

describe('event rules and emit', () => {
  it('refuses a rule delay past 100 years, so that other rules on the event still get their runs', async () => {
    const name = uniqueQueue('rule-delay');
    const tasks = track(new PeriodicTasks(name, { connection: redisUrl() }));
    await tasks.rule({ id: 'sane', after: 'signup', delay: 60_000, task: 'mail' });
    const huge = { id: 'huge', after: 'signup', delay: Number.MAX_SAFE_INTEGER, task: 'mail' };
    await expect(tasks.rule(huge)).rejects.toThrow(ValidationError);
    await expect(tasks.rule(huge)).rejects.toMatchObject({ field: 'delay' });
    expect(await tasks.getRule('huge')).toBeNull();
    const pending = await tasks.emit({ event: 'signup', subject: 'u1' });
    expect(pending).toHaveLength(1);
    expect((await tasks.upcoming()).map((u) => u.id)).toEqual(pending);
  });

  it('refuses an event time that is not a valid time up to the year 2286', async () => {
    const name = uniqueQueue('emit-at');
    const tasks = track(new PeriodicTasks(name, { connection: redisUrl() }));
    await tasks.rule({ id: 'r', after: 'e', delay: 'P36500D', task: 't' });
    for (const at of [Number.MAX_SAFE_INTEGER, MAX_DELAY_MS + 1, new Date(Number.NaN), new Date(8.64e15)]) {
      await expect(tasks.emit({ event: 'e', subject: 's', at })).rejects.toMatchObject({
        name: 'ValidationError',
        field: 'at',
      });
    }
    // the latest event time with the longest delay is still a time a Date holds
    expect(await tasks.emit({ event: 'e', subject: 's', at: MAX_DELAY_MS })).toHaveLength(1);
  });
});

describe('submit', () => {
  it('refuses a runAt Date past the latest due time, as it refuses such a number', async () => {
    const q = openQueue(uniqueQueue('run-at'));
    await expect(q.submit({ task: 't', runAt: new Date('9000-01-01T00:00:00Z') })).rejects.toMatchObject({
      field: 'runAt',
    });
    await expect(q.submit({ task: 't', runAt: new Date(-1) })).rejects.toMatchObject({ field: 'runAt' });
    await expect(q.submit({ task: 't', runAt: MAX_DELAY_MS + 1 })).rejects.toMatchObject({ field: 'runAt' });
    expect((await q.counts()).delayed).toBe(0);
  });
});

describe('retry backoff', () => {
  it('caps retryDelay × 2^retries, so that a stuck job keeps a due time a Date holds', async () => {
    const name = uniqueQueue('backoff');
    const q = openQueue(name);
    const job = await q.submit({ task: 't', maxRetries: 5 });
    const raw = rawClient();
    try {
      const store = storeOf(raw, name);
      const s = settings('w1', { retryDelay: 1e20 });
      const runs = await takeRuns(store, 1, s);
      const before = Date.now();
      await finishRuns(store, [[runs[0][0], runs[0][1], '+f', 'boom']], s);
      const stuck = (await q.getJob(job.id))!;
      expect(stuck.state).toBe('stuck');
      expect(stuck.due).toBeGreaterThan(before);
      expect(stuck.due).toBeLessThanOrEqual(Date.now() + MAX_DELAY_MS);
      expect(Number.isNaN(new Date(stuck.due!).getTime())).toBe(false);
    } finally {
      raw.disconnect();
    }
  });
});

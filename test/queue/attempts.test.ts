/**
 * A job's attempts: each run's start, executor, end, outcome and error, the last 25, returned by
 * getJob (the current or last run from the job's hash, the earlier ones from its attempts list),
 * and the list removed with the job.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { queueKeys } from '../../src/redis/keys.js';
import { closeAll, eventually, openQueue, openWorker, rawClient, uniqueQueue } from '../helpers/setup.js';
import { settings, startRuns, storeOf, takeRuns } from '../helpers/store.js';

afterEach(closeAll);

describe('attempts', () => {
  it('keeps the last 25 runs of a job retried 30 times, each with its error, newest first', async () => {
    const name = uniqueQueue('att');
    const q = openQueue(name);
    let n = 0;
    const w = openWorker(
      name,
      {
        boom: () => {
          n += 1;
          throw new Error(`boom ${n}`);
        },
      },
      { retryDelay: 0 },
    );
    const job = await q.submit({ task: 'boom', maxRetries: 30 });
    const failed = await eventually(async () => {
      const j = await q.getJob(job.id);
      return j?.state === 'failed' ? j : null;
    }, 20_000);
    expect(n).toBe(31);
    const attempts = failed.attempts ?? [];
    expect(attempts).toHaveLength(25);
    // newest first: run 31 (the last, from the hash) down to run 7
    attempts.forEach((a, i) => {
      expect(a.outcome).toBe('failed');
      expect(a.error).toMatch(new RegExp(`^Error: boom ${31 - i}\\n`));
      expect(a.executor).toBe(w.id);
      expect(a.started).toBeTypeOf('number');
      expect(a.finished).toBeGreaterThanOrEqual(a.started!);
    });
    const redis = rawClient();
    try {
      expect(await redis.llen(queueKeys(name).attempts(job.id))).toBe(24);
    } finally {
      redis.disconnect();
    }
  });

  it('a success costs no list; a retried one lists the failure under the success', async () => {
    const name = uniqueQueue('att');
    const q = openQueue(name);
    let n = 0;
    openWorker(
      name,
      {
        once: () => 'ok',
        flaky: () => {
          n += 1;
          if (n === 1) throw new Error('first <b>try</b>');
          return 'ok';
        },
      },
      { retryDelay: 0 },
    );
    const quick = await q.submit({ task: 'once' });
    const flaky = await q.submit({ task: 'flaky', maxRetries: 3 });
    const done = async (id: string) =>
      eventually(async () => {
        const j = await q.getJob(id);
        return j?.state === 'success' ? j : null;
      });
    const one = await done(quick.id);
    expect(one.attempts).toEqual([{ started: one.started, finished: one.finished, executor: one.worker, outcome: 'success' }]);
    const two = await done(flaky.id);
    expect(two.attempts?.map((a) => [a.outcome, a.error?.split('\n')[0]])).toEqual([
      ['success', undefined],
      ['failed', 'Error: first <b>try</b>'],
    ]);
    const redis = rawClient();
    try {
      expect(await redis.exists(queueKeys(name).attempts(quick.id))).toBe(0);
    } finally {
      redis.disconnect();
    }
  });

  it('a failed job put back keeps its failed run; clean removes the list with the job', async () => {
    const name = uniqueQueue('att');
    const q = openQueue(name);
    let n = 0;
    openWorker(name, {
      boom: () => {
        n += 1;
        if (n === 1) throw new Error('no');
        return 'yes';
      },
    });
    const job = await q.submit({ task: 'boom', maxRetries: 0 });
    await eventually(async () => (await q.getJob(job.id))?.state === 'failed');
    expect(await q.retry(job.id)).toBe('waiting');
    const after = await eventually(async () => {
      const j = await q.getJob(job.id);
      return j?.state === 'success' ? j : null;
    });
    expect(after.attempts?.map((a) => a.outcome)).toEqual(['success', 'failed']);
    expect(after.attempts?.[1].error).toMatch(/^Error: no/);
    const redis = rawClient();
    try {
      const key = queueKeys(name).attempts(job.id);
      expect(await redis.llen(key)).toBe(1);
      expect(await q.clean({ state: 'success' })).toBe(1);
      expect(await redis.exists(key)).toBe(0);
    } finally {
      redis.disconnect();
    }
  });

  it.each([
    ['keep age', { keepFailed: { age: 0 }, leaseMs: 1000 }],
    ['keep count', { keepFailed: { count: 0 } }],
  ])('removes the attempts list with a failed job past its %s', async (_label, opts) => {
    const name = uniqueQueue('att');
    const q = openQueue(name);
    let runs = 0;
    openWorker(
      name,
      {
        boom: () => {
          runs += 1;
          throw new Error('no');
        },
      },
      { retryDelay: 0, ...opts },
    );
    const redis = rawClient();
    try {
      const job = await q.submit({ task: 'boom', maxRetries: 1 });
      const key = queueKeys(name).attempts(job.id);
      // (its first run, retried, was kept in the list)
      await eventually(async () => runs === 2 && (await q.getJob(job.id)) === null);
      expect(await redis.exists(key)).toBe(0);
    } finally {
      redis.disconnect();
    }
  });

  it('keeps a run lost with its executor (its lease expired) as a failed attempt', async () => {
    const name = uniqueQueue('att');
    const q = openQueue(name);
    const raw = rawClient();
    try {
      const job = await q.submit({ task: 'x', maxRetries: 3 });
      const store = storeOf(raw, name);
      const runs = await takeRuns(store, 1, settings('exec-gone'));
      await startRuns(store, runs);
      const [[id, token]] = runs;
      // (its lease expired: the executor died)
      await raw.zadd(q.keys.leases, 1, `${token}!${id}`);
      const { recovered } = await store.recover({
        retryDelay: 1000,
        maxLeases: 10,
        keepSucceededAgeMs: -1,
        keepFailedAgeMs: -1,
        maxRemoved: 10,
      });
      expect(recovered).toEqual([job.id]);
      const stuck = await q.getJob(job.id);
      expect(stuck?.state).toBe('stuck');
      expect(stuck?.attempts).toHaveLength(1);
      expect(stuck?.attempts?.[0]).toMatchObject({ outcome: 'failed', executor: 'exec-gone', started: stuck?.started });
      expect(stuck?.attempts?.[0].error).toMatch(/lease expired \(executor exec-gone\)/);
    } finally {
      raw.disconnect();
    }
  });
});

/** Queue.clean and Queue.retryFailed: which finished jobs they act on, in bounded steps, and what they refuse. */
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Job, type Queue, type SubmitSpec, ValidationError } from '../../src/index.js';
import { closeAll, openQueue, openWorker, rawClient, uniqueQueue, until } from '../helpers/setup.js';
import { finishRuns, settings, storeOf, takeRuns } from '../helpers/store.js';

afterEach(closeAll);
let raw: Redis;
beforeAll(() => {
  raw = rawClient();
});
afterAll(() => raw.disconnect());

/** Submits `specs` and ends every job with outcome `code` (s success, p failed, c cancelled): their ids, in submit order. */
async function ended(q: Queue, specs: SubmitSpec[], code: 's' | 'p' | 'c'): Promise<string[]> {
  const jobs = await q.submitBulk(specs);
  const store = storeOf(raw, q.name);
  for (let left = jobs.length; left > 0; ) {
    const runs = await takeRuns(store, 1000, settings('exec-c'));
    await finishRuns(
      store,
      runs.map(([id, token]) => [id, token, `+${code}`, code === 'p' ? 'boom' : '']),
      settings('exec-c'),
    );
    left -= runs.length;
  }
  return jobs.map((j) => j.id);
}

const many = (n: number, spec: (i: number) => SubmitSpec): SubmitSpec[] => Array.from({ length: n }, (_, i) => spec(i));

/** What Redis holds of job `id`: its hash fields and log lines. */
async function held(q: Queue, id: string): Promise<number> {
  return (await raw.exists(q.keys.job(id))) + (await raw.exists(q.keys.logs(id)));
}

describe('clean', () => {
  it('removes the jobs of one final state with their logs, and leaves every other job', async () => {
    const q = openQueue(uniqueQueue('clean'));
    const failed = await ended(
      q,
      many(30, () => ({ task: 't' })),
      'p',
    );
    for (const id of failed) await raw.rpush(q.keys.logs(id), 'a line');
    const done = await ended(
      q,
      many(5, () => ({ task: 't' })),
      's',
    );
    const waiting = await q.submit({ task: 't' });

    expect(await q.clean({ state: 'failed' })).toBe(30);
    for (const id of failed) expect(await held(q, id)).toBe(0);
    expect(await raw.zcard(q.keys.done('failed'))).toBe(0);
    expect(await q.counts()).toMatchObject({ failed: 0, success: 5, waiting: 1 });
    for (const id of done) expect((await q.getJob(id))!.state).toBe('success');
    expect((await q.getJob(waiting.id))!.state).toBe('waiting');
    expect(await q.clean({ state: 'failed' })).toBe(0);
  });

  it('removes only one group’s jobs, across steps whose jobs share a finished time', async () => {
    // 1,200 jobs ended by two finish calls share their two times: the steps (250 members each) resume
    // inside one score, past the members of the other group they kept.
    const q = openQueue(uniqueQueue('clean'));
    const ids = await ended(
      q,
      many(1200, (i) => ({ task: 't', group: i % 2 ? 'b' : 'a' })),
      'c',
    );
    expect(await q.clean({ state: 'cancelled', group: 'a' })).toBe(600);
    const left = await raw.zrange(q.keys.done('cancelled'), 0, -1);
    expect(left.sort()).toEqual(ids.filter((_, i) => i % 2).sort());
    for (const [i, id] of ids.entries()) expect(await held(q, id)).toBe(i % 2 ? 1 : 0);
    expect((await q.counts()).cancelled).toBe(600);
  });

  it('removes only jobs finished at least olderThan ago, oldest first, at most limit', async () => {
    const q = openQueue(uniqueQueue('clean'));
    const old = await ended(
      q,
      many(10, () => ({ task: 't' })),
      's',
    );
    const recent = await ended(
      q,
      many(10, () => ({ task: 't' })),
      's',
    );
    // Backdate the first ten: finished 2 h ago, a minute apart, the first the oldest.
    const [sec] = await raw.time();
    const twoHoursAgo = Number(sec) * 1000 - 2 * 3_600_000;
    for (const [i, id] of old.entries()) {
      await raw.zadd(q.keys.done('success'), 'XX', twoHoursAgo + i * 60_000, id);
      await raw.hset(q.keys.job(id), 'finished', twoHoursAgo + i * 60_000);
    }
    expect(await q.clean({ state: 'success', olderThan: 3_600_000, limit: 4 })).toBe(4);
    for (const [i, id] of old.entries()) expect(await held(q, id)).toBe(i < 4 ? 0 : 1);
    expect(await q.clean({ state: 'success', olderThan: 3_600_000 })).toBe(6);
    for (const id of [...old, ...recent]) expect(await held(q, id)).toBe(old.includes(id) ? 0 : 1);
    expect((await q.counts()).success).toBe(10);
  });

  it('refuses bad options, naming them, and removes nothing', async () => {
    const q = openQueue(uniqueQueue('clean'));
    await ended(
      q,
      many(3, () => ({ task: 't' })),
      'p',
    );
    const refused = (p: Promise<unknown>) =>
      p.then(
        () => null,
        (e: unknown) => e,
      );
    const cases: Array<[Promise<unknown>, string]> = [
      [q.clean({ state: 'waiting' } as never), 'state'],
      [q.clean({} as never), 'state'],
      [q.clean({ state: 'failed', olderThan: -1 }), 'olderThan'],
      [q.clean({ state: 'failed', olderThan: 1.5 }), 'olderThan'],
      [q.clean({ state: 'failed', limit: 0 }), 'limit'],
      [q.clean({ state: 'failed', group: '' }), 'group'],
      [q.retryFailed({ task: '' }), 'task'],
      [q.retryFailed({ group: 'x'.repeat(201) }), 'group'],
    ];
    for (const [p, field] of cases) {
      const err = await refused(p);
      expect(err).toBeInstanceOf(ValidationError);
      expect(err).toMatchObject({ field });
    }
    expect((await q.counts()).failed).toBe(3);
  });
});

describe('retryFailed', () => {
  it('puts back the failed jobs of one group and task as waiting, and an executor runs them', async () => {
    const q = openQueue(uniqueQueue('retry'));
    const ids = await ended(
      q,
      many(40, (i) => ({ task: i % 4 < 2 ? 'send' : 'other', group: i % 2 ? 'b' : 'a', priority: i % 8 < 4 ? 'high' : 'low' })),
      'p',
    );
    const match = ids.filter((_, i) => i % 4 === 0); // send, group a
    expect(await q.retryFailed({ group: 'a', task: 'send' })).toBe(match.length);
    for (const id of ids) {
      const job = (await q.getJob(id))!;
      if (match.includes(id)) expect(job).toMatchObject({ state: 'waiting', retries: 0, error: 'boom' });
      else expect(job.state).toBe('failed');
      expect(job.finished === undefined).toBe(match.includes(id));
    }
    expect(await q.counts()).toMatchObject({ failed: 40 - match.length, waiting: match.length });
    expect(await q.groups()).toEqual([expect.objectContaining({ group: 'a', waiting: match.length })]);

    const ran: Job[] = [];
    const w = openWorker(q.name, { send: () => 'sent' }, { concurrency: 4 });
    w.on('completed', (job) => ran.push(job));
    await until(w, 'completed', () => ran.length === match.length);
    expect(ran.map((j) => j.id).sort()).toEqual([...match].sort());
    // (closed first: it would take the retried 'other' jobs and fail them, an unknown task)
    await w.close();

    expect(await q.retryFailed()).toBe(40 - match.length);
    expect((await q.counts()).failed).toBe(0);
  });

  it('retries only jobs that failed before its first step', async () => {
    const q = openQueue(uniqueQueue('retry'));
    const first = await ended(
      q,
      many(6, () => ({ task: 't' })),
      'p',
    );
    const store = storeOf(raw, q.name);
    // A job running while a bulk retry begins, and failing after its first step, finishes after
    // its bound (moved a ms past it here, as the same ms could be the bound's own).
    await q.submit({ task: 't' });
    const [[later, token]] = await takeRuns(store, 1, settings('exec-c'));
    const step = await store.retryFailed({ batch: 2 });
    expect(step).toMatchObject({ count: 2, next: expect.anything() });
    await finishRuns(store, [[later, token, '+p', 'boom']], settings('exec-c'));
    await raw.zadd(q.keys.done('failed'), 'XX', Number(step.next!.until) + 1, later);
    let cursor = step.next;
    let count = step.count;
    while (cursor) {
      const s = await store.retryFailed({ batch: 2 }, cursor);
      count += s.count;
      cursor = s.next;
    }
    expect(count).toBe(6);
    for (const id of first) expect((await q.getJob(id))!.state).toBe('waiting');
    expect((await q.getJob(later))!.state).toBe('failed');
  });
});

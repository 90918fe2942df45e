/**
 * Queue.deleteJob(s), promote(Jobs), cancelJobs and retryJobs: a delete leaves no key of the job
 * and touches no other job's; a running job is not deleted; promote puts a job at the front of
 * its priority; a filter is walked in batches to its end.
 */
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Queue, ValidationError } from '../../src/index.js';
import { ACTION_BATCH, shiftPosition } from '../../src/queue/job-actions.js';
import { closeAll, openQueue, rawClient, uniqueQueue } from '../helpers/setup.js';
import { finishRuns, settings, storeOf, takeRuns } from '../helpers/store.js';

afterEach(closeAll);
let raw: Redis;
beforeAll(() => {
  raw = rawClient();
});
afterAll(() => raw.disconnect());

/**
 * Every place the queue's keys name `id`: a key's name, a member of a list, set or sorted set, a
 * hash's field or value, a string; those that name one of `others` (ids that hold `id`) aside.
 * The events stream is history (past entries name past jobs), and is not read.
 */
async function mentions(q: Queue, id: string, others: readonly string[]): Promise<string[]> {
  const theirs = (s: string) => others.some((o) => s.includes(o));
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await raw.scan(cursor, 'MATCH', `${q.keys.prefix}*`, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) {
      if (key.includes(id) && !theirs(key)) found.push(`key ${key}`);
      const type = await raw.type(key);
      let values: string[] = [];
      if (type === 'list') values = await raw.lrange(key, 0, -1);
      else if (type === 'zset') values = await raw.zrange(key, 0, -1);
      else if (type === 'set') values = await raw.smembers(key);
      else if (type === 'hash') values = Object.entries(await raw.hgetall(key)).flat();
      else if (type === 'string') values = [(await raw.get(key)) ?? ''];
      for (const v of values) if (v.includes(id) && !theirs(v)) found.push(`${key} holds ${v.slice(0, 80)}`);
    }
  } while (cursor !== '0');
  return found;
}

/** Ends job `id` (taken by the next take) with outcome `code` (s success, p failed, c cancelled, f failed with retries left). */
async function endNext(q: Queue, code: 's' | 'p' | 'c' | 'f'): Promise<string> {
  const store = storeOf(raw, q.name);
  const [[id, token]] = await takeRuns(store, 1, settings('exec-a', { retryDelay: 3_600_000 }));
  await finishRuns(store, [[id, token, `+${code}`, code === 's' ? '' : 'boom']], settings('exec-a', { retryDelay: 3_600_000 }));
  return id;
}

describe('deleteJob', () => {
  it('leaves no key of a job behind, in every state it deletes, and keeps the other jobs', async () => {
    const q = openQueue(uniqueQueue('del'));
    // Jobs of another group with ids that begin with the victims' (a prefix of another's key must not match).
    const victims: Record<string, string> = {};
    for (const [state, code] of [
      ['success', 's'],
      ['failed', 'p'],
      ['cancelled', 'c'],
      ['stuck', 'f'],
    ] as const) {
      await q.submit({ id: `victim-${state}`, task: 't', group: 'gv', maxRetries: 3 });
      expect(await endNext(q, code)).toBe(`victim-${state}`);
      await raw.rpush(q.keys.logs(`victim-${state}`), 'a line');
      victims[state] = `victim-${state}`;
    }
    await q.submit({ id: 'victim-high', task: 't', group: 'gv', priority: 'high' });
    await q.submit({ id: 'victim-low', task: 't', group: 'gv' });
    await q.submit({ id: 'victim-delayed', task: 't', group: 'gv', delay: 3_600_000 });
    const others = ['victim-high:x', 'log:victim-low', 'victim-low2'];
    for (const id of others) await q.submit({ id, task: 't', group: 'go' });
    expect((await q.getJob('victim-stuck'))?.state).toBe('stuck');

    for (const id of [...Object.values(victims), 'victim-high', 'victim-low', 'victim-delayed']) {
      expect(await q.deleteJob(id), id).toBe('deleted');
      expect(await mentions(q, id, others), id).toEqual([]);
      expect(await q.getJob(id)).toBeNull();
    }
    for (const id of others) expect((await q.getJob(id))?.state, id).toBe('waiting');
    const counts = await q.counts();
    expect(counts).toMatchObject({ waiting: 3, success: 0, failed: 0, cancelled: 0, stuck: 0, delayed: 0 });
    // The group's record counts no job of it any more.
    expect((await q.groups()).find((g) => g.group === 'gv') ?? { waiting: 0, stuck: 0 }).toMatchObject({
      waiting: 0,
      stuck: 0,
    });
    expect(await raw.exists(q.keys.groupList('gv', 'h'), q.keys.groupList('gv', 'l'))).toBe(0);
    expect(await q.deleteJob('victim-high')).toBeNull();
    await expect(q.deleteJob('')).rejects.toThrow(ValidationError);
  });

  it("takes a released job and a due stuck job out of their group's preferred list", async () => {
    const q = openQueue(uniqueQueue('del-r'));
    const store = storeOf(raw, q.name);
    await q.submitBulk(['released', 'due1', 'due2'].map((id) => ({ id, task: 't', group: 'g', maxRetries: 3 })));
    const runs = await takeRuns(store, 3, settings('exec-r'));
    expect(runs.map(([id]) => id).sort()).toEqual(['due1', 'due2', 'released']);
    await finishRuns(
      store,
      runs.map(([id, token]) => [id, token, id === 'released' ? '+r' : '+f', 'boom']),
      settings('exec-r'),
    );
    // Their retries come due; a take of the paused group moves them to its preferred list, takes nothing.
    await raw.zadd(q.keys.delayed, 0, 'due1', 0, 'due2');
    await q.pauseGroup('g');
    expect(await takeRuns(store, 1, settings('exec-r'))).toEqual([]);
    expect(await raw.lrange(q.keys.groupList('g', 'r'), 0, -1)).toEqual(expect.arrayContaining(['released', 'due1', 'due2']));
    expect(await q.deleteJobs({ ids: ['released', 'due1'] })).toMatchObject({ done: 2 });
    expect(await q.promote('due2')).toBe('waiting');
    expect(await raw.lrange(q.keys.groupList('g', 'r'), 0, -1)).toEqual([]);
    expect(await raw.lrange(q.keys.groupList('g', 'l'), 0, -1)).toEqual(['due2']);
    expect(await q.counts()).toMatchObject({ waiting: 1, stuck: 0 });
    expect((await q.groups()).find((x) => x.group === 'g')).toMatchObject({ waiting: 1, stuck: 0 });
  });

  it('leaves a scheduled or running job and its lease, which still finishes', async () => {
    const q = openQueue(uniqueQueue('del-run'));
    const store = storeOf(raw, q.name);
    const job = await q.submit({ task: 't' });
    const [[id, token]] = await takeRuns(store, 1, settings('exec-b'));
    expect(await q.deleteJob(id)).toBe('scheduled');
    expect(await q.deleteJobs({ ids: [id, 'nope'] })).toEqual({
      done: 0,
      cancelling: 0,
      left: { scheduled: 1 },
      missing: 1,
      more: false,
    });
    expect(await raw.zcard(q.keys.leases)).toBeGreaterThan(0);
    await finishRuns(store, [[id, token, '+s', '']], settings('exec-b'));
    expect((await q.getJob(job.id))?.state).toBe('success');
    expect(await q.deleteJob(id)).toBe('deleted');
    await expect(q.deleteJobs({ state: 'running' })).rejects.toThrow(/delete acts on jobs that are/);
  });

  it('counts a child deleted before it ended as cancelled on its parent', async () => {
    const q = openQueue(uniqueQueue('del-child'));
    await q.submit({ id: 'p', task: 't' });
    await raw.hset(q.keys.job('p'), 'ct', '1');
    // (a child's id is reserved from submits: it is written as fan-out writes it, by the store)
    await storeOf(raw, q.keys).submit(
      [{ id: 'p/0', task: 't', group: 'default', priority: 'low', maxRetries: 3, parent: 'p', packedArgs: Buffer.alloc(0) }],
      Infinity,
    );
    expect(await q.deleteJob('p/0')).toBe('deleted');
    expect((await q.getJob('p'))?.children).toMatchObject({ total: 1, cancelled: 1 });
  });
});

describe('deleteJobs over a filter', () => {
  it('deletes every job of a state, group and task in batches, and no other', async () => {
    const q = openQueue(uniqueQueue('del-all'));
    const n = 2 * ACTION_BATCH + 37;
    await q.submitBulk(Array.from({ length: n }, (_, i) => ({ task: 'mail', group: `g${i % 7}` })));
    await q.submitBulk(Array.from({ length: 20 }, () => ({ task: 'sms', group: 'g1' })));
    expect(await q.deleteJobs({ state: 'waiting', group: 'g1', task: 'mail' })).toMatchObject({
      done: Math.ceil((n - 1) / 7),
      more: false,
    });
    expect((await q.groups()).find((g) => g.group === 'g1')?.waiting).toBe(20);
    const rest = await q.deleteJobs({ state: 'waiting', task: 'mail' });
    expect(rest.done).toBe(n - Math.ceil((n - 1) / 7));
    expect(await q.counts()).toMatchObject({ waiting: 20 });
    expect(await q.deleteJobs({ state: 'waiting', limit: 5 })).toMatchObject({ done: 5, more: true });
  });
});

describe('promote', () => {
  it('puts a delayed job at the front of its priority, before older waiting jobs', async () => {
    const q = openQueue(uniqueQueue('promote'));
    const store = storeOf(raw, q.name);
    await q.submitBulk([
      { task: 't', id: 'w1' },
      { task: 't', id: 'w2' },
    ]);
    await q.submit({ task: 't', id: 'later', delay: 3_600_000 });
    await q.submit({ task: 't', id: 'high', priority: 'high' });
    expect(await q.promote('later')).toBe('waiting');
    expect(await q.promote('later')).toBe('waiting');
    expect(await q.promote('w1')).toBe('waiting');
    expect(await q.promote('none')).toBeNull();
    const job = await q.getJob('later');
    expect(job?.runAt).toBeLessThanOrEqual(Date.now() + 1000);
    expect(await q.counts()).toMatchObject({ delayed: 0, waiting: 4 });
    // (the counting scheme takes high first, then the front of low)
    const order = (await takeRuns(store, 4, settings('exec-p'))).map(([id]) => id);
    expect(order).toEqual(['high', 'later', 'w1', 'w2']);
  });

  it('runs a stuck job now, keeping its retry count; a batch keeps its order', async () => {
    const q = openQueue(uniqueQueue('promote-stuck'));
    const store = storeOf(raw, q.name);
    await q.submit({ task: 't', id: 's1', maxRetries: 3 });
    await endNext(q, 'f');
    await q.submitBulk([
      { task: 't', id: 'd1', delay: 3_600_000 },
      { task: 't', id: 'd2', delay: 3_600_000 },
      { task: 't', id: 'w' },
    ]);
    expect((await q.getJob('s1'))?.state).toBe('stuck');
    expect(await q.promoteJobs({ state: 'stuck' })).toMatchObject({ done: 1 });
    const s1 = await q.getJob('s1');
    expect(s1).toMatchObject({ state: 'waiting', retries: 1 });
    expect(s1?.due).toBeUndefined();
    expect(await q.promoteJobs({ ids: ['d1', 'd2', 'w'] })).toMatchObject({ done: 2, left: { waiting: 1 } });
    expect(await q.counts()).toMatchObject({ stuck: 0, delayed: 0, waiting: 4 });
    expect((await takeRuns(store, 4, settings('exec-p'))).map(([id]) => id)).toEqual(['d1', 'd2', 's1', 'w']);
    await expect(q.promoteJobs({ state: 'waiting' })).rejects.toThrow(ValidationError);
  });
});

describe('cancelJobs and retryJobs', () => {
  it('cancel every waiting job of a group, then retry them, in batches', async () => {
    const q = openQueue(uniqueQueue('cancel-all'));
    const n = ACTION_BATCH + 10;
    await q.submitBulk(Array.from({ length: n }, () => ({ task: 't', group: 'a' })));
    await q.submit({ task: 't', group: 'b' });
    expect(await q.cancelJobs({ state: 'waiting', group: 'a' })).toMatchObject({ done: n, cancelling: 0 });
    expect(await q.counts()).toMatchObject({ waiting: 1, cancelled: n });
    expect(await q.retryJobs({ state: 'cancelled' })).toMatchObject({ done: n });
    expect(await q.counts()).toMatchObject({ waiting: n + 1, cancelled: 0 });
    await expect(q.retryJobs({ ids: 'a' as unknown as string[] })).rejects.toThrow(/ids/);
  });
});

describe('on a sharded queue', () => {
  it('acts on ids in the shard each names, caller-given ids in every shard, and walks a filter over them all', async () => {
    const q = openQueue(uniqueQueue('act-shards'), { shards: 3 });
    const made = await q.submitBulk(Array.from({ length: 60 }, (_, i) => ({ task: 't', group: `g${i % 12}` })));
    await q.submitBulk(['mine-1', 'mine-2'].map((id, i) => ({ id, task: 't', group: `g${i}`, delay: 3_600_000 })));
    expect(await q.deleteJobs({ ids: made.slice(0, 10).map((j) => j.id) })).toMatchObject({ done: 10, missing: 0 });
    expect(await q.promoteJobs({ ids: ['mine-1', 'mine-2', 'nope'] })).toMatchObject({ done: 2, missing: 1 });
    // (g5 had 5 jobs, one of them among the 10 deleted)
    expect(await q.cancelJobs({ state: 'waiting', group: 'g5' })).toMatchObject({ done: 4 });
    expect(await q.deleteJobs({ state: 'waiting' })).toMatchObject({ done: 60 - 10 - 4 + 2 });
    expect(await q.counts()).toMatchObject({ waiting: 0, delayed: 0, cancelled: 4 });
  });
});

describe('shiftPosition', () => {
  it('moves a position back by the jobs removed before it in its list', () => {
    expect(shiftPosition('500', ['0', '3', '499', '500', '700'])).toBe('497');
    expect(shiftPosition('12-3-40', ['12-3-0', '12-3-39', '12-2-0', '12-3-41'])).toBe('12-3-38');
    expect(shiftPosition('', ['1'])).toBe('');
  });
});

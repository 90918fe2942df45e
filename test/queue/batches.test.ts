/**
 * Batches (docs/jobs.md#batches): jobs added over time to a batch its producer opens and closes;
 * onComplete runs once when every job has ended after the close, onSuccess once when every one
 * succeeded. Counts, events, cancel, delete and retry, a running job adding to its own batch, bad
 * input, and a batch on a sharded queue over a Redis Cluster.
 */
import { Cluster } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { BatchClosedError, type Handlers, PermanentError, Queue, reshard, ValidationError, Worker } from '../../src/index.js';
import { startCluster } from '../helpers/cluster.js';
import {
  closeAll,
  eventually,
  openQueue,
  openWorker,
  rawClient,
  redisUrl,
  streamEvents,
  track,
  uniqueQueue,
} from '../helpers/setup.js';

afterEach(closeAll);

/** Handlers that record the runs of each job id, and each callback's view of its batch. */
function recording() {
  const runs: string[] = [];
  const views: Array<{ id: string; status: unknown; page: unknown }> = [];
  const handlers: Handlers = {
    work: async (ctx) => {
      runs.push(ctx.job.id);
      const a = (ctx.args ?? {}) as { fail?: 'once' | 'always'; n?: number };
      if (a.fail === 'always') throw new PermanentError('no');
      if (a.fail === 'once' && ctx.job.retries === 0) throw new Error('first attempt fails');
      return (a.n ?? 0) * 2;
    },
    done: async (ctx) => {
      runs.push(ctx.job.id);
      views.push({ id: ctx.job.id, status: await ctx.batch?.status(), page: await ctx.batch?.jobs({ limit: 2 }) });
      return 'ok';
    },
  };
  return { runs, views, handlers };
}

const times = (runs: string[], id: string) => runs.filter((r) => r === id).length;

describe('batches', () => {
  it('callbacks run once, after the close and every job end; counts, pages, events; reopened by id elsewhere', async () => {
    const name = uniqueQueue('batch');
    const q = openQueue(name);
    const { runs, views, handlers } = recording();
    const batch = await q.openBatch({
      onComplete: { task: 'done', args: { what: 'complete' } },
      onSuccess: { task: 'done' },
      group: 'acme',
      description: 'monthly import',
    });
    expect(batch.id).toMatch(/^[0-9a-z]{18,19}\.[0-9a-z]{3}$/);
    const one = await batch.submit({ task: 'work', args: { n: 1 } });
    expect(one.batch).toBe(batch.id);
    expect(one.group).toBe('default');
    expect((await q.getJob(one.id))?.batch).toBe(batch.id);
    const w = openWorker(name, handlers, { concurrency: 4 });
    await eventually(async () => (await q.batch(batch.id))?.pending === 0);
    // every job ended, but the batch is open: nothing fires
    expect(times(runs, `${batch.id}/complete`)).toBe(0);
    // another process reopens it by id and adds more
    const other = track(new Queue(name, { connection: q.connection }));
    const again = await other.reopenBatch(batch.id);
    expect(again).not.toBeNull();
    const more = await again!.submitBulk([
      { task: 'work', args: { n: 2 } },
      { task: 'work', args: { n: 3 }, id: 'mine-3' },
      { task: 'work', args: { n: 4, fail: 'once' }, maxRetries: 2 },
    ]);
    expect(more.map((j) => j.batch)).toEqual([batch.id, batch.id, batch.id]);
    const closed = await again!.close();
    expect(closed).toMatchObject({ id: batch.id, description: 'monthly import', total: 4 });
    expect(['closed', 'succeeded']).toContain(closed.state);
    await eventually(
      async () =>
        (await q.getJob(`${batch.id}/success`))?.state === 'success' &&
        (await q.getJob(`${batch.id}/complete`))?.state === 'success',
    );
    await w.close();
    expect(times(runs, `${batch.id}/complete`)).toBe(1);
    expect(times(runs, `${batch.id}/success`)).toBe(1);
    // the retried job ran twice, and the callbacks after its success
    expect(times(runs, more[2].id)).toBe(2);
    expect(runs.indexOf(`${batch.id}/complete`)).toBeGreaterThan(runs.lastIndexOf(more[2].id));
    const cb = await q.getJob(`${batch.id}/complete`);
    expect(cb).toMatchObject({ group: 'acme', args: { what: 'complete' } });
    const status = await q.batch(batch.id);
    expect(status).toMatchObject({ total: 4, pending: 0, success: 4, failed: 0, cancelled: 0, state: 'succeeded' });
    expect(status!.completed).toBeGreaterThanOrEqual(status!.closed!);
    for (const v of views) {
      expect(v.status).toMatchObject({ total: 4, success: 4, pending: 0 });
      expect(v.page).toEqual({
        items: [
          { id: one.id, state: 'success', result: 2 },
          { id: more[0].id, state: 'success', result: 4 },
        ],
      });
    }
    expect((await batch.jobs({ offset: 2, limit: 5 })).items.map((i) => i.id)).toEqual(['mine-3', more[2].id]);
    const events = (await streamEvents(name)).filter((e) => e.event?.startsWith('batch.'));
    expect(events.map((e) => [e.event, e.id, e.batch])).toEqual([
      ['batch.completed', batch.id, { total: 4, success: 4, failed: 0, cancelled: 0 }],
      ['batch.succeeded', batch.id, { total: 4, success: 4, failed: 0, cancelled: 0 }],
    ]);
    // closed and completed: no more jobs, nothing written
    await expect(batch.submit({ task: 'work' })).rejects.toMatchObject({ reason: 'completed' });
    expect((await q.batch(batch.id))!.total).toBe(4);
  });

  it('a job failed for good ends the batch, not its success; its retry and success then fire onSuccess once', async () => {
    const name = uniqueQueue('batch');
    const q = openQueue(name);
    const { runs, handlers } = recording();
    const batch = await q.openBatch({ onComplete: { task: 'done' }, onSuccess: { task: 'done' } });
    const [, bad] = await batch.submitBulk([{ task: 'work' }, { task: 'work', args: { fail: 'always' } }]);
    await batch.close();
    const w = openWorker(name, handlers, { concurrency: 2 });
    await eventually(async () => (await q.getJob(`${batch.id}/complete`))?.state === 'success');
    expect(await q.batch(batch.id)).toMatchObject({ total: 2, success: 1, failed: 1, state: 'completed' });
    expect(await q.getJob(`${batch.id}/success`)).toBeNull();
    // the failed job retried and now succeeding: the batch succeeds
    await w.close();
    const w2 = openWorker(name, { ...handlers, work: async () => 'fixed' }, { concurrency: 2 });
    expect(await q.retry(bad.id)).toBe('waiting');
    await eventually(async () => (await q.getJob(`${batch.id}/success`))?.state === 'success');
    await w2.close();
    expect(await q.batch(batch.id)).toMatchObject({ total: 2, success: 2, failed: 0, state: 'succeeded' });
    expect(times(runs, `${batch.id}/complete`)).toBe(1);
    const fired = (await streamEvents(name)).filter((e) => e.event?.startsWith('batch.')).map((e) => e.event);
    expect(fired).toEqual(['batch.completed', 'batch.succeeded']);
  });

  it('cancel and delete of a pending job count it cancelled; a close after every end fires at once; an empty batch completes and succeeds', async () => {
    const name = uniqueQueue('batch');
    const q = openQueue(name);
    const batch = await q.openBatch({ onComplete: { task: 'done' }, onSuccess: { task: 'done' } });
    const [a, b] = await batch.submitBulk([{ task: 'work' }, { task: 'work', delay: 60_000 }]);
    expect(await q.cancel(a.id)).toBe('cancelled');
    expect(await q.batch(batch.id)).toMatchObject({ pending: 1, cancelled: 1 });
    await q.deleteJobs({ ids: [b.id] });
    expect(await q.batch(batch.id)).toMatchObject({ total: 2, pending: 0, cancelled: 2, state: 'open' });
    expect(await q.getJob(`${batch.id}/complete`)).toBeNull();
    // the close finds every job ended: it submits onComplete itself; none succeeded, so no onSuccess
    expect(await batch.close()).toMatchObject({ state: 'completed' });
    expect((await q.getJob(`${batch.id}/complete`))?.state).toBe('waiting');
    expect(await q.getJob(`${batch.id}/success`)).toBeNull();
    // closing twice changes nothing
    expect((await batch.close()).completed).toBe((await q.batch(batch.id))!.completed);

    const empty = await q.openBatch({ onComplete: { task: 'done' }, onSuccess: { task: 'done' } });
    expect(await empty.close()).toMatchObject({ total: 0, state: 'succeeded' });
    expect((await q.getJob(`${empty.id}/complete`))?.state).toBe('waiting');
    expect((await q.getJob(`${empty.id}/success`))?.state).toBe('waiting');
  });

  it("a running job adds to its own closed batch (counted before it ends); a producer's add after the close is refused", async () => {
    const name = uniqueQueue('batch');
    const q = openQueue(name);
    const runs: string[] = [];
    const handlers: Handlers = {
      spawn: async (ctx) => {
        runs.push(ctx.job.id);
        const added = await ctx.batch!.submitBulk([{ task: 'leaf' }, { task: 'leaf' }]);
        return added.length;
      },
      leaf: async (ctx) => {
        runs.push(ctx.job.id);
        // a leaf is of the batch too, but a callback would read only
        expect(ctx.batch?.id).toBe(ctx.job.batch);
      },
      done: async (ctx) => {
        runs.push(ctx.job.id);
        await expect(ctx.batch!.submit({ task: 'leaf' })).rejects.toBeInstanceOf(BatchClosedError);
      },
    };
    const batch = await q.openBatch({ onComplete: { task: 'done' } });
    await batch.submit({ task: 'spawn' });
    await batch.close();
    await expect(batch.submit({ task: 'leaf' })).rejects.toMatchObject({ name: 'BatchClosedError', reason: 'closed' });
    expect((await q.batch(batch.id))!.total).toBe(1);
    const w = openWorker(name, handlers, { concurrency: 3 });
    await eventually(async () => (await q.getJob(`${batch.id}/complete`))?.state === 'success');
    await w.close();
    expect(await q.batch(batch.id)).toMatchObject({ total: 3, success: 3, pending: 0 });
    expect(runs.at(-1)).toBe(`${batch.id}/complete`);
    expect(runs.filter((r) => r === `${batch.id}/complete`).length).toBe(1);
  });

  it('a reshard refuses while a batch of the queue is not completed (it moves no batch), and nothing is written', async () => {
    const name = uniqueQueue('batch');
    const q = openQueue(name);
    const batch = await q.openBatch({ onComplete: { task: 'done' } });
    await expect(reshard(redisUrl(), name, { to: 2 })).rejects.toMatchObject({ name: 'ReshardRefusedError', reason: 'batches' });
    expect(await q.batch(batch.id)).toMatchObject({ state: 'open' });
    // (an empty batch completes at its close)
    await batch.close();
    expect(await reshard(redisUrl(), name, { to: 2 })).toMatchObject({ from: 1, to: 2 });
  });

  it('bad input is refused with a typed error naming it, and nothing is written', async () => {
    const name = uniqueQueue('batch');
    const q = openQueue(name);
    const r = rawClient();
    const keys = async () => (await r.keys(`{rota:${name}}:bt*`)).length;
    const cases: Array<[() => Promise<unknown>, string]> = [
      [() => q.openBatch({ onComplete: { task: '' } }), 'onComplete.task'],
      [() => q.openBatch({ onSuccess: { task: 't', id: 'x' } as never }), 'onSuccess.id'],
      [() => q.openBatch({ onSuccess: 'x' as never }), 'onSuccess'],
      [() => q.openBatch({ colour: 1 } as never), 'colour'],
      [() => q.openBatch({ group: '' }), 'group'],
      [() => q.openBatch({ description: 7 as never }), 'description'],
      [() => q.reopenBatch('not-a-batch'), 'id'],
      [() => q.batch(42 as never), 'id'],
    ];
    for (const [call, field] of cases) {
      const err = await call().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err, field).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).field, field).toBe(field);
    }
    expect(await keys()).toBe(0);
    const batch = await q.openBatch();
    const refused: Array<[() => Promise<unknown>, string]> = [
      [() => batch.submit({ task: 'w', dedup: { key: 'k' } }), 'dedup'],
      [() => batch.submitBulk([{ task: 'w' }, { task: '' }]), 'specs[1].task'],
      [() => batch.submit({ task: 'w', id: `${batch.id}/complete` }), 'id'],
      [() => batch.jobs({ limit: 1001 }), 'limit'],
    ];
    for (const [call, field] of refused) {
      const err = await call().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err, field).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).field, field).toBe(field);
    }
    // a batch id that was never opened
    const ghost = `${batch.id.slice(0, -5)}zz.${batch.id.slice(-3)}`;
    expect(await q.reopenBatch(ghost)).toBeNull();
    expect(await q.batch(ghost)).toBeNull();
    expect((await q.counts()).waiting ?? 0).toBe(0);
    expect(await q.batch(batch.id)).toMatchObject({ total: 0, state: 'open' });
    r.disconnect();
  });
});

describe('batches on a sharded queue over a Redis Cluster', () => {
  it("every job of a batch lives in the batch's shard, whatever its group; the callbacks run once", async () => {
    const cluster = await startCluster(3);
    const qc = new Cluster(cluster.startupNodes);
    const wc = new Cluster(cluster.startupNodes);
    try {
      const name = uniqueQueue('batch-cluster');
      const q = track(new Queue(name, { connection: qc, shards: 3 }));
      const { runs, handlers } = recording();
      const batch = await q.openBatch({ onComplete: { task: 'done' }, onSuccess: { task: 'done' }, group: 'tenant-7' });
      const jobs = await batch.submitBulk(
        Array.from({ length: 30 }, (_, i) => ({ task: 'work', group: `g${i}`, args: { n: i } })),
      );
      expect(new Set(jobs.map((j) => j.id.slice(-3)))).toEqual(new Set([batch.id.slice(-3)]));
      await batch.close();
      const w = track(new Worker(name, handlers, { connection: wc, shards: 3, concurrency: 8 }));
      await eventually(async () => (await q.getJob(`${batch.id}/success`))?.state === 'success', 30_000);
      await w.close();
      expect(await q.batch(batch.id)).toMatchObject({ total: 30, success: 30, state: 'succeeded' });
      expect(times(runs, `${batch.id}/complete`)).toBe(1);
      expect(times(runs, `${batch.id}/success`)).toBe(1);
      expect(new Set(runs).size).toBe(32);
    } finally {
      await closeAll();
      qc.disconnect();
      wc.disconnect();
      await cluster.destroy();
    }
  }, 60_000);
});

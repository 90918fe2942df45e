/**
 * Features built apart, used together: a delayed job that fans out, children in a rate-limited
 * group, clean and bulk retry on fan-out parents and children, and the wait a delayed job's
 * start is measured from.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type Job, PermanentError } from '../../src/index.js';
import { closeAll, eventually, openQueue, openWorker, streamEvents, uniqueQueue, until } from '../helpers/setup.js';

afterEach(closeAll);

/** The children.ended events of the queue's stream, as their counts. */
async function childrenEnded(name: string): Promise<unknown[]> {
  return (await streamEvents(name)).filter((e) => e.event === 'children.ended').map((e) => e.children);
}

describe('delays, rate limits and fan-out together', () => {
  it('runs a delayed parent at its due time; its children, in a rate-limited group, start no faster than the rate', async () => {
    const name = uniqueQueue('mix');
    const q = openQueue(name);
    const max = 3;
    const perMs = 1000;
    await q.setGroupLimit('kids', { rate: { max, perMs } });
    const parent = await q.submit({ task: 'parent', group: 'p', delay: 400 });
    expect(parent.state).toBe('delayed');
    const w = openWorker(
      name,
      {
        parent: (ctx) => ctx.fanOut([0, 1, 2, 3, 4, 5, 6], { task: 'child', group: 'kids' }),
        child: (ctx: { args: number }) => ctx.args,
      },
      { concurrency: 8 },
    );
    const done: Job[] = [];
    w.on('completed', (j) => done.push(j));
    await until(w, 'completed', () => done.filter((j) => j.task === 'child').length === 7, 30_000);

    const p = (await q.getJob(parent.id))!;
    expect(p.state).toBe('success');
    expect(p.runAt).toBe(parent.runAt);
    expect(p.started).toBeGreaterThanOrEqual(p.runAt!);
    const counts = await eventually(async () => {
      const c = (await q.getJob(parent.id))!.children;
      return c?.ended !== undefined && c;
    });
    expect({ ...counts, ended: undefined }).toEqual({
      total: 7,
      waiting: 0,
      running: 0,
      success: 7,
      failed: 0,
      cancelled: 0,
      removed: 0,
      ended: undefined,
    });
    expect(await childrenEnded(name)).toEqual([{ total: 7, success: 7, failed: 0, cancelled: 0 }]);

    // The rate counted each child when the queue handed it out (server clock): no window of
    // perMs holds more than max of them.
    const children = await Promise.all([0, 1, 2, 3, 4, 5, 6].map((i) => q.getJob(`${parent.id}/${i}`)));
    const taken = children.map((c) => c!.taken!).sort((a, b) => a - b);
    expect(taken.every((t) => Number.isFinite(t))).toBe(true);
    for (let i = max; i < taken.length; i++) expect(taken[i] - taken[i - max]).toBeGreaterThanOrEqual(perMs);
    expect(children.every((c) => c!.group === 'kids' && c!.parent === parent.id)).toBe(true);
  }, 40_000);
});

describe('delays and rate limits together', () => {
  it('jobs of a rate-limited group due at the same time become waiting together, then start no faster than the rate', async () => {
    const name = uniqueQueue('mix');
    const q = openQueue(name);
    await q.setGroupLimit('rated', { rate: { max: 2, perMs: 800 } });
    const runAt = Date.now() + 300;
    const jobs = await q.submitBulk(Array.from({ length: 6 }, (_, i) => ({ task: 't', group: 'rated', args: i, runAt })));
    expect((await q.counts()).delayed).toBe(6);
    const w = openWorker(name, { t: () => undefined }, { concurrency: 6 });
    const done: Job[] = [];
    w.on('completed', (j) => done.push(j));
    await until(w, 'completed', () => done.length === 6, 30_000);
    const stored = await Promise.all(jobs.map((j) => q.getJob(j.id)));
    const taken = stored.map((j) => j!.taken!).sort((a, b) => a - b);
    expect(taken[0]).toBeGreaterThanOrEqual(runAt);
    for (let i = 2; i < taken.length; i++) expect(taken[i] - taken[i - 2]).toBeGreaterThanOrEqual(800);
    expect(await q.counts()).toMatchObject({ delayed: 0, waiting: 0, success: 6 });
  }, 40_000);

  it('offers no due time for fan-out children: a delay option is refused, naming it, and the run may fan out again', async () => {
    const name = uniqueQueue('mix');
    const q = openQueue(name);
    const refused: unknown[] = [];
    openWorker(name, {
      parent: async (ctx) => {
        refused.push(await ctx.fanOut([1], { task: 'child', delay: 1000 } as never).catch((e: unknown) => e));
        refused.push(await ctx.fanOut([1], { task: 'child', runAt: Date.now() } as never).catch((e: unknown) => e));
        await ctx.fanOut([1], { task: 'child' });
      },
      child: () => undefined,
    });
    const parent = await q.submit({ task: 'parent' });
    await eventually(async () => (await q.getJob(parent.id))?.children?.ended !== undefined);
    expect(refused).toEqual([
      expect.objectContaining({ name: 'ValidationError', field: 'options.delay' }),
      expect.objectContaining({ name: 'ValidationError', field: 'options.runAt' }),
    ]);
    expect((await q.getJob(`${parent.id}/0`))!.runAt).toBeUndefined();
  });
});

describe('clean and bulk retry on fan-out', () => {
  it('retryFailed puts failed children back: their parent counts them not ended, and children.ended fires again', async () => {
    const name = uniqueQueue('mix');
    const q = openQueue(name);
    let fail = true;
    openWorker(name, {
      parent: (ctx) => ctx.fanOut(['a', 'b', 'c'], { task: 'child' }),
      child: (ctx: { args: string }) => {
        if (ctx.args !== 'a' && fail) throw new PermanentError('not yet');
      },
    });
    const parent = await q.submit({ task: 'parent' });
    const first = await eventually(async () => {
      const c = (await q.getJob(parent.id))?.children;
      return c?.ended !== undefined && c;
    });
    expect(first).toMatchObject({ total: 3, success: 1, failed: 2 });

    fail = false;
    await q.pauseGroup('default');
    expect(await q.retryFailed({ task: 'child' })).toBe(2);
    expect((await q.getJob(parent.id))!.children).toEqual({
      total: 3,
      waiting: 2,
      running: 0,
      success: 1,
      failed: 0,
      cancelled: 0,
      removed: 0,
    });
    await q.resumeGroup('default');
    const second = await eventually(async () => {
      const c = (await q.getJob(parent.id))!.children!;
      return c.success === 3 && c.ended !== undefined && c;
    });
    expect(second).toMatchObject({ total: 3, waiting: 0, running: 0, success: 3, failed: 0, cancelled: 0 });
    expect(await childrenEnded(name)).toEqual([
      { total: 3, success: 1, failed: 2, cancelled: 0 },
      { total: 3, success: 3, failed: 0, cancelled: 0 },
    ]);
  });

  it('clean removes finished children without changing their parent’s counts, and a cleaned parent is not written again', async () => {
    const name = uniqueQueue('mix');
    const q = openQueue(name);
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const w = openWorker(
      name,
      {
        parent: (ctx) => ctx.fanOut(['quick', 'quick', 'slow'], { task: 'child' }),
        child: async (ctx: { args: string }) => {
          if (ctx.args === 'slow') await held;
        },
      },
      { concurrency: 4 },
    );
    const done: Job[] = [];
    w.on('completed', (j) => done.push(j));
    const parent = await q.submit({ task: 'parent' });
    await until(w, 'completed', () => done.filter((j) => j.task === 'child').length === 2);
    // (the slow child runs on; the parent and two children are success)
    expect(await q.clean({ state: 'success' })).toBe(3);
    expect(await q.getJob(parent.id)).toBeNull();
    release();
    await until(w, 'completed', () => done.filter((j) => j.task === 'child').length === 3);
    expect((await q.getJob(`${parent.id}/2`))!.state).toBe('success');
    // the parent removed by the clean stays removed when its last child ends
    expect(await q.getJob(parent.id)).toBeNull();
    expect(await q.counts()).toMatchObject({ success: 1, running: 0, waiting: 0 });
  });

  it('keeps a parent’s counts when its finished children are cleaned', async () => {
    const name = uniqueQueue('mix');
    const q = openQueue(name);
    openWorker(name, {
      parent: (ctx) => ctx.fanOut([1, 2, 3], { task: 'child', group: 'kids' }),
      child: (ctx: { args: number }) => {
        if (ctx.args === 3) throw new PermanentError('no');
      },
    });
    const parent = await q.submit({ task: 'parent', group: 'p' });
    const before = await eventually(async () => {
      const c = (await q.getJob(parent.id))?.children;
      return c?.ended !== undefined && c;
    });
    expect(await q.clean({ state: 'success', group: 'kids' })).toBe(2);
    expect(await q.clean({ state: 'failed' })).toBe(1);
    expect((await q.getJob(parent.id))!.children).toEqual(before);
    expect(await q.getJob(`${parent.id}/0`)).toBeNull();
  });
});

/**
 * Fan-out (ctx.fanOut): children submitted with the parent's success, counted by state on the
 * parent, a children.ended event once, fair like any job, typed errors for bad input, and
 * idempotent under a redelivered finish.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  FanOutLimitError,
  type Handlers,
  type Job,
  MAX_FAN_OUT,
  PayloadTooLargeError,
  PermanentError,
  ValidationError,
} from '../../src/index.js';
import { packChildren, submitCommitted } from '../../src/queue/fanout.js';
import { addRun, QueueStore } from '../../src/redis/queue-store.js';
import { stageChildren } from '../../src/redis/side-writes.js';
import { OUTCOME } from '../../src/redis/wire.js';
import { closeAll, eventually, openQueue, openWorker, rawClient, streamEvents, uniqueQueue, until } from '../helpers/setup.js';

afterEach(closeAll);

/** Keys of the queue that hold fan-out staging or committed children not submitted yet. */
async function fanKeys(name: string): Promise<string[]> {
  const c = rawClient();
  try {
    const keys = await c.keys(`{rota:${name}}:fan*:*`);
    if ((await c.zcard(`{rota:${name}}:fanouts`)) > 0) keys.push('fanouts');
    return keys;
  } finally {
    c.disconnect();
  }
}

describe('fan-out', () => {
  it("bounds the children's args by the executor's maxArgsBytes, both ways", async () => {
    const name = uniqueQueue('fan-bytes');
    const q = openQueue(name);
    const big = 'x'.repeat(600 * 1024);
    const seen: Record<string, unknown> = {};
    const handlers: Handlers = {
      parent: async (ctx) => {
        try {
          await ctx.fanOut([{ s: 'x'.repeat((ctx.args as { n: number }).n) }], { task: 'child' });
          return 'fanned';
        } catch (err) {
          seen[ctx.job.id] = err;
          return 'refused';
        }
      },
      child: async (ctx: { args: { s: string } }) => ctx.args.s.length,
    };
    // a small bound refuses 2 KB of args, writing nothing
    const small = await q.submit({ task: 'parent', args: { n: 2048 } });
    const done = new Set<string>();
    const w1 = openWorker(name, handlers, { maxArgsBytes: 1024 });
    w1.on('completed', (j: Job) => done.add(j.id));
    await until(w1, 'completed', () => done.has(small.id));
    expect(seen[small.id]).toBeInstanceOf(PayloadTooLargeError);
    expect(await q.getJob(`${small.id}/0`)).toBeNull();
    expect(await fanKeys(name)).toEqual([]);
    await w1.close();
    // a bound above the default (512 KiB) takes 600 KiB
    const large = await q.submit({ task: 'parent', args: { n: big.length } });
    const w2 = openWorker(name, handlers, { maxArgsBytes: 1024 * 1024 });
    w2.on('completed', (j: Job) => done.add(j.id));
    await until(w2, 'completed', () => done.has(`${large.id}/0`));
    expect(seen[large.id]).toBeUndefined();
    expect((await q.getJob(`${large.id}/0`))?.result).toBe(big.length);
  });

  it('submits 2,500 children (three chunks) with the parent success: ids <parent>/<i>, each run once, counted, one children.ended event', async () => {
    const name = uniqueQueue('fan');
    const q = openQueue(name);
    const ran: string[] = [];
    const handlers: Handlers = {
      parent: async (ctx) => {
        await ctx.fanOut(
          Array.from({ length: 2500 }, (_, i) => ({ i })),
          { task: 'child' },
        );
        return 'fanned';
      },
      child: async (ctx: { job: Job; args: { i: number } }) => {
        ran.push(ctx.job.id);
        return ctx.args.i * 2;
      },
    };
    const parent = await q.submit({ task: 'parent', group: 'tenant-a', priority: 'high' });
    const w = openWorker(name, handlers, { concurrency: 8 });
    let children = 0;
    w.on('completed', (job) => {
      if (job.task === 'child') children++;
    });
    await until(w, 'completed', () => children === 2500, 60_000);

    const p = await q.getJob(parent.id);
    expect(p!.state).toBe('success');
    expect(p!.result).toBe('fanned');
    const counts = await eventually(async () => {
      const c = (await q.getJob(parent.id))!.children;
      return c?.ended !== undefined && c;
    });
    expect({ ...counts, ended: undefined }).toEqual({
      total: 2500,
      waiting: 0,
      running: 0,
      success: 2500,
      failed: 0,
      cancelled: 0,
      removed: 0,
      ended: undefined,
    });
    expect(counts.ended).toBeGreaterThanOrEqual(p!.finished!);
    expect(ran.length).toBe(2500);
    expect(new Set(ran)).toEqual(new Set(Array.from({ length: 2500 }, (_, i) => `${parent.id}/${i}`)));

    const child = await q.getJob(`${parent.id}/7`);
    expect(child).toMatchObject({ parent: parent.id, args: { i: 7 }, result: 14, group: 'tenant-a', priority: 'high' });
    expect(await q.getJob(`${parent.id}/2500`)).toBeNull();

    const ended = (await streamEvents(name)).filter((e) => e.event === 'children.ended');
    expect(ended).toEqual([
      expect.objectContaining({ id: parent.id, children: { total: 2500, success: 2500, failed: 0, cancelled: 0 } }),
    ]);
    expect(await fanKeys(name)).toEqual([]);
  }, 90_000);

  it('counts the children by state as they wait, run, fail and are cancelled', async () => {
    const name = uniqueQueue('fan');
    const q = openQueue(name);
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const w = openWorker(
      name,
      {
        parent: async (ctx) => ctx.fanOut(['ok', 'fail', 'block', 'cancel-me'], { task: 'child', group: 'kids' }),
        child: async (ctx: { args: string }) => {
          if (ctx.args === 'fail') throw new PermanentError('child failed');
          if (ctx.args === 'block') await released;
          return ctx.args;
        },
      },
      { concurrency: 4 },
    );
    await q.pauseGroup('kids');
    const parent = await q.submit({ task: 'parent' });
    const waiting = await eventually(async () => {
      const c = (await q.getJob(parent.id))?.children;
      return c?.waiting === 4 && c;
    });
    expect(waiting).toEqual({ total: 4, waiting: 4, running: 0, success: 0, failed: 0, cancelled: 0, removed: 0 });

    expect(await q.cancel(`${parent.id}/3`)).toBe('cancelled');
    expect((await q.getJob(parent.id))!.children).toMatchObject({ waiting: 3, cancelled: 1 });

    await q.resumeGroup('kids');
    const mid = await eventually(async () => {
      const c = (await q.getJob(parent.id))!.children!;
      return c.running === 1 && c.success === 1 && c.failed === 1 && c;
    });
    expect(mid).toEqual({ total: 4, waiting: 0, running: 1, success: 1, failed: 1, cancelled: 1, removed: 0 });
    expect((await streamEvents(name)).filter((e) => e.event === 'children.ended')).toEqual([]);

    release();
    const done = await eventually(async () => {
      const c = (await q.getJob(parent.id))!.children!;
      return c.ended !== undefined && c;
    });
    expect(done).toMatchObject({ total: 4, waiting: 0, running: 0, success: 2, failed: 1, cancelled: 1 });
    const ended = (await streamEvents(name)).filter((e) => e.event === 'children.ended');
    expect(ended).toEqual([
      expect.objectContaining({ id: parent.id, children: { total: 4, success: 2, failed: 1, cancelled: 1 } }),
    ]);
    void w;
  });

  it('submits no child for a run that fails after fanning out; the retry submits each child once', async () => {
    const name = uniqueQueue('fan');
    const q = openQueue(name);
    const ran: string[] = [];
    const w = openWorker(
      name,
      {
        parent: async (ctx) => {
          await ctx.fanOut([0, 1, 2, 3, 4], { task: 'child' });
          if (ctx.job.retries === 0) {
            // the first attempt's children must not exist: they were only staged
            expect(await q.getJob(`${ctx.job.id}/0`)).toBeNull();
            throw new Error('first attempt fails after its fan-out');
          }
        },
        child: (ctx) => {
          ran.push(ctx.job.id);
        },
      },
      { concurrency: 2, retryDelay: 20 },
    );
    const parent = await q.submit({ task: 'parent' });
    let stuck = 0;
    w.on('stuck', () => stuck++);
    await eventually(async () => (await q.getJob(parent.id))?.children?.ended);
    expect(stuck).toBe(1);
    expect((await q.getJob(parent.id))!.retries).toBe(1);
    expect(ran.sort()).toEqual([0, 1, 2, 3, 4].map((i) => `${parent.id}/${i}`));
    // each child entered `waiting` once
    const waitingEvents = (await streamEvents(name)).filter((e) => e.state === 'waiting' && e.id.startsWith(`${parent.id}/`));
    expect(waitingEvents.length).toBe(5);
    await eventually(async () => (await fanKeys(name)).length === 0);
  });

  it('refuses more than 100,000 items, a bad item and a bad option with typed errors, writing nothing; a good call after them fans out', async () => {
    const name = uniqueQueue('fan');
    const q = openQueue(name);
    const errors: unknown[] = [];
    let keysAfterRefusals: string[] = [];
    const w = openWorker(name, {
      parent: async (ctx) => {
        for (const attempt of [
          () => ctx.fanOut(new Array(MAX_FAN_OUT + 1).fill(0), { task: 'child' }),
          () => ctx.fanOut([1, () => 2], { task: 'child' }),
          () => ctx.fanOut([1], { task: 'child', grop: 'x' } as never),
          () => ctx.fanOut([1], { task: '' }),
        ]) {
          await attempt().then(
            () => errors.push('resolved'),
            (err: unknown) => errors.push(err),
          );
        }
        keysAfterRefusals = await fanKeys(name);
        await ctx.fanOut(['a', 'b'], { task: 'child' });
        return 'done';
      },
      child: () => {},
    });
    const parent = await q.submit({ task: 'parent' });
    await until(w, 'completed', () => errors.length === 4);
    expect(errors[0]).toBeInstanceOf(FanOutLimitError);
    expect(errors[0]).toMatchObject({ field: 'items', count: MAX_FAN_OUT + 1, limit: MAX_FAN_OUT });
    expect(errors[1]).toBeInstanceOf(ValidationError);
    expect((errors[1] as ValidationError).field).toBe('items[1]');
    expect((errors[2] as ValidationError).field).toBe('options.grop');
    expect((errors[3] as ValidationError).field).toBe('options.task');
    expect(keysAfterRefusals).toEqual([]);
    const p = await eventually(async () => {
      const job = await q.getJob(parent.id);
      return job?.children?.ended !== undefined && job;
    });
    expect(p.state).toBe('success');
    expect(p.children).toMatchObject({ total: 2, success: 2 });
    expect(await q.getJob(`${parent.id}/1`)).toMatchObject({ args: 'b', state: 'success' });
  });

  it('keeps children fair: they take turns with other groups', async () => {
    const name = uniqueQueue('fan');
    const q = openQueue(name);
    const order: string[] = [];
    const w = openWorker(
      name,
      {
        parent: (ctx) => ctx.fanOut(new Array(200).fill(null), { task: 'work', group: 'kids' }),
        work: (ctx) => {
          order.push(ctx.job.group);
        },
      },
      { concurrency: 1 },
    );
    await q.pauseGroup('kids');
    await q.pauseGroup('other');
    const parent = await q.submit({ task: 'parent' });
    await eventually(async () => (await q.getJob(parent.id))?.children?.waiting === 200);
    await q.submitBulk(Array.from({ length: 5 }, () => ({ task: 'work', group: 'other' })));
    await q.resumeGroup('kids');
    await q.resumeGroup('other');
    await until(w, 'completed', () => order.length === 205, 30_000);
    // round-robin: the five others among the first eleven runs, not after the 200 children
    expect(order.slice(0, 11).filter((g) => g === 'other').length).toBe(5);
  });

  it('commits the children once when the finish is sent twice (redelivered), and submits each once when pumped at once by two callers', async () => {
    const name = uniqueQueue('fan');
    const q = openQueue(name);
    const c = rawClient();
    const store = new QueueStore(c, name, { maxEvents: 1000 });
    const other = new QueueStore(c, name, { maxEvents: 1000 });
    const parent = await q.submit({ task: 'parent', group: 'g' });
    const settings = { workerId: 'w1', countingScheme: [2, 1] as const, leaseMs: 30_000, retryDelay: 100 };
    const { jobs } = await store.take(1, settings);
    expect(jobs.map((j) => j.id)).toEqual([parent.id]);
    const job = jobs[0];
    const packed = await packChildren(job, new Array(2500).fill('x'), { task: 'child' }, 1 << 20);
    await stageChildren(c, store.keys, job.id, String(job.takeSeq), packed.total, packed.chunks);
    const runs: Parameters<typeof addRun>[0] = [];
    addRun(runs, job.id, String(job.takeSeq), OUTCOME.fannedOut, true, '');
    const keep = { succeeded: -1, failed: -1 };
    const first = await store.finish(settings, keep, 0, runs);
    const again = await store.finish(settings, keep, 0, runs);
    expect(first.states).toEqual(['success']);
    expect(again.states).toEqual(['success']);
    await Promise.all([submitCommitted(store, job.id), submitCommitted(other)]);
    expect((await q.counts()).waiting).toBe(2500);
    expect((await q.getJob(parent.id))!.children).toMatchObject({ total: 2500, waiting: 2500 });
    const waitingEvents = (await streamEvents(name)).filter((e) => e.state === 'waiting' && e.id.startsWith(`${parent.id}/`));
    expect(waitingEvents.length).toBe(2500);
    expect(await fanKeys(name)).toEqual([]);
    c.disconnect();
  });

  it('fails (to retry) a run whose staged children are gone by its finish, committing nothing', async () => {
    const name = uniqueQueue('fan');
    const q = openQueue(name);
    const c = rawClient();
    const store = new QueueStore(c, name, { maxEvents: 1000 });
    const parent = await q.submit({ task: 'parent', group: 'g' });
    const settings = { workerId: 'w1', countingScheme: [2, 1] as const, leaseMs: 30_000, retryDelay: 100 };
    const [job] = (await store.take(1, settings)).jobs;
    const packed = await packChildren(job, [1, 2, 3], { task: 'child' }, 1 << 20);
    await stageChildren(c, store.keys, job.id, String(job.takeSeq), packed.total, packed.chunks);
    // as if its time to live had passed
    await c.del(store.keys.fanStaging(job.id, String(job.takeSeq)));
    const runs: Parameters<typeof addRun>[0] = [];
    addRun(runs, job.id, String(job.takeSeq), OUTCOME.fannedOut, true, '');
    const { states } = await store.finish(settings, { succeeded: -1, failed: -1 }, 0, runs);
    expect(states).toEqual(['stuck']);
    const p = (await q.getJob(parent.id))!;
    expect(p.error).toMatch(/children this run staged .* are gone/);
    expect(p.children).toBeUndefined();
    expect(await q.getJob(`${parent.id}/0`)).toBeNull();
    expect((await q.groups()).find((g) => g.group === 'g')).toMatchObject({ stuck: 1 });
    c.disconnect();
  });

  it('counts a failed child retried by hand as not ended again, and raises children.ended again when it ends', async () => {
    const name = uniqueQueue('fan');
    const q = openQueue(name);
    let fail = true;
    openWorker(name, {
      parent: (ctx) => ctx.fanOut(['a', 'b'], { task: 'child' }),
      child: (ctx: { args: string }) => {
        if (ctx.args === 'b' && fail) throw new PermanentError('not yet');
      },
    });
    const parent = await q.submit({ task: 'parent' });
    const first = await eventually(async () => {
      const c = (await q.getJob(parent.id))?.children;
      return c?.ended !== undefined && c;
    });
    expect(first).toMatchObject({ total: 2, success: 1, failed: 1 });
    fail = false;
    await q.pauseGroup('default');
    expect(await q.retry(`${parent.id}/1`)).toBe('waiting');
    expect((await q.getJob(parent.id))!.children).toEqual({
      total: 2,
      waiting: 1,
      running: 0,
      success: 1,
      failed: 0,
      cancelled: 0,
      removed: 0,
    });
    await q.resumeGroup('default');
    const second = await eventually(async () => {
      const c = (await q.getJob(parent.id))!.children!;
      return c.success === 2 && c;
    });
    expect(second).toMatchObject({ total: 2, waiting: 0, running: 0, success: 2, failed: 0, cancelled: 0 });
    const ended = (await streamEvents(name)).filter((e) => e.event === 'children.ended');
    expect(ended.map((e) => e.children)).toEqual([
      { total: 2, success: 1, failed: 1, cancelled: 0 },
      { total: 2, success: 2, failed: 0, cancelled: 0 },
    ]);
  });

  it('refuses a submit of a child id <parent>/<digits> before its parent fans out, writing nothing; the real child runs', async () => {
    const name = uniqueQueue('fan');
    const q = openQueue(name);
    const planted = { id: 'order-42/0', task: 'planted', args: { evil: true } };
    await expect(q.submit(planted)).rejects.toThrow(ValidationError);
    await expect(q.submit(planted)).rejects.toThrow(/^id: ends in \/<digits>/);
    await expect(q.submitBulk([{ task: 'ok' }, { ...planted, id: 'order-42/0/7' }])).rejects.toThrow(/^specs\[1\]\.id:/);
    // ids that only look alike are a caller's to take
    await q.submitBulk(['order-42/a', 'order-42/0x', 'order/42-0'].map((id) => ({ id, task: 'other' })));
    const c = rawClient();
    try {
      expect(await c.exists(q.keys.job('order-42/0'), q.keys.job('order-42/0/7'))).toBe(0);
    } finally {
      c.disconnect();
    }
    expect((await q.counts()).waiting).toBe(3);

    const ran: Array<{ id: string; task: string; args: unknown }> = [];
    const w = openWorker(name, {
      parent: async (ctx) => ctx.fanOut([{ line: 1 }], { task: 'child' }),
      child: async (ctx) => void ran.push({ id: ctx.job.id, task: ctx.job.task, args: ctx.args }),
      planted: async () => void ran.push({ id: 'planted', task: 'planted', args: null }),
      other: async () => undefined,
    });
    await q.submit({ id: 'order-42', task: 'parent' });
    const ended = await eventually(async () => (await streamEvents(name)).find((e) => e.event === 'children.ended'));
    expect(ended).toMatchObject({ id: 'order-42', children: { total: 1, success: 1, failed: 0, cancelled: 0 } });
    expect(ran).toEqual([{ id: 'order-42/0', task: 'child', args: { line: 1 } }]);
    void w;
  });

  it('counts a child whose lease expired as not running (recovered to retry) and a started child as running', async () => {
    const name = uniqueQueue('fan');
    const q = openQueue(name);
    const c = rawClient();
    const store = new QueueStore(c, name, { maxEvents: 1000 });
    const parent = await q.submit({ task: 'parent' });
    const settings = { workerId: 'w1', countingScheme: [2, 1] as const, leaseMs: 30_000, retryDelay: 100 };
    const [job] = (await store.take(1, settings)).jobs;
    const packed = await packChildren(job, ['only'], { task: 'child' }, 1 << 20);
    await stageChildren(c, store.keys, job.id, String(job.takeSeq), packed.total, packed.chunks);
    const runs: Parameters<typeof addRun>[0] = [];
    addRun(runs, job.id, String(job.takeSeq), OUTCOME.fannedOut, true, '');
    await store.finish(settings, { succeeded: -1, failed: -1 }, 0, runs);
    await submitCommitted(store, job.id);

    const [child] = (await store.take(1, { ...settings, leaseMs: 1 })).jobs;
    expect(child).toMatchObject({ id: `${parent.id}/0`, parent: parent.id });
    await store.start(1, [child]);
    expect((await q.getJob(parent.id))!.children).toMatchObject({ total: 1, running: 1, waiting: 0 });
    await eventually(async () => {
      const { recovered } = await store.recover({
        retryDelay: 10,
        maxLeases: 100,
        keepSucceededAgeMs: -1,
        keepFailedAgeMs: -1,
        maxRemoved: 0,
      });
      return recovered.includes(child.id);
    });
    expect((await q.getJob(child.id))!.state).toBe('stuck');
    expect((await q.getJob(parent.id))!.children).toMatchObject({ total: 1, running: 0, waiting: 1, failed: 0 });
    c.disconnect();
  });
});

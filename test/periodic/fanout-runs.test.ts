/**
 * A periodic run whose job fanned out (ctx.fanOut) ends in the run history when its children
 * end, failed when one of them failed (with a periodic.failed event for the run).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PeriodicTasks, PermanentError, Queue, Scheduler, Worker } from '../../src/index.js';
import { parseEntry } from '../../src/queue/events.js';
import { closeAll, eventually, redisUrl, track, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);

describe('periodic runs that fan out', () => {
  it('stay running until their children end; then end failed when a child failed, success otherwise', async () => {
    const name = uniqueQueue('fanruns');
    const tasks = track(new PeriodicTasks(name, { connection: redisUrl() }));
    const queue = track(new Queue(name, { connection: redisUrl() }));
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    track(
      new Worker(
        name,
        {
          sweep: (ctx: { args: { fail: boolean }; fanOut: (items: unknown[], o: { task: string }) => Promise<void> }) =>
            ctx.fanOut(ctx.args.fail ? ['ok', 'fail', 'wait'] : ['ok', 'wait'], { task: 'part' }),
          part: async (ctx: { args: string }) => {
            if (ctx.args === 'fail') throw new PermanentError('part failed');
            if (ctx.args === 'wait') await released;
          },
        },
        { connection: redisUrl(), concurrency: 4 },
      ),
    );
    await tasks.upsert({ id: 'bad', task: 'sweep', timer: 'every 1h', args: { fail: true } });
    await tasks.upsert({ id: 'good', task: 'sweep', timer: 'every 1h', args: { fail: false } });
    await track(new Scheduler(name, { connection: redisUrl() })).start();
    const bad = await tasks.trigger('bad');
    const good = await tasks.trigger('good');

    // The parents succeed at once; their runs go on while a child waits.
    await eventually(async () => (await queue.getJob(bad!.jobId))?.children?.failed === 1);
    await eventually(async () => (await queue.getJob(good!.jobId))?.children?.success === 1);
    expect((await queue.getJob(bad!.jobId))!.state).toBe('success');
    const running = (await tasks.runs('bad')).find((r) => r.jobId === bad!.jobId)!;
    expect(running.status).toBe('running');
    expect(running.finished).toBeUndefined();
    expect(running.children).toMatchObject({ total: 3, running: 1, success: 1, failed: 1 });

    release();
    const badRun = await eventually(async () => {
      const r = (await tasks.runs('bad')).find((x) => x.jobId === bad!.jobId);
      return r?.status !== 'running' && r;
    });
    const goodRun = await eventually(async () => {
      const r = (await tasks.runs('good')).find((x) => x.jobId === good!.jobId);
      return r?.status !== 'running' && r;
    });
    expect(badRun.status).toBe('failed');
    expect(badRun.children).toMatchObject({ total: 3, success: 2, failed: 1, waiting: 0, running: 0 });
    expect(badRun.finished).toBe(badRun.children!.ended);
    expect(badRun.finished).toBeGreaterThanOrEqual((await queue.getJob(bad!.jobId))!.finished!);
    expect(goodRun.status).toBe('success');
    expect(goodRun.finished).toBe(goodRun.children!.ended);

    // The failed run raised one periodic.failed event (the good one none).
    const entries = (await queue.client.xrange(queue.keys.events, '-', '+')) as Array<[string, string[]]>;
    const alerts = entries.flatMap(([sid, f]) => parseEntry(sid, f)).filter((e) => e.event === 'periodic.failed');
    expect(alerts).toEqual([
      expect.objectContaining({
        id: bad!.jobId,
        state: 'failed',
        error: '1 of 3 children failed',
        periodic: { task: 'bad', occurrence: bad!.occurrence },
      }),
    ]);
  });

  it("the overlap policy counts a fanned-out run as running until its children end: 'skip' skips the next occurrence meanwhile", async () => {
    const name = uniqueQueue('fanskip');
    const tasks = track(new PeriodicTasks(name, { connection: redisUrl() }));
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let parts = 0;
    track(
      new Worker(
        name,
        {
          sweep: (ctx: { fanOut: (items: unknown[], o: { task: string }) => Promise<void> }) =>
            ctx.fanOut(['a', 'b'], { task: 'part' }),
          part: async () => {
            parts += 1;
            await released;
          },
        },
        { connection: redisUrl(), concurrency: 4 },
      ),
    );
    await tasks.upsert({ id: 'sweep', task: 'sweep', timer: 'every 1h', overlap: 'skip' });
    await track(new Scheduler(name, { connection: redisUrl() })).start();
    const first = (await tasks.trigger('sweep'))!;
    await eventually(async () => parts === 2);
    const second = (await tasks.trigger('sweep'))!;
    const skipped = await eventually(async () =>
      (await tasks.runs('sweep')).find((r) => r.occurrence === second.occurrence && r.status === 'skipped'),
    );
    expect(skipped).toBeDefined();
    release();
    await eventually(async () => (await tasks.runs('sweep')).find((r) => r.jobId === first.jobId)?.status === 'success');
    const third = (await tasks.trigger('sweep'))!;
    await eventually(async () => (await tasks.runs('sweep')).find((r) => r.jobId === third.jobId)?.status === 'success');
    expect(parts).toBe(4);
  });

  it("'cancel-previous' starts the next run while the children of the last still run, and cancels none of them (its job has ended)", async () => {
    const name = uniqueQueue('fancancel');
    const tasks = track(new PeriodicTasks(name, { connection: redisUrl() }));
    const queue = track(new Queue(name, { connection: redisUrl() }));
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let sweeps = 0;
    let parts = 0;
    track(
      new Worker(
        name,
        {
          sweep: (ctx) => {
            sweeps += 1;
            // only the first run fans out
            return sweeps === 1 ? ctx.fanOut(['a', 'b'], { task: 'part' }) : 'alone';
          },
          part: async () => {
            parts += 1;
            await released;
          },
        },
        { connection: redisUrl(), concurrency: 4 },
      ),
    );
    await tasks.upsert({ id: 'sweep', task: 'sweep', timer: 'every 1h', overlap: 'cancel-previous' });
    await track(new Scheduler(name, { connection: redisUrl() })).start();
    const first = (await tasks.trigger('sweep'))!;
    await eventually(async () => parts === 2);
    const second = (await tasks.trigger('sweep'))!;
    await eventually(async () => (await queue.getJob(second.jobId))?.state === 'success');
    // the first run's children were not cancelled: they end as they run
    const running = (await queue.getJob(first.jobId))!.children!;
    expect(running).toMatchObject({ total: 2, running: 2, cancelled: 0 });
    release();
    const ended = await eventually(async () => {
      const c = (await queue.getJob(first.jobId))!.children!;
      return c.ended !== undefined && c;
    });
    expect(ended).toMatchObject({ total: 2, success: 2, cancelled: 0 });
    await eventually(async () => (await tasks.runs('sweep')).find((r) => r.jobId === first.jobId)?.status === 'success');
  });
});

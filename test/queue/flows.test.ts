/**
 * Flows, chains and fan-in (docs/jobs.md#flows): a parent waits in `waiting-children` until its
 * children have ended, then runs and reads their results; failure policies; cancel and retry.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type Handlers, type Job, PermanentError, ValidationError } from '../../src/index.js';
import { closeAll, eventually, openQueue, openWorker, streamEvents, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);

/** Resolves once job `id` is in `state` (polled). */
async function stateOf(q: ReturnType<typeof openQueue>, id: string, state: string): Promise<Job> {
  return eventually(async () => {
    const j = await q.getJob(id);
    return j?.state === state && j;
  }, 30_000);
}

describe('flows', () => {
  it('a parent waits in waiting-children (counted) until its children end, then runs once and reads their results; two levels', async () => {
    const name = uniqueQueue('flow');
    const q = openQueue(name);
    const order: string[] = [];
    const seen: unknown[] = [];
    const handlers: Handlers = {
      leaf: async (ctx) => {
        order.push(ctx.job.id);
        return (ctx.args as { n: number }).n * 10;
      },
      mid: async (ctx) => {
        order.push(ctx.job.id);
        const page = await ctx.children<number>();
        return page.items.reduce((a, c) => a + (c.result ?? 0), 0);
      },
      root: async (ctx) => {
        order.push(ctx.job.id);
        const page = await ctx.children<number>({ offset: 1, limit: 5 });
        seen.push(page);
        return 'done';
      },
    };
    const tree = await q.submitFlow({
      task: 'root',
      group: 'g',
      children: [
        {
          task: 'mid',
          children: [
            { task: 'leaf', args: { n: 1 } },
            { task: 'leaf', args: { n: 2 } },
          ],
        },
        { task: 'leaf', args: { n: 3 } },
      ],
    });
    const mid = tree.children![0].id;
    expect(tree.children!.map((c) => c.id)).toEqual([`${tree.id}/0`, `${tree.id}/1`]);
    expect(tree.children![0].children!.map((c) => c.id)).toEqual([`${mid}/0`, `${mid}/1`]);
    expect((await q.getJob(tree.id))!.state).toBe('waiting-children');
    expect((await q.getJob(mid))!.state).toBe('waiting-children');
    expect((await q.counts())['waiting-children']).toBe(2);
    expect((await q.counts()).waiting).toBe(3);

    const w = openWorker(name, handlers, { concurrency: 4 });
    await stateOf(q, tree.id, 'success');
    await w.close();
    // each ran once; a parent after all of its children
    expect(order.length).toBe(5);
    expect(new Set(order).size).toBe(5);
    expect(order.indexOf(mid)).toBeGreaterThan(Math.max(order.indexOf(`${mid}/0`), order.indexOf(`${mid}/1`)));
    expect(order.at(-1)).toBe(tree.id);
    expect((await q.getJob(mid))!.result).toBe(30);
    expect(seen).toEqual([
      {
        counts: expect.objectContaining({ total: 2, success: 2, failed: 0, waiting: 0 }),
        items: [{ id: `${tree.id}/1`, state: 'success', result: 30 }],
      },
    ]);
    expect((await q.counts())['waiting-children']).toBe(0);
    const released = (await streamEvents(name)).filter((e) => e.event === 'flow.released');
    expect(released.map((e) => e.id).sort()).toEqual([tree.id, mid].sort());

    const t = await q.jobTree(tree.id);
    expect(t!.children!.map((c) => c.job.id)).toEqual([mid, `${tree.id}/1`]);
    expect(t!.children![0].children!.map((c) => c.job.state)).toEqual(['success', 'success']);
  });

  it('refuses bad flows with a ValidationError naming the field, writing nothing', async () => {
    const name = uniqueQueue('flowbad');
    const q = openQueue(name);
    const bad: Array<[unknown, string]> = [
      [{ task: 'a' }, 'children'],
      [{ task: 'a', children: [] }, 'children'],
      [{ task: 'a', children: [{ task: '' }] }, 'children[0].task'],
      [{ task: 'a', children: [{ task: 'b', onFailure: 'explode' }] }, 'children[0].onFailure'],
      [{ task: 'a', children: [{ task: 'b', id: 'x' }] }, 'children[0].id'],
      [{ task: 'a', children: [{ task: 'b', delay: 5 }] }, 'children[0].delay'],
      [{ task: 'a', onFailure: 'ignore', children: [{ task: 'b' }] }, 'onFailure'],
      [{ task: 'a', children: [{ task: 'b', children: [{ task: 'c', nope: 1 }] }] }, 'children[0].children[0].nope'],
    ];
    for (const [flow, field] of bad) {
      const err = await q.submitFlow(flow as never).catch((e: unknown) => e);
      expect(err, JSON.stringify(flow)).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).message).toContain(field);
    }
    await expect(q.submitChain([{ task: 'a' }])).rejects.toBeInstanceOf(ValidationError);
    expect(Object.values(await q.counts()).reduce((a, b) => a + b, 0)).toBe(0);
  });

  it('a given root id is idempotent: the second submit writes nothing', async () => {
    const name = uniqueQueue('flowid');
    const q = openQueue(name);
    const flow = { id: 'report-7', task: 'root', children: [{ task: 'leaf' }, { task: 'leaf' }] };
    await q.submitFlow(flow);
    await q.submitFlow(flow);
    const c = await q.counts();
    expect(c['waiting-children']).toBe(1);
    expect(c.waiting).toBe(2);
  });

  it('failure policies: fail fails the parent at once, ignore and remove let it run when all ended, continue releases it at once', async () => {
    const name = uniqueQueue('flowpol');
    const q = openQueue(name);
    const gate: { open?: () => void } = {};
    const opened = new Promise<void>((r) => {
      gate.open = r;
    });
    const parentRan: Record<string, unknown> = {};
    const handlers: Handlers = {
      bad: async () => {
        throw new PermanentError('no');
      },
      slow: async () => {
        await opened;
        return 'slow';
      },
      parent: async (ctx) => {
        parentRan[ctx.job.id] = (await ctx.children()).counts;
        return 'ran';
      },
    };
    const fail = await q.submitFlow({ task: 'parent', children: [{ task: 'bad' }, { task: 'slow' }] });
    const ignore = await q.submitFlow({ task: 'parent', children: [{ task: 'bad', onFailure: 'ignore' }, { task: 'slow' }] });
    const remove = await q.submitFlow({ task: 'parent', children: [{ task: 'bad', onFailure: 'remove' }, { task: 'slow' }] });
    const cont = await q.submitFlow({ task: 'parent', children: [{ task: 'bad', onFailure: 'continue' }, { task: 'slow' }] });
    const w = openWorker(name, handlers, { concurrency: 8 });

    const failed = await stateOf(q, fail.id, 'failed');
    expect(failed.error).toBe(`child ${fail.id}/0 failed`);
    expect(failed.failedBy).toBe(`${fail.id}/0`);
    await stateOf(q, cont.id, 'success');
    expect(parentRan[cont.id]).toMatchObject({ failed: 1, running: 1 });
    // ignore and remove wait for the slow child
    expect((await q.getJob(ignore.id))!.state).toBe('waiting-children');
    expect((await q.getJob(remove.id))!.state).toBe('waiting-children');
    gate.open!();
    await stateOf(q, ignore.id, 'success');
    await stateOf(q, remove.id, 'success');
    expect(parentRan[ignore.id]).toMatchObject({ total: 2, success: 1, failed: 1, removed: 0 });
    expect(parentRan[remove.id]).toMatchObject({ total: 2, success: 1, failed: 0, removed: 1 });
    await w.close();
    expect(Object.keys(parentRan).sort()).toEqual([cont.id, ignore.id, remove.id].sort());
  });

  it('a failure climbs the tree; retrying the failed leaf re-opens every waiter it failed, and each then runs once', async () => {
    const name = uniqueQueue('flowretry');
    const q = openQueue(name);
    let fixed = false;
    const runs: string[] = [];
    const handlers: Handlers = {
      flaky: async (ctx) => {
        runs.push(ctx.job.id);
        if (!fixed) throw new PermanentError('not yet');
        return 1;
      },
      ok: async (ctx) => {
        runs.push(ctx.job.id);
        return 1;
      },
    };
    const tree = await q.submitFlow({ task: 'ok', children: [{ task: 'ok', children: [{ task: 'flaky' }] }, { task: 'ok' }] });
    const mid = `${tree.id}/0`;
    const leaf = `${mid}/0`;
    const w = openWorker(name, handlers, { concurrency: 4 });
    await stateOf(q, tree.id, 'failed');
    expect((await q.getJob(mid))!).toMatchObject({ state: 'failed', failedBy: leaf });
    expect((await q.getJob(tree.id))!).toMatchObject({ state: 'failed', failedBy: mid });
    fixed = true;
    // retrying the root retries what failed it (the group paused, so that nothing runs meanwhile)
    await q.pauseGroup('default');
    expect(await q.retry(tree.id)).toBe('waiting');
    expect((await q.getJob(tree.id))!.state).toBe('waiting-children');
    expect((await q.getJob(mid))!.state).toBe('waiting-children');
    expect((await q.getJob(leaf))!.state).toBe('waiting');
    await q.resumeGroup('default');
    await stateOf(q, tree.id, 'success');
    await w.close();
    expect(runs.filter((r) => r === leaf).length).toBe(2);
    expect(runs.filter((r) => r === mid).length).toBe(1);
    expect(runs.filter((r) => r === tree.id).length).toBe(1);
    expect((await q.getJob(tree.id))!.children).toMatchObject({ success: 2, failed: 0 });
  });

  it('a retried child of a parent that already ran does not run the parent again', async () => {
    const name = uniqueQueue('flowagain');
    const q = openQueue(name);
    const runs: string[] = [];
    const handlers: Handlers = {
      bad: async (ctx) => {
        runs.push(ctx.job.id);
        throw new PermanentError('no');
      },
      parent: async (ctx) => {
        runs.push(ctx.job.id);
      },
    };
    const tree = await q.submitFlow({ task: 'parent', children: [{ task: 'bad', onFailure: 'ignore' }] });
    const w = openWorker(name, handlers, { concurrency: 2 });
    await stateOf(q, tree.id, 'success');
    await q.retry(`${tree.id}/0`);
    await eventually(
      async () => runs.filter((r) => r === `${tree.id}/0`).length === 2 && (await q.getJob(`${tree.id}/0`))?.state === 'failed',
    );
    await w.close();
    expect(runs.filter((r) => r === tree.id).length).toBe(1);
  });

  it('cancelling a parent with children: true cancels its waiting children, down the tree', async () => {
    const name = uniqueQueue('flowcancel');
    const q = openQueue(name);
    const tree = await q.submitFlow({
      task: 'p',
      children: [{ task: 'm', children: [{ task: 'l' }, { task: 'l' }] }, { task: 'l' }],
    });
    expect(await q.cancel(tree.id, { children: true })).toBe('cancelled');
    const c = await q.counts();
    expect(c.cancelled).toBe(5);
    expect(c.waiting + c['waiting-children']).toBe(0);
    await expect(q.cancel(tree.id, { children: 'yes' } as never)).rejects.toBeInstanceOf(ValidationError);
  });

  it('a chain runs its steps in order, each reading the result of the one before', async () => {
    const name = uniqueQueue('chain');
    const q = openQueue(name);
    const handlers: Handlers = {
      step: async (ctx) => {
        const prev = (await ctx.children<string>()).items[0]?.result ?? '';
        return `${prev}${(ctx.args as { s: string }).s}`;
      },
    };
    const ids = await q.submitChain([
      { task: 'step', args: { s: 'a' } },
      { task: 'step', args: { s: 'b' } },
      { task: 'step', args: { s: 'c' } },
    ]);
    expect(ids).toHaveLength(3);
    const w = openWorker(name, handlers, { concurrency: 3 });
    const last = await stateOf(q, ids[2], 'success');
    await w.close();
    expect(last.result).toBe('abc');
    expect((await q.getJob(ids[0]))!.result).toBe('a');
  });
});

describe('fan-in (ctx.fanOut after)', () => {
  it('the continuation waits, is released by the last child end, runs once and reads counts and results', async () => {
    const name = uniqueQueue('fanin');
    const q = openQueue(name);
    const got: unknown[] = [];
    const handlers: Handlers = {
      split: async (ctx) => {
        await ctx.fanOut([1, 2, 3], { task: 'square', after: { task: 'sum', args: { label: 'x' } } });
        return 'split';
      },
      square: async (ctx) => (ctx.args as number) ** 2,
      sum: async (ctx) => {
        const page = await ctx.children<number>();
        got.push({ args: ctx.args, counts: page.counts });
        return page.items.reduce((a, c) => a + (c.result ?? 0), 0);
      },
    };
    const parent = await q.submit({ task: 'split', group: 'g' });
    const w = openWorker(name, handlers, { concurrency: 4 });
    const cont = await stateOf(q, `${parent.id}/after`, 'success');
    await w.close();
    expect(cont.result).toBe(14);
    expect(got).toEqual([{ args: { label: 'x' }, counts: expect.objectContaining({ total: 3, success: 3 }) }]);
    expect((await q.getJob(parent.id))!.continuation).toBe(`${parent.id}/after`);
  });

  it('an empty fan-out releases its continuation at once; a failed child fails it (default) or not (ignore)', async () => {
    const name = uniqueQueue('fanin2');
    const q = openQueue(name);
    const handlers: Handlers = {
      none: async (ctx) => ctx.fanOut([], { task: 'x', after: { task: 'after' } }),
      some: async (ctx) =>
        ctx.fanOut([1], { task: 'bad', after: { task: 'after' }, onFailure: (ctx.args as { p: 'fail' | 'ignore' }).p }),
      bad: async () => {
        throw new PermanentError('no');
      },
      after: async () => 'after',
    };
    const a = await q.submit({ task: 'none' });
    const b = await q.submit({ task: 'some', args: { p: 'fail' } });
    const c = await q.submit({ task: 'some', args: { p: 'ignore' } });
    const w = openWorker(name, handlers, { concurrency: 4 });
    await stateOf(q, `${a.id}/after`, 'success');
    expect((await stateOf(q, `${b.id}/after`, 'failed')).error).toBe(`child ${b.id}/0 failed`);
    await stateOf(q, `${c.id}/after`, 'success');
    await w.close();
  });

  it('refuses a bad then or onFailure with a ValidationError, failing nothing staged', async () => {
    const name = uniqueQueue('fanin3');
    const q = openQueue(name);
    const errors: string[] = [];
    const handlers: Handlers = {
      p: async (ctx) => {
        for (const opts of [
          { task: 'c', after: { task: '' } },
          { task: 'c', after: { task: 'x', nope: 1 } },
          { task: 'c', onFailure: 'x' },
        ]) {
          await ctx
            .fanOut([1], opts as never)
            .catch((e: unknown) => errors.push(e instanceof ValidationError ? e.message : 'other'));
        }
      },
    };
    const j = await q.submit({ task: 'p' });
    const w = openWorker(name, handlers, {});
    await stateOf(q, j.id, 'success');
    await w.close();
    expect(errors).toHaveLength(3);
    expect(errors[0]).toContain('options.after.task');
    expect(errors[1]).toContain('options.after.nope');
    expect(errors[2]).toContain('options.onFailure');
    expect(await q.getJob(`${j.id}/after`)).toBeNull();
  });
});

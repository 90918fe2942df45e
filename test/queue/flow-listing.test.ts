/**
 * The `waiting-children` state listed (docs/jobs.md#flows): its per-shard index follows every
 * way into and out of the state (a flow's parents, a fan-out's continuation, release, failure,
 * a retry re-opening the wait, cancel, a reshard), and `Queue.jobs`, `rota jobs`, the metrics
 * and the dashboard's list and job page read it.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardServer, serveDashboard } from '../../src/dashboard/index.js';
import { type Handlers, PermanentError, reshard, serveMetrics, ValidationError } from '../../src/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { rota } from '../helpers/cli.js';
import { dashboardClient, textOf } from '../helpers/dashboard.js';
import { closeAll, eventually, openQueue, openWorker, rawClient, redisUrl, track, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);

const raw = rawClient();
afterAll(() => raw.quit());

/** The ids the index of shard `shard` of `name` (with `shards`) holds, in its order. */
const indexed = (name: string, shard = 0, shards = 1) => raw.zrange(queueKeys(name, shard, shards).waitingChildren, 0, -1);

describe('waiting-children listed', () => {
  it('lists the waiters in submit order (group filter, limit), and the index follows release, failure, retry and cancel', async () => {
    const name = uniqueQueue('wclist');
    const q = openQueue(name);
    const a = await q.submitFlow({
      id: 'a',
      task: 'root',
      group: 'g1',
      children: [{ task: 'mid', children: [{ task: 'leaf' }] }],
    });
    const b = await q.submitFlow({ id: 'b', task: 'root', group: 'g2', children: [{ task: 'bad' }] });
    const c = await q.submitFlow({ id: 'c', task: 'root', group: 'g1', children: [{ task: 'leaf' }] });
    expect(await indexed(name)).toEqual(['a', 'a/0', 'b', 'c']);
    const listed = await q.jobs({ state: 'waiting-children' });
    expect(listed.map((j) => j.id)).toEqual(['a', 'a/0', 'b', 'c']);
    expect(listed.every((j) => j.state === 'waiting-children')).toBe(true);
    expect((await q.jobs({ state: 'waiting-children', group: 'g1' })).map((j) => j.id)).toEqual(['a', 'a/0', 'c']);
    expect((await q.jobs({ state: 'waiting-children', group: 'g2' })).map((j) => j.id)).toEqual(['b']);
    expect((await q.jobs({ state: 'waiting-children', limit: 2 })).map((j) => j.id)).toEqual(['a', 'a/0']);
    // (a child's queue that is no queue name: refused, nothing written)
    const other = await q
      .submitFlow({ task: 'root', children: [{ task: 'x', queue: 'no such name!' }] })
      .catch((e: unknown) => e);
    expect(other).toBeInstanceOf(ValidationError);
    expect((other as ValidationError).field).toBe('children[0].queue');
    expect((await q.counts())['waiting-children']).toBe(4);

    // cancel leaves the index; b's child fails for good and fails b (left), a retry of it re-opens b
    expect(await q.cancel(c.id)).toBe('cancelled');
    const handlers: Handlers = {
      leaf: async () => 1,
      mid: async () => 2,
      root: async () => 3,
      bad: async () => {
        throw new PermanentError('no');
      },
    };
    const w = openWorker(name, handlers, { concurrency: 2 });
    await eventually(async () => (await q.getJob(a.id))?.state === 'success' && (await q.getJob(b.id))?.state === 'failed');
    await w.close();
    expect(await indexed(name)).toEqual([]);
    expect(await q.jobs({ state: 'waiting-children' })).toEqual([]);
    await q.retry(`${b.id}/0`);
    expect((await q.getJob(b.id))!.state).toBe('waiting-children');
    expect(await indexed(name)).toEqual(['b']);
    expect((await q.counts())['waiting-children']).toBe(1);
  });

  it("indexes a fan-out's continuation until its release, merges the shards of a sharded queue, and moves with a reshard", async () => {
    const name = uniqueQueue('wcshard');
    let q = openQueue(name, { shards: 2 });
    const gate: { open?: () => void } = {};
    const opened = new Promise<void>((r) => {
      gate.open = r;
    });
    const handlers: Handlers = {
      split: async (ctx) => {
        await ctx.fanOut([1, 2], { task: 'part', after: { task: 'sum' } });
      },
      part: async () => opened,
      sum: async () => 'sum',
    };
    const split = await q.submit({ task: 'split', group: 'g0' });
    const w = openWorker(name, handlers, { concurrency: 3, shards: 2 });
    const after = `${split.id}/after`;
    await eventually(async () => (await q.getJob(after))?.state === 'waiting-children');
    expect((await q.jobs({ state: 'waiting-children' })).map((j) => j.id)).toEqual([after]);
    gate.open!();
    await eventually(async () => (await q.getJob(after))?.state === 'success');
    await w.close();
    expect(await q.jobs({ state: 'waiting-children' })).toEqual([]);

    // flows in several groups land in several shards; the list merges them in submit order
    const roots: string[] = [];
    for (let i = 0; i < 6; i++)
      roots.push((await q.submitFlow({ task: 'root', group: `t${i}`, children: [{ task: 'leaf' }] })).id);
    const shardsUsed = (await Promise.all([0, 1].map((s) => indexed(name, s, 2)))).filter((ids) => ids.length > 0);
    expect(shardsUsed.length).toBe(2);
    const merged = await q.jobs({ state: 'waiting-children' });
    expect(merged.map((j) => j.id).sort()).toEqual([...roots].sort());
    // (in submit order: jobs of one millisecond may come in either order)
    expect(merged.map((j) => j.submitted)).toEqual(merged.map((j) => j.submitted).sort((x, y) => x - y));
    await q.close();

    await reshard(redisUrl(), name, { to: 3, batch: 2 });
    q = openQueue(name, { shards: 3 });
    const after3 = (await q.jobs({ state: 'waiting-children' })).map((j) => j.id);
    expect(after3.sort()).toEqual([...roots].sort());
    const where = await Promise.all([0, 1, 2].map((s) => indexed(name, s, 3)));
    expect(where.flat().sort()).toEqual([...roots].sort());
    expect((await q.counts())['waiting-children']).toBe(6);
    // (still released by their children where they are now)
    const w3 = openWorker(name, { leaf: async () => 1, root: async () => 2 }, { concurrency: 4, shards: 3 });
    await eventually(async () => (await q.counts()).success >= 12, 20_000);
    await w3.close();
    expect((await Promise.all([0, 1, 2].map((s) => indexed(name, s, 3)))).flat()).toEqual([]);
  });

  it('rota jobs --state waiting-children prints them with their children ended; the metrics count them', async () => {
    const name = uniqueQueue('wccli');
    const q = openQueue(name);
    await q.submitFlow({ id: 'r1', task: 'merge', children: [{ task: 'part' }, { task: 'part' }] });
    const out = await rota(['--redis', redisUrl(), '--queue', name, 'jobs', '--state', 'waiting-children']);
    expect(out.code).toBe(0);
    const lines = out.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/CHILDREN ENDED$/);
    expect(lines[1]).toMatch(/^r1\s+merge\s+default\s+\S+\s+waiting-children\s.*\s0\/2$/);
    const metrics = track(await serveMetrics({ port: 0, host: '127.0.0.1', queue: q }));
    const body = await (await fetch(metrics.url)).text();
    expect(body).toContain(`rota_jobs{queue="${name}",state="waiting-children"} 1`);
  });
});

describe('waiting-children on the dashboard', () => {
  const name = uniqueQueue('wcdash');
  let served: DashboardServer;
  const { get } = dashboardClient(() => served.url);
  beforeAll(async () => {
    served = await serveDashboard({ connection: redisUrl(), queues: [name], port: 0 });
  });
  afterAll(() => served?.close());

  it('lists the state, and a waiter page says why it waits: children ended and pending, links to the pending', async () => {
    const q = openQueue(name);
    await q.submitFlow({ id: 'p<1>', task: 'merge', children: [{ task: 'part' }, { task: 'part' }, { task: 'part' }] });
    await q.submitFlow({ id: 'p2', task: 'merge', children: [{ task: 'part' }] });
    const list = await get('/jobs?state=waiting-children');
    expect(list.status).toBe(200);
    expect(textOf(list.body)).toMatch(/p&lt;1&gt;[\s\S]*p2/);
    // one of p<1>'s children ends
    expect(await q.cancel('p<1>/2')).toBe('cancelled');
    const page = await get(`/jobs/${encodeURIComponent('p<1>')}`);
    const text = textOf(page.body);
    expect(text).toContain('Why it waits');
    expect(text).toMatch(/ended:\s+1 of 3\s+have,\s+2\s+pending/);
    expect(text).toMatch(/cancelled 1/);
    expect(page.body).toContain(`href="/jobs/${encodeURIComponent('p<1>/0')}"`);
    expect(page.body).not.toContain('p<1>');

    // a fan-out's continuation waits for its parent's children: the page names the parent
    const gate: { open?: () => void } = {};
    const opened = new Promise<void>((r) => {
      gate.open = r;
    });
    const split = await q.submit({ task: 'split' });
    const w = openWorker(
      name,
      {
        split: async (ctx) => {
          await ctx.fanOut([1, 2], { task: 'part', after: { task: 'sum' } });
        },
        part: async () => opened,
        sum: async () => 0,
        merge: async () => opened,
      },
      { concurrency: 8 },
    );
    const after = `${split.id}/after`;
    await eventually(async () => (await q.getJob(after))?.state === 'waiting-children');
    const cont = await get(`/jobs/${encodeURIComponent(after)}`);
    expect(textOf(cont.body)).toMatch(/It runs once the children of \S+ have ended: 0 of 2 have, 2 pending/);
    expect(cont.body).toContain(`href="/jobs/${encodeURIComponent(`${split.id}/0`)}"`);
    gate.open!();
    await w.close();
  });
});

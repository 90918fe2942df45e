/**
 * A flow's children in other queues (docs/jobs.md#flows, "Children in other queues"): submitted
 * there through the root's outbox, their ends delivered back to the parent by the other queue's
 * outbox, each crossing refusing a repeat; a retried child re-opens its parent; the parent reads
 * their results. On one Redis, and with the two queues on two nodes of a 3-primary Cluster.
 */
import { Cluster } from 'ioredis';
import { pack } from 'msgpackr';
import { afterEach, describe, expect, it } from 'vitest';
import { type Handlers, type Job, type JobTreeNode, PermanentError, Queue, ValidationError, Worker } from '../../src/index.js';
import { packFlowTree } from '../../src/queue/flow.js';
import { queueKeys } from '../../src/redis/keys.js';
import { QueueStore } from '../../src/redis/queue-store.js';
import { startCluster } from '../helpers/cluster.js';
import { closeAll, eventually, openQueue, openWorker, rawClient, streamEvents, track, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);

async function stateOf(q: Queue, id: string, state: string): Promise<Job> {
  return eventually(async () => {
    const j = await q.getJob(id);
    return j?.state === state && j;
  }, 20_000);
}

describe('flow children in other queues', () => {
  it('submits a child (and its subtree) in another queue, releases the parent once after it ended, and the parent reads its result', async () => {
    const [a, b] = [uniqueQueue('xa'), uniqueQueue('xb')];
    const qa = openQueue(a);
    const qb = openQueue(b);
    const ran: string[] = [];
    const seen: unknown[] = [];
    const handlers: Handlers = {
      leaf: async (ctx) => {
        ran.push(ctx.job.id);
        return (ctx.args as { n: number }).n;
      },
      bad: async (ctx) => {
        ran.push(ctx.job.id);
        throw new PermanentError('no');
      },
      sum: async (ctx) => {
        ran.push(ctx.job.id);
        const page = await ctx.children<number>({ limit: 10 });
        seen.push(page.items);
        return page.items.reduce((s, c) => s + (c.result ?? 0), 0);
      },
    };
    const tree = await qa.submitFlow({
      task: 'sum',
      group: 'g',
      children: [
        { task: 'leaf', args: { n: 1 } },
        {
          task: 'sum',
          queue: b,
          children: [
            { task: 'leaf', args: { n: 10 } },
            { task: 'leaf', args: { n: 20 } },
          ],
        },
        { task: 'bad', queue: b, onFailure: 'ignore' },
      ],
    });
    const [local, remote, failing] = tree.children!;
    expect(remote.queue).toBe(b);
    expect(remote.children!.map((c) => c.id)).toEqual([`${remote.id}/0`, `${remote.id}/1`]);
    // (the submit relayed the children at once: they are in B, and not in A)
    expect((await qb.getJob(remote.id))?.state).toBe('waiting-children');
    expect((await qb.getJob(`${remote.id}/1`))?.state).toBe('waiting');
    expect((await qb.getJob(failing.id))?.state).toBe('waiting');
    expect(await qa.getJob(remote.id)).toBeNull();
    expect((await qa.getJob(tree.id))?.children?.total).toBe(3);

    const wa = openWorker(a, handlers, { leaseMs: 2000 });
    await stateOf(qa, local.id, 'success');
    // the parent waits for B's children while nothing runs them
    expect((await qa.getJob(tree.id))?.state).toBe('waiting-children');
    const wb = openWorker(b, handlers, { leaseMs: 2000 });
    const done = await stateOf(qa, tree.id, 'success');
    expect(done.result).toBe(1 + 30);
    expect(done.children).toMatchObject({ total: 3, success: 2, failed: 1 });
    expect(seen.at(-1)).toEqual([
      { id: local.id, state: 'success', result: 1 },
      { id: remote.id, state: 'success', result: 30 },
      { id: failing.id, state: 'failed', error: expect.stringContaining('no') },
    ]);
    await Promise.all([wa.close(), wb.close()]);
    expect(ran.sort()).toEqual([tree.id, local.id, remote.id, `${remote.id}/0`, `${remote.id}/1`, failing.id].sort());
    const released = (await streamEvents(a)).filter((e) => e.event === 'flow.released' && e.id === tree.id);
    expect(released.length).toBe(1);
    // the outboxes are empty
    const raw = rawClient();
    try {
      expect(await raw.llen(queueKeys(a).crossSubmits)).toBe(0);
      expect(await raw.zcard(queueKeys(b).crossEnds)).toBe(0);
    } finally {
      await raw.quit();
    }
  });

  it('refuses a bad child queue with a ValidationError naming the field, writing nothing', async () => {
    const [a, b] = [uniqueQueue('xva'), uniqueQueue('xvb')];
    const qa = openQueue(a);
    const qb = openQueue(b);
    const many = Array.from({ length: 1001 }, () => ({ task: 'leaf' }));
    const bad: Array<[unknown, string]> = [
      [{ task: 'r', queue: b, children: [{ task: 'x' }] }, 'queue'],
      [{ task: 'r', children: [{ task: 'x', queue: 'no such name!' }] }, 'children[0].queue'],
      [{ task: 'r', children: [{ task: 'x', queue: b, children: [{ task: 'y', queue: a }] }] }, 'children[0].children[0].queue'],
      [{ task: 'r', children: [{ task: 'x', queue: b, children: many }] }, 'children[0]'],
    ];
    for (const [flow, field] of bad) {
      const err = await qa.submitFlow(flow as never).catch((e: unknown) => e);
      expect(err, field).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).field).toBe(field);
    }
    for (const q of [qa, qb]) expect(Object.values(await q.counts()).reduce((x, y) => x + y, 0)).toBe(0);
  });

  it('refuses a repeat of each crossing: a child submitted again, an end delivered again or out of order', async () => {
    const [a, b] = [uniqueQueue('xra'), uniqueQueue('xrb')];
    const qa = openQueue(a);
    const qb = openQueue(b);
    const raw = rawClient();
    track({ close: () => raw.quit() });
    const storeA = new QueueStore(raw, a, { maxEvents: 1000 });
    const storeB = new QueueStore(raw, b, { maxEvents: 1000 });
    // a child's submit relayed again (the relay killed before its acknowledgement), and again
    // after the child was removed (as retention does): B refuses both
    const packed = packFlowTree({ id: 'r', task: 'root', children: [{ task: 'leaf', queue: b }] }, 1 << 20, () => 'r', {
      own: a,
      ownRef: () => `${a} 0 1`,
      refOf: () => `${b} 0 1`,
    });
    const entry = packed.chunks.at(-1)!.subarray(1);
    expect(await storeB.crossSubmit(entry)).toBe(true);
    expect(await storeB.crossSubmit(entry)).toBe(false);
    await raw.del(queueKeys(b).job('r/0'));
    expect(await storeB.crossSubmit(entry)).toBe(false);
    expect((await qb.counts()).waiting).toBe(1);

    // ends: each child's end counted once, whatever is repeated or comes late
    const tree = await qa.submitFlow({
      task: 'root',
      children: [
        { task: 'leaf', queue: b },
        { task: 'leaf', queue: b },
      ],
    });
    const [c0, c1] = tree.children!.map((c) => c.id);
    const ref = `${a} 0 1`;
    const end = (id: string, seq: number, state: string) => pack([ref, id, seq, state, '']);
    expect(await storeA.crossEnds([end(c0, 1, 'success'), end(c0, 1, 'success')])).toBe(1);
    expect((await qa.getJob(tree.id))?.children).toMatchObject({ total: 2, success: 1 });
    // (a re-open, then the end it followed delivered late: refused)
    expect(await storeA.crossEnds([end(c0, 2, 'open'), end(c0, 1, 'success')])).toBe(1);
    expect((await qa.getJob(tree.id))?.children).toMatchObject({ total: 2, success: 0 });
    expect(await storeA.crossEnds([end(c0, 3, 'success'), end(c1, 1, 'success'), end(c1, 1, 'success')])).toBe(2);
    const parent = await qa.getJob(tree.id);
    expect(parent?.children).toMatchObject({ total: 2, success: 2 });
    expect(parent?.state).toBe('waiting');
    expect(await storeA.crossEnds([end(c1, 1, 'success'), end(c0, 3, 'success')])).toBe(0);
    const released = (await streamEvents(a)).filter((e) => e.event === 'flow.released' && e.id === tree.id);
    expect(released.length).toBe(1);
  });

  it('a remote child that fails its parent, retried in its own queue, re-opens the parent, which runs once it succeeds', async () => {
    const [a, b] = [uniqueQueue('xfa'), uniqueQueue('xfb')];
    const qa = openQueue(a);
    const qb = openQueue(b);
    let fail = true;
    const handlers: Handlers = {
      flaky: async () => {
        if (fail) throw new PermanentError('not yet');
        return 7;
      },
      root: async (ctx) => (await ctx.children<number>()).items[0]?.result,
    };
    const tree = await qa.submitFlow({ task: 'root', children: [{ task: 'flaky', queue: b }] });
    const child = tree.children![0].id;
    const wa = openWorker(a, handlers, { leaseMs: 1000 });
    const wb = openWorker(b, handlers, { leaseMs: 1000 });
    const failed = await stateOf(qa, tree.id, 'failed');
    expect(failed.error).toContain(child);
    fail = false;
    expect(await qb.retry(child)).toBe('waiting');
    const done = await stateOf(qa, tree.id, 'success');
    expect(done.result).toBe(7);
    await Promise.all([wa.close(), wb.close()]);
    const events = await streamEvents(a);
    expect(events.filter((e) => e.id === tree.id && e.state === 'waiting-children').length).toBe(2);
    expect(events.filter((e) => e.event === 'flow.released' && e.id === tree.id).length).toBe(1);
  });

  it('a remote child cancelled or deleted before it ran ends for its parent as cancelled', async () => {
    const [a, b] = [uniqueQueue('xda'), uniqueQueue('xdb')];
    const qa = openQueue(a);
    const qb = openQueue(b);
    const tree = await qa.submitFlow({
      task: 'root',
      children: [
        { task: 'leaf', queue: b },
        { task: 'leaf', queue: b },
      ],
    });
    const [c0, c1] = tree.children!.map((c) => c.id);
    expect(await qb.cancel(c0)).toBe('cancelled');
    expect(await qb.deleteJob(c1)).toBe('deleted');
    // (delivered by B's executor's recovery pass: B has no job to run)
    openWorker(b, {}, { leaseMs: 1000 });
    const parent = await stateOf(qa, tree.id, 'waiting');
    expect(parent.children).toMatchObject({ total: 2, cancelled: 2 });
    // cancel with children reaches children in other queues, and theirs
    const t2 = await qa.submitFlow({ task: 'root', children: [{ task: 'mid', queue: b, children: [{ task: 'leaf' }] }] });
    const mid = t2.children![0].id;
    expect(await qa.cancel(t2.id, { children: true })).toBe('cancelled');
    expect((await qb.getJob(mid))?.state).toBe('cancelled');
    expect((await qb.getJob(`${mid}/0`))?.state).toBe('cancelled');
  });

  it("removes a parent's record of its remote children's delivered ends with the parent: delete, clean, keep count and keep age", async () => {
    const [a, b] = [uniqueQueue('xra'), uniqueQueue('xrb')];
    const qa = openQueue(a);
    const raw = rawClient();
    track({ close: () => raw.quit() });
    const handlers: Handlers = { root: async () => 'r', leaf: async () => 'l' };
    openWorker(b, handlers, { leaseMs: 1000 });
    const delivered = (id: string): Promise<number> => raw.exists(queueKeys(a).crossDelivered(id));
    // A parent whose one child ran in B and whose end was delivered (by B's executor) while no
    // executor of A runs: the parent waits to run.
    async function releasedParent(): Promise<string> {
      const tree = await qa.submitFlow({ task: 'root', children: [{ task: 'leaf', queue: b }] });
      await stateOf(qa, tree.id, 'waiting');
      expect(await delivered(tree.id)).toBe(1);
      return tree.id;
    }
    const [deleted, cleaned] = [await releasedParent(), await releasedParent()];
    // (an executor that keeps every finished job: delete and clean remove them)
    const keeper = openWorker(a, handlers, { leaseMs: 1000 });
    await Promise.all([stateOf(qa, deleted, 'success'), stateOf(qa, cleaned, 'success')]);
    await keeper.close();
    expect(await qa.deleteJob(deleted)).toBe('deleted');
    expect(await delivered(deleted)).toBe(0);
    expect(await qa.clean({ state: 'success' })).toBe(1);
    expect(await delivered(cleaned)).toBe(0);
    // the keep count trims the parent as it finishes, the keep age in the recovery pass
    for (const keepSucceeded of [
      { count: 0, age: -1 },
      { count: -1, age: 0 },
    ]) {
      const trimmed = await releasedParent();
      const trimmer = openWorker(a, handlers, { leaseMs: 1000, keepSucceeded });
      await eventually('the finished parent trimmed', async () => (await qa.getJob(trimmed)) === null, 20_000);
      await trimmer.close();
      expect(await delivered(trimmed)).toBe(0);
    }
  });

  it('jobTree reads children in other queues there, with their own children and states, naming their queue, within its limit', async () => {
    const [a, b] = [uniqueQueue('xta'), uniqueQueue('xtb')];
    const qa = openQueue(a);
    const qb = openQueue(b);
    const tree = await qa.submitFlow({
      task: 'root',
      children: [
        { task: 'leaf' },
        { task: 'mid', queue: b, children: [{ task: 'leaf' }, { task: 'leaf' }] },
        { task: 'leaf', queue: b },
      ],
    });
    const [local, mid, far] = tree.children!.map((c) => c.id);
    expect(await qb.cancel(far)).toBe('cancelled');
    const t = (await qa.jobTree(tree.id))!;
    expect(t.queue).toBeUndefined();
    const row = (n: JobTreeNode) => [n.job.id, n.job.state, n.queue];
    expect(t.children!.map(row)).toEqual([
      [local, 'waiting', undefined],
      [mid, 'waiting-children', b],
      [far, 'cancelled', b],
    ]);
    expect(t.children![1].children!.map(row)).toEqual([
      [`${mid}/0`, 'waiting', b],
      [`${mid}/1`, 'waiting', b],
    ]);
    // (the limit counts the jobs read in every queue)
    const cut = (await qa.jobTree(tree.id, 5))!;
    expect(cut.children!.map((c) => c.job.id)).toEqual([local, mid, far]);
    expect(cut.children![1].children!.map((c) => c.job.id)).toEqual([`${mid}/0`]);
    expect(cut.children![1].more).toBe(true);
    // from the other queue, the subtree is its own
    const there = (await qb.jobTree(mid))!;
    expect(there.children!.map(row)).toEqual([
      [`${mid}/0`, 'waiting', undefined],
      [`${mid}/1`, 'waiting', undefined],
    ]);
  });

  it('on a 3-primary Redis Cluster, with the two queues on two nodes', async () => {
    const cluster = await startCluster(3);
    track({ close: () => cluster.destroy() });
    const admin = new Cluster(cluster.startupNodes);
    track({ close: () => admin.quit() });
    // two queue names whose slots are on different primaries
    const nodeOf = async (name: string) => {
      const slot = Number(await admin.cluster('KEYSLOT', queueKeys(name).meta));
      return admin.slots[slot][0];
    };
    const a = uniqueQueue('xca');
    let b = uniqueQueue('xcb');
    while ((await nodeOf(b)) === (await nodeOf(a))) b = uniqueQueue('xcb');
    const connect = () => new Cluster(cluster.startupNodes);
    const qa = track(new Queue(a, { connection: connect() }));
    const qb = track(new Queue(b, { connection: connect() }));
    const handlers: Handlers = {
      leaf: async (ctx) => (ctx.args as { n: number }).n,
      sum: async (ctx) => (await ctx.children<number>()).items.reduce((s, c) => s + (c.result ?? 0), 0),
    };
    const tree = await qa.submitFlow({
      task: 'sum',
      children: [
        { task: 'leaf', args: { n: 1 } },
        {
          task: 'sum',
          queue: b,
          children: [
            { task: 'leaf', args: { n: 2 } },
            { task: 'leaf', args: { n: 3 } },
          ],
        },
        { task: 'leaf', queue: b, args: { n: 4 } },
      ],
    });
    track(new Worker(a, handlers, { connection: connect(), leaseMs: 2000 }));
    track(new Worker(b, handlers, { connection: connect(), leaseMs: 2000 }));
    const done = await stateOf(qa, tree.id, 'success');
    expect(done.result).toBe(10);
    const t = (await qa.jobTree(tree.id))!;
    expect(t.children!.map((c) => [c.job.state, c.queue])).toEqual([
      ['success', undefined],
      ['success', b],
      ['success', b],
    ]);
    expect(t.children![1].children!.map((c) => [c.job.result, c.queue])).toEqual([
      [2, b],
      [3, b],
    ]);
    expect((await qb.getJob(tree.children![1].id))?.result).toBe(5);
    expect(await admin.llen(queueKeys(a).crossSubmits)).toBe(0);
    await eventually(async () => (await admin.zcard(queueKeys(b).crossEnds)) === 0);
  }, 60_000);
});

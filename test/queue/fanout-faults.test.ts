/**
 * Fault tests of fan-out (ctx.fanOut): an executor process killed with kill -9 while it fans out
 * loses no child and doubles none. The children's group is paused until the kill, so every
 * child execution recorded is the one the queue handed out once.
 */
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, type QueueEvent } from '../../src/index.js';
import { parseEntry } from '../../src/queue/events.js';
import { readRuns } from '../fixtures/runs.js';
import { NodeProcess } from '../helpers/processes.js';
import { eventually, redisUrl, uniqueQueue } from '../helpers/setup.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const script = new URL('../fixtures/fanout-executor.ts', import.meta.url).pathname;

function executor(name: string): NodeProcess {
  const p = new NodeProcess(script, [], { REDIS_URL: redisUrl(), QUEUE: name, LEASE_MS: '1000', CONCURRENCY: '8' });
  cleanups.push(() => p.kill());
  return p;
}

function open(name: string): { q: Queue; c: Redis } {
  const q = new Queue(name, { connection: redisUrl() });
  const c = new Redis(redisUrl());
  cleanups.push(
    () => q.close(),
    () => c.disconnect(),
  );
  return { q, c };
}

/** Checks that every child of `parent` (n of them) was submitted once, ran once and succeeded. */
async function expectEachChildOnce(q: Queue, c: Redis, name: string, parent: string, n: number): Promise<void> {
  const children = await eventually(async () => {
    const ch = (await q.getJob(parent))?.children;
    return ch?.ended !== undefined && ch;
  }, 120_000);
  expect(children).toMatchObject({ total: n, success: n, failed: 0, cancelled: 0, waiting: 0, running: 0 });
  const runs = await readRuns(c, name);
  const ids = Array.from({ length: n }, (_, i) => `${parent}/${i}`);
  const missing = ids.filter((id) => !runs.has(id));
  const twice = ids.filter((id) => (runs.get(id)?.length ?? 0) > 1);
  expect({ missing: missing.length, twice: twice.length }).toEqual({ missing: 0, twice: 0 });
  // each child was added to the queue once (one `waiting` event each) and no other child exists
  const entries = (await c.xrange(q.keys.events, '-', '+')) as Array<[string, string[]]>;
  const added = new Map<string, number>();
  for (const e of entries.flatMap(([sid, f]) => parseEntry(sid, f)) as QueueEvent[]) {
    if (e.state === 'waiting' && e.id.startsWith(`${parent}/`) && !e.event) added.set(e.id, (added.get(e.id) ?? 0) + 1);
  }
  expect(added.size).toBe(n);
  expect([...added.values()].every((k) => k === 1)).toBe(true);
  expect((await q.counts()).success).toBe(n + 1);
  expect(await c.keys(`{rota:${name}}:fan*:*`)).toEqual([]);
  expect(await c.zcard(`{rota:${name}}:fanouts`)).toBe(0);
}

describe('fan-out faults', () => {
  it('kill -9 after the children are staged, before the finish: none is submitted; the re-run submits each once', async () => {
    const name = uniqueQueue('fanfault');
    const { q, c } = open(name);
    await q.pauseGroup('kids');
    const a = executor(name);
    await a.waitFor((m) => m.type === 'ready');
    const parent = await q.submit({ task: 'fan', args: { n: 3000, hold: 60_000 } });
    const staged = await a.waitFor<{ takeSeq: number }>((m) => m.type === 'staged' && m.id === parent.id);
    expect(await c.exists(q.keys.fanStaging(parent.id, staged.takeSeq))).toBe(1);
    await a.kill();
    expect(await q.getJob(`${parent.id}/0`)).toBeNull();

    // Another executor recovers the lease, runs the parent again and commits its fan-out.
    const b = executor(name);
    await b.waitFor((m) => m.type === 'completed' && m.id === parent.id, 60_000);
    await q.resumeGroup('kids');
    await expectEachChildOnce(q, c, name, parent.id, 3000);
    const p = (await q.getJob(parent.id))!;
    expect(p.retries).toBe(1);
  }, 180_000);

  it('kill -9 right after the finish committed the children, while they are submitted: the rest are submitted once by another executor', async () => {
    const name = uniqueQueue('fanfault');
    const { q, c } = open(name);
    await q.pauseGroup('kids');
    const a = executor(name);
    await a.waitFor((m) => m.type === 'ready');
    const n = 30_000;
    const parent = await q.submit({ task: 'fan', args: { n, hold: 0 } });
    await a.waitFor((m) => m.type === 'completed' && m.id === parent.id, 60_000);
    await a.kill();
    const left = await c.llen(q.keys.fanned(parent.id));
    console.log(`fan-out of ${n}: ${left} chunks of children were still to submit when the executor was killed`);
    expect((await q.getJob(parent.id))!.children!.total).toBe(n);

    const b = executor(name);
    await b.waitFor((m) => m.type === 'ready');
    await q.resumeGroup('kids');
    await expectEachChildOnce(q, c, name, parent.id, n);
  }, 240_000);
});

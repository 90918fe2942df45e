/** Selection order: round-robin across groups, the counting scheme, weights, limits, pause. */
import { EventEmitter } from 'node:events';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import type { Job, Queue, Worker } from '../../src/index.js';
import { readGroupStates } from '../../src/redis/group-state.js';
import { type QueueKeys, queueKeys } from '../../src/redis/keys.js';
import { NodeProcess } from '../helpers/processes.js';
import { closeAll, openQueue, openWorker, rawClient, redisUrl, uniqueQueue, until } from '../helpers/setup.js';
import { finishRuns, settings, storeOf, takeRuns } from '../helpers/store.js';

const CHILD = new URL('../fixtures/fair-worker.ts', import.meta.url).pathname;
const children: NodeProcess[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) await c.kill();
  await closeAll();
});
const queue = (name: string) => openQueue(name);
const worker = openWorker;

/** Runs `count` jobs to success on one in-process executor; resolves with jobs ordered by takeSeq. */
async function drainInOrder(q: Queue, ids: string[], w: Worker): Promise<Job[]> {
  let done = 0;
  w.on('completed', () => done++);
  await until(w, 'completed', () => done >= ids.length, 60_000);
  const jobs = (await Promise.all(ids.map((id) => q.getJob(id)))) as Job[];
  return jobs.sort((a, b) => a.takeSeq! - b.takeSeq!);
}

/** Takes up to `n` jobs through the take script (executor exec-t, scheme (2, 1)): their ids and tokens, in take order. */
async function takeRaw(raw: Redis, k: QueueKeys, n: number): Promise<Array<[string, string]>> {
  return takeRuns(storeOf(raw, k), n, settings('exec-t'));
}

const ids = (taken: Array<[string, string]>) => taken.map(([id]) => id);

async function startChildren(name: string, n: number, delayMs: number): Promise<void> {
  const procs = Array.from({ length: n }, () => new NodeProcess(CHILD, [redisUrl(), name, '1', String(delayMs)]));
  children.push(...procs);
  await Promise.all(procs.map((p) => p.waitFor((m) => m.ready)));
}

async function waitAllFinal(q: Queue, total: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  while ((await q.counts()).success < total) {
    if (Date.now() > deadline) throw new Error('jobs did not finish in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('fair selection', () => {
  it('serves ten light groups before the heavy group reaches its 120th job', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    const heavy = await q.submitBulk(Array.from({ length: 1000 }, () => ({ task: 'noop', group: 'A' })));
    const light: string[] = [];
    for (const g of 'BCDEFGHIJK') {
      const jobs = await q.submitBulk(Array.from({ length: 10 }, () => ({ task: 'noop', group: g })));
      light.push(...jobs.map((j) => j.id));
    }
    const w = worker(name, { noop: () => undefined }, { concurrency: 1 });
    const ordered = await drainInOrder(q, [...heavy.map((j) => j.id), ...light], w);
    const heavy120 = ordered.filter((j) => j.group === 'A')[119].takeSeq!;
    const lastLight = Math.max(...ordered.filter((j) => j.group !== 'A').map((j) => j.takeSeq!));
    expect(lastLight).toBeLessThan(heavy120);
  });

  it('follows the counting scheme (2,1): H,H,L while both priorities have jobs', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    const specs = Array.from({ length: 60 }, (_, i) => ({ task: 'noop', group: 'g', priority: i % 2 ? 'high' : 'low' }) as const);
    const jobs = await q.submitBulk(specs);
    const w = worker(name, { noop: () => undefined }, { concurrency: 1, countingScheme: [2, 1] });
    const ordered = await drainInOrder(
      q,
      jobs.map((j) => j.id),
      w,
    );
    const pattern = ordered
      .slice(0, 45)
      .map((j) => (j.priority === 'high' ? 'H' : 'L'))
      .join('');
    expect(pattern).toBe('HHL'.repeat(15));
    expect(ordered.slice(45).every((j) => j.priority === 'low')).toBe(true);
  });

  it('keeps the counting scheme across three executor processes', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    const specs = Array.from(
      { length: 60 },
      (_, i) => ({ task: 'noop', group: 'g', priority: i < 30 ? 'high' : 'low' }) as const,
    );
    const jobs = await q.submitBulk(specs);
    // (20 ms a job: one executor alone would take over a second, while the others start)
    await startChildren(name, 3, 20);
    await waitAllFinal(q, 60);
    const ordered = ((await Promise.all(jobs.map((j) => q.getJob(j.id)))) as Job[]).sort((a, b) => a.takeSeq! - b.takeSeq!);
    expect(new Set(ordered.map((j) => j.worker)).size).toBeGreaterThan(1);
    const first45 = ordered.slice(0, 45);
    expect(first45.filter((j) => j.priority === 'high').length).toBe(30);
    expect(first45.filter((j) => j.priority === 'low').length).toBe(15);
  });

  it('rotates groups globally across three executor processes', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    const groups = ['a', 'b', 'c', 'd', 'e', 'f'];
    // (all three wait for work before any is submitted: one started late could find none left)
    await startChildren(name, 3, 2);
    const jobs = await q.submitBulk(groups.flatMap((g) => Array.from({ length: 50 }, () => ({ task: 'noop', group: g }))));
    await waitAllFinal(q, jobs.length);
    const ordered = ((await Promise.all(jobs.map((j) => q.getJob(j.id)))) as Job[]).sort((a, b) => a.takeSeq! - b.takeSeq!);
    expect(new Set(ordered.map((j) => j.worker)).size).toBe(3);
    // All six groups stay backlogged through the first 6 × 50 takes.
    for (let i = 0; i + 6 <= 300; i++) {
      const window = ordered.slice(i, i + 6).map((j) => j.group);
      expect(new Set(window).size, `takes ${i + 1}..${i + 6}: ${window.join(',')}`).toBe(6);
    }
  });

  it('gives a weight-3 group three of every four takes', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    await q.setGroupLimit('heavy', { weight: 3 });
    const jobs = await q.submitBulk([
      ...Array.from({ length: 60 }, () => ({ task: 'noop', group: 'heavy' })),
      ...Array.from({ length: 60 }, () => ({ task: 'noop', group: 'light' })),
    ]);
    const w = worker(name, { noop: () => undefined }, { concurrency: 1 });
    const ordered = await drainInOrder(
      q,
      jobs.map((j) => j.id),
      w,
    );
    // Heavy runs out after 80 takes (60 heavy + 20 light).
    for (let i = 0; i + 4 <= 80; i++) {
      const heavyTakes = ordered.slice(i, i + 4).filter((j) => j.group === 'heavy').length;
      expect(heavyTakes, `takes ${i + 1}..${i + 4}`).toBe(3);
    }
  });

  it('never runs more of a group at once than its concurrency limit', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    await q.setGroupLimit('limited', { concurrency: 2 });
    const jobs = await q.submitBulk([
      ...Array.from({ length: 12 }, () => ({ task: 'work', group: 'limited' })),
      ...Array.from({ length: 12 }, () => ({ task: 'work', group: 'free' })),
    ]);
    const running = new Map<string, number>();
    const peak = new Map<string, number>();
    const w = worker(
      name,
      {
        work: async ({ job }) => {
          const n = (running.get(job.group) ?? 0) + 1;
          running.set(job.group, n);
          peak.set(job.group, Math.max(peak.get(job.group) ?? 0, n));
          await new Promise((r) => setTimeout(r, 30));
          running.set(job.group, running.get(job.group)! - 1);
        },
      },
      { concurrency: 8 },
    );
    await drainInOrder(
      q,
      jobs.map((j) => j.id),
      w,
    );
    expect(peak.get('limited')).toBe(2);
    expect(peak.get('free')).toBeGreaterThan(2);
    const info = (await q.groups()).find((g) => g.group === 'limited')!;
    expect(info).toMatchObject({ limit: 2, running: 0, waiting: 0 });
  });

  it('counts the runs in progress of a group whose limit is set while they run, and forgets them when it is lifted', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    const started = new EventEmitter();
    const release = new Map<string, () => void>();
    const begun: string[] = [];
    const done: string[] = [];
    const w = worker(
      name,
      {
        hold: ({ job }) =>
          new Promise<void>((resolve) => {
            release.set(job.id, resolve);
            begun.push(job.id);
            started.emit('start');
          }),
        noop: () => undefined,
      },
      { concurrency: 4 },
    );
    w.on('completed', (j: Job) => done.push(j.id));
    const held = await q.submitBulk(Array.from({ length: 3 }, () => ({ task: 'hold', group: 'g' })));
    await until(started, 'start', () => begun.length === 3);
    // No limit: the group keeps no count of its own, and is in the hash only while jobs wait.
    expect((await q.groups()).find((g) => g.group === 'g')).toMatchObject({ running: 3, waiting: 0, limit: 0 });

    await q.setGroupLimit('g', { concurrency: 2 });
    const extra = await q.submit({ task: 'hold', group: 'g' });
    release.get(held[0].id)!();
    await until(w, 'completed', () => done.includes(held[0].id));
    // Two still run, at the limit: the extra job waits while the executor takes other work.
    const other = await q.submit({ task: 'noop', group: 'o' });
    await until(w, 'completed', () => done.includes(other.id));
    expect((await q.getJob(extra.id))!.state).toBe('waiting');
    expect((await q.groups()).find((g) => g.group === 'g')).toMatchObject({ running: 2, waiting: 1, limit: 2 });

    release.get(held[1].id)!();
    await until(started, 'start', () => begun.includes(extra.id));
    for (const id of [held[2].id, extra.id]) release.get(id)!();
    await until(w, 'completed', () => done.length === 5);
    expect((await q.groups()).find((g) => g.group === 'g')).toMatchObject({ running: 0, waiting: 0, limit: 2 });
    // Lifted, the group holds nothing of its own and leaves the hash.
    await q.setGroupLimit('g', { concurrency: 0 });
    expect(await q.groups()).toEqual([]);
  });

  it('takes nothing from a paused group until it is resumed', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    await q.pauseGroup('p');
    const paused = await q.submitBulk(Array.from({ length: 5 }, () => ({ task: 'noop', group: 'p' })));
    const other = await q.submitBulk(Array.from({ length: 5 }, () => ({ task: 'noop', group: 'o' })));
    const done: Job[] = [];
    const w = worker(name, { noop: () => undefined }, { concurrency: 2 });
    w.on('completed', (j) => done.push(j));
    await until(w, 'completed', () => done.length === 5);
    // A further take finds nothing: the paused group's jobs are all still waiting.
    const extra = await q.submit({ task: 'noop', group: 'o' });
    await until(w, 'completed', () => done.some((j) => j.id === extra.id));
    expect(done.every((j) => j.group === 'o')).toBe(true);
    for (const j of paused) expect((await q.getJob(j.id))!.state).toBe('waiting');
    expect((await q.groups()).find((g) => g.group === 'p')).toMatchObject({ paused: true, waiting: 5 });
    await q.resumeGroup('p');
    await until(w, 'completed', () => done.length === 5 + 1 + 5);
    expect(other.length).toBe(5);
    for (const j of paused) expect((await q.getJob(j.id))!.state).toBe('success');
  });

  it('lists a group once however often it is paused and resumed while listed, and skips it while paused', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    const raw = rawClient();
    const rotation = queueKeys(name).rotation;
    await q.submitBulk(Array.from({ length: 3 }, () => ({ task: 'noop', group: 'p' })));
    await q.submitBulk(Array.from({ length: 3 }, () => ({ task: 'noop', group: 'o' })));
    for (let i = 0; i < 3; i++) {
      await q.pauseGroup('p');
      await q.resumeGroup('p');
    }
    await q.pauseGroup('p');
    // Paused while listed: it keeps its place until a take pops it and drops it.
    expect(await raw.lrange(rotation, 0, -1)).toEqual(['p', 'o']);
    const done: Job[] = [];
    const w = worker(name, { noop: () => undefined }, { concurrency: 1 });
    w.on('completed', (j) => done.push(j));
    await until(w, 'completed', () => done.length === 3);
    expect(done.map((j) => j.group)).toEqual(['o', 'o', 'o']);
    expect(await raw.lrange(rotation, 0, -1)).toEqual([]);
    await q.resumeGroup('p');
    await until(w, 'completed', () => done.length === 6);
    expect(done.slice(3).map((j) => j.group)).toEqual(['p', 'p', 'p']);
    raw.disconnect();
  });

  it('counts jobs submitted to a listed group in its record and leaves the rest of the record as it was', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    const raw = rawClient();
    const k = queueKeys(name);
    const job = (group: string, priority: 'high' | 'low') => ({ task: 'noop', group, priority });
    await q.setGroupLimit('w', { weight: 3 });
    await q.submitBulk([
      ...Array.from({ length: 4 }, () => job('w', 'high')),
      ...Array.from({ length: 4 }, () => job('w', 'low')),
      job('p', 'low'),
    ]);
    // Two takes of w's three a turn, by the counting scheme (2, 1): its turn and scheme moved on.
    await takeRaw(raw, k, 2);
    await q.pauseGroup('p');
    const before = await readGroupStates(raw, k.groups);
    expect(before.get('w')).toEqual({
      running: 0,
      stuck: 0,
      nr: 0,
      nh: 2,
      nl: 4,
      cnt: 2,
      turns: 2,
      limit: 0,
      weight: 3,
      paused: 0,
      ready: 1,
      rate: 0,
      per: 0,
      logged: 0,
    });
    // Listed and runnable: only the lengths of its lists change. Paused: counted the same.
    await q.submitBulk([job('w', 'high'), job('w', 'low'), job('w', 'low'), job('p', 'high')]);
    await q.submit(job('w', 'high'));
    const after = await readGroupStates(raw, k.groups);
    expect(after.get('w')).toEqual({ ...before.get('w'), nh: 4, nl: 6 });
    expect(after.get('p')).toEqual({ ...before.get('p'), nh: 1 });
    expect(after.get('p')).toMatchObject({ nl: 1, paused: 1, ready: 1 });
    expect(await raw.lrange(k.rotation, 0, -1)).toEqual(['w', 'p']);
    // And the next takes go on from where the turn and the scheme were: w's third take, a low job (H, H, L).
    const [takenId] = ids(await takeRaw(raw, k, 1));
    expect((await q.getJob(takenId))?.priority).toBe('low');
    expect((await readGroupStates(raw, k.groups)).get('w')).toMatchObject({ nh: 4, nl: 5, turns: 0 });
    raw.disconnect();
  });

  it('takes in one call of many the jobs, in the order, that one-job takes would, and leaves the groups as they would', async () => {
    const raw = rawClient();
    // The same queue twice: groups with weights, a limit, a pause, both priorities, a stuck job
    // and a released one (runs of the first take, ended failed with no retry delay and released).
    const setUp = async (name: string) => {
      const q = queue(name);
      const k = queueKeys(name);
      const jobs = (group: string, n: number, priority: 'high' | 'low' = 'low') =>
        Array.from({ length: n }, (_, i) => ({ id: `${group}-${priority}-${i}`, task: 'noop', group, priority }));
      await q.submitBulk([...jobs('s', 3), ...jobs('rel', 3)]);
      const ends = (await takeRaw(raw, k, 2)).map(([id, token]) => [id, token, id.startsWith('s-') ? '+f' : '+r', 'x'] as const);
      await finishRuns(storeOf(raw, name), ends, settings('', { retryDelay: 0 }));
      await q.setGroupLimit('w3', { weight: 3 });
      await q.setGroupLimit('w2', { weight: 2 });
      await q.setGroupLimit('lim', { concurrency: 2 });
      await q.submitBulk([
        ...jobs('w3', 9),
        ...jobs('mix', 3, 'high'),
        ...jobs('mix', 4),
        ...jobs('lim', 5),
        ...jobs('p', 3),
        ...jobs('w2', 5),
      ]);
      await q.pauseGroup('p');
      return { q, k };
    };
    const drain = async (k: QueueKeys, n: number) => {
      const all: string[] = [];
      for (;;) {
        const taken = ids(await takeRaw(raw, k, n));
        if (taken.length === 0) return all;
        all.push(...taken);
      }
    };
    const [a, b] = [await setUp(uniqueQueue()), await setUp(uniqueQueue())];
    const [batched, single] = [a.k, b.k];
    // s and rel (their failed and released jobs), then two of w3's turn of three; then w3's weight
    // lowered to two: its turn ends with its next take, and the next turn has two.
    const inBatches = ids(await takeRaw(raw, batched, 4));
    const oneByOne: string[] = [];
    for (let i = 0; i < 4; i++) oneByOne.push(...ids(await takeRaw(raw, single, 1)));
    expect(inBatches).toEqual(['s-low-0', 'rel-low-0', 'w3-low-0', 'w3-low-1']);
    expect(oneByOne).toEqual(inBatches);
    for (const { q, k } of [a, b]) {
      expect((await readGroupStates(raw, k.groups)).get('w3')).toMatchObject({ turns: 2, weight: 3 });
      await q.setGroupLimit('w3', { weight: 2 });
    }
    inBatches.push(...(await drain(batched, 7)));
    oneByOne.push(...(await drain(single, 1)));
    expect(inBatches.slice(4, 13)).toEqual([
      'w3-low-2',
      'mix-high-0',
      'lim-low-0',
      'w2-low-0',
      'w2-low-1',
      's-low-1',
      'rel-low-1',
      'w3-low-3',
      'w3-low-4',
    ]);
    // every runnable job: 3 of s and 3 of rel (the failed and the released ones again), 9 + 7 + 2 (the limit) + 5
    expect(inBatches).toHaveLength(3 + 3 + 9 + 7 + 2 + 5);
    expect(inBatches).toEqual(oneByOne);
    // the counting scheme shows in the order: mix two high, then a low
    expect(inBatches.filter((id) => id.startsWith('mix')).slice(0, 3)).toEqual(['mix-high-0', 'mix-high-1', 'mix-low-0']);
    expect(await readGroupStates(raw, batched.groups)).toEqual(await readGroupStates(raw, single.groups));
    expect(await raw.lrange(batched.rotation, 0, -1)).toEqual(await raw.lrange(single.rotation, 0, -1));
    raw.disconnect();
  });

  it('takes what a list holds when its count says more (a list changed by hand), and sets the count right', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    const raw = rawClient();
    const k = queueKeys(name);
    await q.submitBulk(Array.from({ length: 4 }, (_, i) => ({ id: `j${i}`, task: 'noop', group: 'g' })));
    await q.submit({ id: 'o0', task: 'noop', group: 'o' });
    // One id taken out of g's list behind the scripts' back: g's record still counts 4.
    expect(await raw.rpop(`${k.prefix}g:g:l`)).toBe('j0');
    expect(ids(await takeRaw(raw, k, 10))).toEqual(['j1', 'o0', 'j2', 'j3']);
    // g's list is empty and counted so: it left the rotation and the hash, and comes back with its next job.
    expect((await readGroupStates(raw, k.groups)).has('g')).toBe(false);
    expect(await raw.lrange(k.rotation, 0, -1)).toEqual([]);
    await q.submit({ id: 'j4', task: 'noop', group: 'g' });
    expect(ids(await takeRaw(raw, k, 10))).toEqual(['j4']);
    raw.disconnect();
  });
});

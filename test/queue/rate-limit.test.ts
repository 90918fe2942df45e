/**
 * Per-group rate limits: at most `max` of a group's jobs start (are taken) in any window of
 * `perMs`, across every executor; a group at its rate leaves the rotation until its window frees,
 * and executors sleep until then.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type Handlers, type Job, type Queue, ValidationError, type Worker } from '../../src/index.js';
import { GROUP_DUE_MARK } from '../../src/redis/wire.js';
import { executorScript } from '../fixtures/chaos.js';
import { NodeProcess } from '../helpers/processes.js';
import { closeAll, eventually, openQueue, openWorker, privateRedis, uniqueQueue, until } from '../helpers/setup.js';

const children: NodeProcess[] = [];
afterEach(async () => {
  for (const p of children.splice(0)) await p.kill();
  await closeAll();
});

// A server of this file's own: a test sees whether its executor is asleep (blocked) on it.
const own = privateRedis();
const url = () => own.server.url;
const queueOn = (name: string): Queue => openQueue(name, { connection: url() });
const workerOn = (name: string, handlers: Handlers, opts: Parameters<typeof openWorker>[2] = {}): Worker =>
  openWorker(name, handlers, { connection: url(), fallbackWakeMs: 10 * 60_000, ...opts });

/** Resolves once an executor blocks on a queue's wake-up marker (it sleeps), on this file's server. */
async function asleep(): Promise<void> {
  await eventually(async () => /cmd=bzpopmin/.test(String(await own.admin.call('CLIENT', 'LIST', 'TYPE', 'normal'))));
}

/** The times (server clock) the queue handed out each of `ids` (field `taken`), sorted. */
async function takenTimes(q: Queue, ids: string[]): Promise<number[]> {
  const jobs = await Promise.all(ids.map((id) => q.getJob(id)));
  return jobs.map((j) => j!.taken!).sort((a, b) => a - b);
}

/** Checks that no window of `perMs` holds more than `max` of `times` (sorted): the (max+1)-th start after any start is at least perMs later. */
function expectWithinRate(times: number[], max: number, perMs: number): void {
  for (let i = 0; i + max < times.length; i++) {
    expect(times[i + max] - times[i], `starts ${i}..${i + max} of ${times.join(',')}`).toBeGreaterThanOrEqual(perMs);
  }
}

describe('rate limits', () => {
  it('sets, shows, combines with concurrency and weight, and lifts a group rate', async () => {
    const q = queueOn(uniqueQueue());
    await q.setGroupLimit('g', { rate: { max: 10, perMs: 1000 }, concurrency: 2, weight: 3 });
    const [g] = await q.groups();
    expect(g).toMatchObject({ group: 'g', rate: { max: 10, perMs: 1000 }, limit: 2, weight: 3 });
    await q.setGroupLimit('g', { concurrency: 0 });
    expect((await q.groups())[0]).toMatchObject({ rate: { max: 10, perMs: 1000 }, limit: 0, weight: 3 });
    await q.setGroupLimit('g', { rate: null, weight: 1 });
    // no rate, no limit, default weight and no jobs: nothing of its own is kept
    expect(await q.groups()).toEqual([]);
  });

  it('refuses a bad rate with a named field and writes nothing', async () => {
    const q = queueOn(uniqueQueue());
    const bad: Array<[unknown, string]> = [
      [{ max: 0, perMs: 1000 }, 'rate.max'],
      [{ max: 1.5, perMs: 1000 }, 'rate.max'],
      [{ max: 5, perMs: 0 }, 'rate.perMs'],
      [{ max: 5 }, 'rate.perMs'],
      [{ max: 5, perMs: 2 ** 31 }, 'rate.perMs'],
      [{ max: 5, perMs: 100, burst: 1 }, 'rate.burst'],
      ['10/1s', 'rate'],
    ];
    for (const [rate, field] of bad) {
      const err = await q.setGroupLimit('g', { rate: rate as never }).catch((e: unknown) => e);
      expect(err, JSON.stringify(rate)).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).field).toBe(field);
    }
    expect(await own.admin.exists(q.keys.groups)).toBe(0);
  });

  it('starts at most max in any window, while an unlimited group is not held back', async () => {
    const name = uniqueQueue();
    const q = queueOn(name);
    const max = 3;
    const perMs = 700;
    await q.setGroupLimit('rated', { rate: { max, perMs } });
    const rated = await q.submitBulk(Array.from({ length: 10 }, () => ({ task: 't', group: 'rated' })));
    const free = await q.submitBulk(Array.from({ length: 10 }, () => ({ task: 't', group: 'free' })));
    const done: Job[] = [];
    const w = workerOn(name, { t: async () => 'ok' }, { concurrency: 10 });
    w.on('completed', (j) => done.push(j));
    await until(w, 'completed', () => done.length === 20);
    const times = await takenTimes(
      q,
      rated.map((j) => j.id),
    );
    expectWithinRate(times, max, perMs);
    // the unlimited group's jobs ran while the rated group waited for its windows
    const freeDone = await Promise.all(free.map((j) => q.getJob(j.id)));
    expect(Math.max(...freeDone.map((j) => j!.finished!))).toBeLessThan(times[max]);
    // (a group without a rate keeps no take time)
    expect(freeDone[0]!.taken).toBeUndefined();
  });

  it('parks a group at its rate out of the rotation, the executor asleep, until its window frees or the rate changes', async () => {
    const name = uniqueQueue();
    const q = queueOn(name);
    await q.setGroupLimit('g', { rate: { max: 2, perMs: 10 * 60_000 } });
    const jobs = await q.submitBulk(Array.from({ length: 5 }, () => ({ task: 't', group: 'g' })));
    const done: Job[] = [];
    const w = workerOn(name, { t: async () => 'ok' });
    w.on('completed', (j) => done.push(j));
    await until(w, 'completed', () => done.length === 2);
    await asleep();
    expect(await own.admin.lrange(q.keys.rotation, 0, -1)).not.toContain('g');
    const [first] = await takenTimes(q, [jobs[0].id]);
    expect(Number(await own.admin.zscore(q.keys.delayed, `${GROUP_DUE_MARK}g`))).toBe(first + 10 * 60_000);
    expect((await q.groups())[0]).toMatchObject({ group: 'g', waiting: 3 });
    // a parked group's delayed-set entry is no job
    expect(await q.jobs({ state: 'stuck' })).toEqual([]);
    // a raised rate lets it go on at once, a lifted one without bound
    await q.setGroupLimit('g', { rate: { max: 4, perMs: 10 * 60_000 } });
    await until(w, 'completed', () => done.length === 4);
    await q.setGroupLimit('g', { rate: null });
    await until(w, 'completed', () => done.length === 5);
    expect(await own.admin.exists(`${q.keys.group('g')}:rl`)).toBe(0);
    expect(await own.admin.zscore(q.keys.delayed, `${GROUP_DUE_MARK}g`)).toBeNull();
  });

  it('combines with a concurrency limit: neither is exceeded', async () => {
    const name = uniqueQueue();
    const q = queueOn(name);
    await q.setGroupLimit('g', { rate: { max: 4, perMs: 500 }, concurrency: 1 });
    const jobs = await q.submitBulk(Array.from({ length: 8 }, () => ({ task: 't', group: 'g' })));
    let running = 0;
    let most = 0;
    const done: Job[] = [];
    const w = workerOn(
      name,
      {
        t: async () => {
          running += 1;
          most = Math.max(most, running);
          await new Promise((r) => setTimeout(r, 20));
          running -= 1;
        },
      },
      { concurrency: 5 },
    );
    w.on('completed', (j) => done.push(j));
    await until(w, 'completed', () => done.length === 8);
    expect(most).toBe(1);
    expectWithinRate(
      await takenTimes(
        q,
        jobs.map((j) => j.id),
      ),
      4,
      500,
    );
  });

  it('holds across two executor processes, one killed mid-run: never more than max starts in a window', async () => {
    const name = uniqueQueue();
    const q = queueOn(name);
    const max = 4;
    const perMs = 1000;
    await q.setGroupLimit('g', { rate: { max, perMs } });
    const env = { REDIS_URL: url(), QUEUE: name, CONCURRENCY: '8', KEEP_ALL: '1', LEASE_MS: '1000', REPORT: '1' };
    const executors: NodeProcess[] = [];
    for (const id of ['exec-a', 'exec-b']) {
      const p = new NodeProcess(executorScript(), [], { ...env, ID: id });
      children.push(p);
      executors.push(p);
      await p.waitFor((m) => m.type === 'ready');
    }
    const jobs = await q.submitBulk(Array.from({ length: 12 }, () => ({ task: 'work', group: 'g', args: { ms: 300 } })));
    // The executor that starts the first job is killed with it running: its runs come back through
    // their leases and start again on the other, counted by the rate like any start.
    const first = await Promise.race(executors.map((p) => p.waitFor((m) => m.type === 'started').then(() => p)));
    await first.kill();
    await eventually(async () => (await q.counts()).success === 12, 60_000);
    // (each job's last start: a subset of every start, which holds to the rate if they all do)
    const ids = jobs.map((j) => j.id);
    expectWithinRate(await takenTimes(q, ids), max, perMs);
    const retried = (await Promise.all(ids.map((id) => q.getJob(id)))).filter((j) => j!.retries > 0);
    expect(retried.length).toBeGreaterThan(0);
  });
});

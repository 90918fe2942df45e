/**
 * Delayed jobs: submitted with `delay` or `runAt`, `delayed` until due by the server's clock,
 * then waiting; listed, counted, cancellable; executors wake for them without polling.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type Handlers, type Job, type Queue, ValidationError, type Worker } from '../../src/index.js';
import { executorScript } from '../fixtures/chaos.js';
import { readRuns } from '../fixtures/runs.js';
import { NodeProcess } from '../helpers/processes.js';
import { closeAll, eventually, openQueue, openWorker, privateRedis, uniqueQueue, until } from '../helpers/setup.js';

// A server of this file's own: a test sees whether its executor is asleep (blocked) on it.
const own = privateRedis();
const url = () => own.server.url;
const queueOn = (name: string): Queue => openQueue(name, { connection: url() });
const workerOn = (name: string, handlers: Handlers, opts: Parameters<typeof openWorker>[2] = {}): Worker =>
  openWorker(name, handlers, { connection: url(), ...opts });

/** Resolves once an executor blocks on a queue's wake-up marker (it sleeps), on this file's server. */
async function asleep(): Promise<void> {
  await eventually(async () => /cmd=bzpopmin/.test(String(await own.admin.call('CLIENT', 'LIST', 'TYPE', 'normal'))));
}

const children: NodeProcess[] = [];
afterEach(async () => {
  for (const p of children.splice(0)) await p.kill();
  await closeAll();
});

/** An executor's fallback wake-up far past every test's timeout: a job that runs was woken for. */
const NO_FALLBACK = { fallbackWakeMs: 10 * 60_000 };

describe('delayed jobs', () => {
  it('is delayed, listed, counted and carries runAt until due, then runs at its due time', async () => {
    const name = uniqueQueue();
    const q = queueOn(name);
    const job = await q.submit({ task: 't', group: 'g', delay: 700 });
    expect(job.state).toBe('delayed');
    expect(job.runAt).toBe(job.submitted + 700);
    const stored = (await q.getJob(job.id))!;
    expect(stored.state).toBe('delayed');
    expect(stored.runAt).toBe(job.submitted + 700);
    expect((await q.jobs({ state: 'delayed' })).map((j) => j.id)).toEqual([job.id]);
    expect((await q.jobs({ state: 'waiting' })).length).toBe(0);
    expect((await q.counts()).delayed).toBe(1);

    const done: Job[] = [];
    // The executor starts idle (the job is not due): it runs the job only if it wakes for its due time.
    const w = workerOn(name, { t: async () => 'ok' }, NO_FALLBACK);
    w.on('completed', (j) => done.push(j));
    await until(w, 'completed', () => done.length === 1);
    const ran = (await q.getJob(job.id))!;
    expect(ran.state).toBe('success');
    expect(ran.started).toBeGreaterThanOrEqual(ran.runAt!);
    // its wait counts from its due time, not from the submit
    expect((await q.stats()).waitMs.max).toBe(ran.started! - ran.runAt!);
    const counts = await q.counts();
    expect(counts.delayed).toBe(0);
    expect(counts.waiting).toBe(0);
    expect(counts.success).toBe(1);
  });

  it('takes runAt as a Date or ms in submitBulk, and runs a due time already past at once', async () => {
    const name = uniqueQueue();
    const q = queueOn(name);
    const now = Date.now();
    const [past, later, plain] = await q.submitBulk([
      { task: 't', runAt: new Date(now - 60_000) },
      { task: 't', runAt: now + 60_000 },
      { task: 't' },
    ]);
    expect(past.state).toBe('waiting');
    expect(later.state).toBe('delayed');
    expect(later.runAt).toBe(now + 60_000);
    expect(plain.state).toBe('waiting');
    expect(plain.runAt).toBeUndefined();
    expect((await q.getJob(past.id))!.runAt).toBe(now - 60_000);
    expect((await q.getJob(later.id))!.runAt).toBe(now + 60_000);
    const counts = await q.counts();
    expect(counts.waiting).toBe(2);
    expect(counts.delayed).toBe(1);
  });

  it('wakes a sleeping executor when a job is due before the one it sleeps for', async () => {
    const name = uniqueQueue();
    const q = queueOn(name);
    await q.submit({ task: 't', delay: 10 * 60_000 });
    const done: Job[] = [];
    const w = workerOn(name, { t: async () => 'ok' }, NO_FALLBACK);
    w.on('completed', (j) => done.push(j));
    // the executor takes nothing and sleeps until the first job's due time, ten minutes away
    await asleep();
    const soon = await q.submit({ task: 't', delay: 300 });
    await until(w, 'completed', () => done.length === 1);
    expect(done[0].id).toBe(soon.id);
    expect((await q.counts()).delayed).toBe(1);
  });

  it('promotes a delayed job to the back of its priority list, after the jobs waiting there', async () => {
    const name = uniqueQueue();
    const q = queueOn(name);
    const early = await q.submit({ task: 't', group: 'g', priority: 'high', delay: 300 });
    // (due by the server's clock, before the next is submitted)
    await eventually(async () => Number((await q.client.time())[0]) * 1000 > early.runAt! + 1000);
    const after = await q.submit({ task: 't', group: 'g', priority: 'high' });
    const order: string[] = [];
    const w = workerOn(name, { t: async ({ job }) => void order.push(job.id) }, { concurrency: 1 });
    await until(w, 'completed', () => order.length === 2);
    // (due before the other was submitted, it is promoted by the first take, behind it in FIFO order)
    expect(order).toEqual([after.id, early.id]);
  });

  it('cancels a delayed job: it leaves the due set and the count, and never runs', async () => {
    const name = uniqueQueue();
    const q = queueOn(name);
    const cancelled = await q.submit({ task: 't', group: 'g', delay: 200 });
    const last = await q.submit({ task: 't', group: 'g', delay: 400 });
    expect(await q.cancel(cancelled.id)).toBe('cancelled');
    expect((await q.counts()).delayed).toBe(1);
    expect((await q.jobs({ state: 'delayed' })).map((j) => j.id)).toEqual([last.id]);
    const ran: string[] = [];
    const w = workerOn(name, { t: async ({ job }) => void ran.push(job.id) }, NO_FALLBACK);
    await until(w, 'completed', () => ran.length === 1);
    expect(ran).toEqual([last.id]);
    const c = (await q.getJob(cancelled.id))!;
    expect(c.state).toBe('cancelled');
    expect(c.started).toBeUndefined();
    const counts = await q.counts();
    expect(counts).toMatchObject({ delayed: 0, waiting: 0, cancelled: 1, success: 1 });
  });

  it('keeps an idempotent id with a delay: a second submit returns the delayed job', async () => {
    const name = uniqueQueue();
    const q = queueOn(name);
    const first = await q.submit({ id: 'invoice-7', task: 't', delay: 60_000 });
    const again = await q.submit({ id: 'invoice-7', task: 't', delay: 1 });
    expect(again.state).toBe('delayed');
    expect(again.runAt).toBe(first.runAt);
    const [bulk] = await q.submitBulk([{ id: 'invoice-7', task: 't' }]);
    expect(bulk.runAt).toBe(first.runAt);
    expect((await q.counts()).delayed).toBe(1);
    expect(await own.admin.zcard(q.keys.delayed)).toBe(1);
  });

  it('refuses a bad due time with a named field and writes nothing', async () => {
    const name = uniqueQueue();
    const q = queueOn(name);
    const bad: Array<[Record<string, unknown>, string]> = [
      [{ task: 't', delay: -1 }, 'delay'],
      [{ task: 't', delay: 1.5 }, 'delay'],
      [{ task: 't', runAt: new Date(Number.NaN) }, 'runAt'],
      [{ task: 't', runAt: 'tomorrow' }, 'runAt'],
      [{ task: 't', delay: 10, runAt: Date.now() }, 'delay'],
      [{ task: 't', id: '\u0000x' }, 'id'],
    ];
    for (const [spec, field] of bad) {
      const err = await q.submit(spec as never).catch((e: unknown) => e);
      expect(err, JSON.stringify(spec)).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).field).toBe(field);
    }
    const err = await q.submitBulk([{ task: 't' }, { task: 't', delay: -5 }]).catch((e: unknown) => e);
    expect((err as ValidationError).field).toBe('specs[1].delay');
    expect(await own.admin.exists(q.keys.delayed, q.keys.counts, q.keys.groups)).toBe(0);
  });

  it('survives a crashed executor: taken at its due time, killed mid-run, recovered and run by another', async () => {
    const name = uniqueQueue();
    const q = queueOn(name);
    const env = { REDIS_URL: url(), QUEUE: name, LEASE_MS: '1000', REPORT: '1', KEEP_ALL: '1' };
    const a = new NodeProcess(executorScript(), [], { ...env, ID: 'exec-a' });
    children.push(a);
    await a.waitFor((m) => m.type === 'ready');
    const job = await q.submit({ task: 'work', args: { ms: 1500 }, delay: 500, maxRetries: 3 });
    await a.waitFor((m) => m.type === 'started' && m.id === job.id);
    await a.kill();
    const b = new NodeProcess(executorScript(), [], { ...env, ID: 'exec-b' });
    children.push(b);
    await b.waitFor((m) => m.type === 'completed' && m.id === job.id, 30_000);
    const ran = (await q.getJob(job.id))!;
    expect(ran.state).toBe('success');
    expect(ran.worker).toBe('exec-b');
    expect(ran.runAt).toBe(job.runAt);
    const runs = (await readRuns(own.admin, name)).get(job.id)!;
    expect(runs.map((r) => r.worker)).toEqual(['exec-a', 'exec-b']);
  });
});

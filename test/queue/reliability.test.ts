/**
 * Reliable execution (issue 3), in-process parts: graceful shutdown, timebox, SIGTERM handling,
 * retention by count and age, the events stream, and repeats of start/finish after a reconnect.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type Job, PermanentError, Queue, type QueueEvent, TimeoutError, Worker } from '../../src/index.js';
import { executorScript } from '../fixtures/chaos.js';
import { NodeProcess } from '../helpers/processes.js';
import { rawClient, redisUrl, uniqueQueue, until } from '../helpers/setup.js';
import { finishRuns, settings, startRuns, storeOf, takeRuns } from '../helpers/store.js';
import { eventually, sleep } from '../helpers/wait.js';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const c of open.splice(0).reverse()) await c.close();
});

function queue(name: string): Queue {
  const q = new Queue(name, { connection: redisUrl() });
  open.push(q);
  return q;
}

function worker(
  name: string,
  handlers: ConstructorParameters<typeof Worker>[1],
  opts: Partial<ConstructorParameters<typeof Worker>[2]> = {},
): Worker {
  const w = new Worker(name, handlers, { connection: redisUrl(), ...opts });
  w.on('error', () => {});
  open.push(w);
  return w;
}

/** Resolves once the job is in one of `states`. */
function stateOf(q: Queue, id: string, states: string[]): Promise<Job> {
  return eventually(
    `job ${id} to be ${states.join('|')}`,
    async () => {
      const j = await q.getJob(id);
      return j && states.includes(j.state) ? j : null;
    },
    20_000,
  );
}

describe('graceful shutdown', () => {
  it('lets running jobs finish until the timeout, then aborts and releases the rest without counting a retry', async () => {
    const name = uniqueQueue('shutdown');
    const q = queue(name);
    const reasons: string[] = [];
    const stubborn = async ({ signal }: { signal: AbortSignal }) => {
      await new Promise((_r, reject) =>
        signal.addEventListener('abort', () => {
          reasons.push(String((signal.reason as Error).message));
          reject(signal.reason);
        }),
      );
    };
    const w = worker(name, { quick: () => sleep(150).then(() => 'done'), stubborn }, { concurrency: 3 });
    const [quick, s1, s2] = await q.submitBulk([
      { task: 'quick', group: 'a' },
      { task: 'stubborn', group: 'b' },
      { task: 'stubborn', group: 'c' },
    ]);
    await Promise.all([quick, s1, s2].map((j) => stateOf(q, j.id, ['running'])));
    await w.close({ timeout: 1000 });

    expect((await q.getJob(quick.id))!.state).toBe('success');
    for (const j of [s1, s2]) {
      const job = (await q.getJob(j.id))!;
      expect(job.state).toBe('waiting');
      expect(job.retries).toBe(0);
      expect(job.worker).toBeUndefined();
    }
    expect(reasons).toEqual(['executor is shutting down', 'executor is shutting down']);
    const counts = await q.counts();
    expect([counts.waiting, counts.running, counts.scheduled, counts.success]).toEqual([2, 0, 0, 1]);
    expect(await q.workers()).toEqual([]);

    // Another executor runs them; still no retry counted.
    const done: Job[] = [];
    const w2 = worker(name, { stubborn: () => 'second time' });
    w2.on('completed', (j) => done.push(j));
    await until(w2, 'completed', () => done.length === 2);
    for (const j of [s1, s2]) {
      const job = (await q.getJob(j.id))!;
      expect([job.state, job.retries, job.result]).toEqual(['success', 0, 'second time']);
    }
  });

  it('close() while idle returns promptly and may be called twice', async () => {
    const name = uniqueQueue('shutdown-idle');
    const w = worker(name, { x: () => 1 }, { fallbackWakeMs: 60_000 });
    await w.run();
    await sleep(100);
    const t = Date.now();
    await Promise.all([w.close(), w.close()]);
    expect(Date.now() - t).toBeLessThan(5000);
  });

  it('SIGTERM to an executor process releases its running jobs and exits', async () => {
    const name = uniqueQueue('sigterm');
    const q = queue(name);
    const child = new NodeProcess(executorScript(), [], {
      REDIS_URL: redisUrl(),
      QUEUE: name,
      ID: 'term-1',
      CONCURRENCY: '2',
      REPORT: '1',
      SHUTDOWN_TIMEOUT: '300',
    });
    open.push({ close: () => child.kill() });
    await child.waitFor((m) => m?.type === 'ready');
    const jobs = await q.submitBulk([
      { task: 'hang', group: 'a' },
      { task: 'hang', group: 'b' },
    ]);
    for (const j of jobs) await child.waitFor((m) => m?.type === 'started' && m.id === j.id);
    child.signal('SIGTERM');
    expect(await child.exited).toBe(0);
    for (const j of jobs) {
      const job = (await q.getJob(j.id))!;
      expect([job.state, job.retries]).toEqual(['waiting', 0]);
    }
    expect((await q.workers()).map((w) => w.id)).not.toContain('term-1');
  });
});

describe('timebox', () => {
  it('aborts the signal at maxRuntime, fails a handler that ignores it after the grace period, and frees its slot', async () => {
    const name = uniqueQueue('timebox');
    const q = queue(name);
    let abortedAt = 0;
    let ignorerReturned = false;
    const failed: Array<[Job, Error]> = [];
    const w = worker(
      name,
      {
        ignore: async ({ signal }) => {
          signal.addEventListener('abort', () => (abortedAt = Date.now()));
          await sleep(6000);
          ignorerReturned = true;
        },
        polite: ({ signal }) => new Promise((_r, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
        quick: () => 'ok',
      },
      { concurrency: 1, graceMs: 300 },
    );
    w.on('failed', (job, err) => failed.push([job, err]));
    const started = Date.now();
    const [ign, pol, quick] = await q.submitBulk([
      { task: 'ignore', maxRuntime: 200, maxRetries: 3 },
      { task: 'polite', maxRuntime: 200, maxRetries: 3 },
      { task: 'quick' },
    ]);
    // One slot: the quick job can only run once the ignoring handler's slot was freed.
    const q3 = await stateOf(q, quick.id, ['success']);
    expect(ignorerReturned).toBe(false);
    expect(abortedAt - started).toBeGreaterThanOrEqual(150);
    for (const id of [ign.id, pol.id]) {
      const job = (await q.getJob(id))!;
      expect(job.state).toBe('failed');
      expect(job.retries).toBe(0);
      expect(job.error).toMatch(/timed out: ran longer than its maxRuntime of 200 ms/);
    }
    expect(failed.map(([j, e]) => [j.id, e instanceof TimeoutError])).toEqual([
      [ign.id, true],
      [pol.id, true],
    ]);
    expect(q3.result).toBe('ok');
  });
});

describe('retry wake-up', () => {
  it("an idle executor wakes at a stuck job's due time, not at its fallback timer", async () => {
    const name = uniqueQueue('stuck-wake');
    const q = queue(name);
    let calls = 0;
    const done: Job[] = [];
    // Two slots: while the job runs, the loop blocks on the marker for work for the free slot.
    const w = worker(
      name,
      {
        flaky: async () => {
          await sleep(100);
          if (++calls === 1) throw new Error('first try fails');
          return 'ok';
        },
      },
      { concurrency: 2, retryDelay: 100, fallbackWakeMs: 60_000 },
    );
    w.on('completed', (j) => done.push(j));
    const job = await q.submit({ task: 'flaky' });
    await until(w, 'completed', () => done.length === 1, 20_000);
    expect((await q.getJob(job.id))!.retries).toBe(1);
  });
});

describe('retention', () => {
  it('keeps the last N finished jobs per state and drops older ones with their logs', async () => {
    const name = uniqueQueue('retention');
    const q = queue(name);
    const order: string[] = [];
    const w = worker(
      name,
      {
        ok: async ({ log }) => {
          log('hello');
          await sleep(3);
          return 1;
        },
        bad: () => {
          throw new PermanentError('no');
        },
      },
      { keepSucceeded: { count: 3 }, keepFailed: { count: 2 } },
    );
    w.on('completed', (j) => order.push(j.id));
    const ok = await q.submitBulk(Array.from({ length: 10 }, () => ({ task: 'ok' })));
    const bad = await q.submitBulk(Array.from({ length: 5 }, () => ({ task: 'bad' })));
    await until(w, 'completed', () => order.length === 10);
    await Promise.all(
      bad.map((j) =>
        eventually(
          'failed or removed',
          async () => {
            const job = await q.getJob(j.id);
            return !job || job.state === 'failed';
          },
          20_000,
        ),
      ),
    );
    const raw = rawClient();
    try {
      const keptOk = await raw.zrange(`{rota:${name}}:done:success`, 0, -1);
      expect(keptOk.sort()).toEqual(order.slice(-3).sort());
      expect((await raw.zrange(`{rota:${name}}:done:failed`, 0, -1)).length).toBe(2);
      for (const id of order.slice(0, 7)) {
        expect(await q.getJob(id)).toBeNull();
        expect(await raw.exists(`{rota:${name}}:log:${id}`)).toBe(0);
      }
      expect(await q.jobLogs(order[9])).toHaveLength(1);
      const kept = (await Promise.all(ok.map((j) => q.getJob(j.id)))).filter(Boolean);
      expect(kept).toHaveLength(3);
      const counts = await q.counts();
      expect([counts.success, counts.failed]).toEqual([3, 2]);
    } finally {
      raw.disconnect();
    }
  });

  it('removes finished jobs past their keep age', async () => {
    const name = uniqueQueue('retention-age');
    const q = queue(name);
    const done: Job[] = [];
    const w = worker(name, { ok: () => 1 }, { keepSucceeded: { count: -1, age: 300 }, leaseMs: 1000 });
    w.on('completed', (j) => done.push(j));
    const jobs = await q.submitBulk(Array.from({ length: 5 }, () => ({ task: 'ok' })));
    await until(w, 'completed', () => done.length === 5);
    await eventually(
      'old jobs to be removed',
      async () => {
        const left = await Promise.all(jobs.map((j) => q.getJob(j.id)));
        return left.every((j) => j === null);
      },
      10_000,
    );
    expect((await q.counts()).success).toBe(0);
  });

  it('lets a keep count run over by a twentieth, then trims back to it in one step', async () => {
    const name = uniqueQueue('retention-slack');
    const q = queue(name);
    const done: Job[] = [];
    const w = worker(name, { ok: () => 1 }, { keepSucceeded: { count: 40 } });
    w.on('completed', (j) => done.push(j));
    const raw = rawClient();
    try {
      await q.submitBulk(Array.from({ length: 42 }, () => ({ task: 'ok' })));
      await until(w, 'completed', () => done.length === 42);
      expect(await raw.zcard(`{rota:${name}}:done:success`)).toBe(42);
      await q.submit({ task: 'ok' });
      await until(w, 'completed', () => done.length === 43);
      const kept = new Set(await raw.zrange(`{rota:${name}}:done:success`, 0, -1));
      expect(kept.size).toBe(40);
      const removed = done.filter((j) => !kept.has(j.id));
      expect(removed).toHaveLength(3);
      for (const j of removed) expect(await q.getJob(j.id)).toBeNull();
      expect((await q.counts()).success).toBe(40);
    } finally {
      raw.disconnect();
    }
  });

  it('trims in bounded steps: one finish removes at most 200 jobs', async () => {
    const name = uniqueQueue('retention-bound');
    const q = queue(name);
    const first: Job[] = [];
    const w1 = worker(name, { ok: () => 1 }, { concurrency: 50, keepSucceeded: { count: -1 } });
    w1.on('completed', (j) => first.push(j));
    await q.submitBulk(Array.from({ length: 450 }, () => ({ task: 'ok' })));
    await until(w1, 'completed', () => first.length === 450, 30_000);
    await w1.close();
    const raw = rawClient();
    try {
      expect(await raw.zcard(`{rota:${name}}:done:success`)).toBe(450);
      const second: Job[] = [];
      const w2 = worker(name, { ok: () => 1 }, { keepSucceeded: { count: 10 } });
      w2.on('completed', (j) => second.push(j));
      await q.submit({ task: 'ok' });
      await until(w2, 'completed', () => second.length === 1);
      expect(await raw.zcard(`{rota:${name}}:done:success`)).toBe(251);
      await q.submit({ task: 'ok' });
      await until(w2, 'completed', () => second.length === 2);
      expect(await raw.zcard(`{rota:${name}}:done:success`)).toBe(52);
    } finally {
      raw.disconnect();
    }
  });
});

describe('events stream', () => {
  it('records every state change, carries the error of stuck and failed, and resumes from an id', async () => {
    const name = uniqueQueue('events');
    const q = queue(name);
    const ac = new AbortController();
    const seen: QueueEvent[] = [];
    const reading = (async () => {
      for await (const e of q.events({ signal: ac.signal })) seen.push(e);
    })().catch(() => {});
    await sleep(200); // the reader is blocked on the stream
    let calls = 0;
    const w = worker(
      name,
      {
        flaky: () => {
          if (++calls === 1) throw new Error('first try fails');
          return 'ok';
        },
        doomed: () => {
          throw new PermanentError('never');
        },
      },
      { retryDelay: 50 },
    );
    const flaky = await q.submit({ task: 'flaky', maxRetries: 2 });
    const doomed = await q.submit({ task: 'doomed' });
    await stateOf(q, flaky.id, ['success']);
    await stateOf(q, doomed.id, ['failed']);
    await eventually('events', async () => seen.filter((e) => e.state === 'success' || e.state === 'failed').length >= 2, 20_000);
    ac.abort();
    await reading;
    const of = (id: string) => seen.filter((e) => e.id === id);
    expect(of(flaky.id).map((e) => e.state)).toEqual([
      'waiting',
      'scheduled',
      'running',
      'stuck',
      'scheduled',
      'running',
      'success',
    ]);
    expect(of(flaky.id).find((e) => e.state === 'stuck')!.error).toMatch(/first try fails/);
    expect(of(doomed.id).map((e) => e.state)).toEqual(['waiting', 'scheduled', 'running', 'failed']);
    expect(of(doomed.id).at(-1)!.error).toMatch(/never/);
    expect(
      of(flaky.id)
        .filter((e) => e.state !== 'stuck' && e.state !== 'failed')
        .every((e) => e.error === undefined),
    ).toBe(true);

    // Resuming after the stuck event replays exactly what followed it.
    const stuck = of(flaky.id).find((e) => e.state === 'stuck')!;
    const after = seen.slice(seen.indexOf(stuck) + 1).filter((e) => e.streamId !== stuck.streamId);
    const ac2 = new AbortController();
    const replay: QueueEvent[] = [];
    for await (const e of q.events({ from: stuck.streamId, signal: ac2.signal })) {
      replay.push(e);
      if (replay.length === after.length) ac2.abort();
    }
    expect(replay).toEqual(after);
    await w.close();
  });
});

describe('repeats after a reconnect', () => {
  it('a start or finish applied twice with the same token changes nothing and is not refused', async () => {
    const name = uniqueQueue('repeat');
    const q = queue(name);
    const raw = rawClient();
    try {
      const job = await q.submit({ task: 'x' });
      const k = q.keys;
      const store = storeOf(raw, name);
      const taken = await takeRuns(store, 1, settings('exec-r'));
      const token = await raw.hget(k.job(job.id), 'takeSeq');
      // one job, with the token the take wrote
      expect(taken).toEqual([[job.id, token]]);
      for (let i = 0; i < 2; i++) {
        const { lost } = await startRuns(store, [[job.id, token!]]);
        expect(lost).toEqual([]);
      }
      const ends = settings('', { countingScheme: [1, 1], leaseMs: 1000 });
      const finish = async () => (await finishRuns(store, [[job.id, token!, 's']], ends)).states;
      expect(await finish()).toEqual(['success']);
      const before = await raw.hgetall(k.job(job.id));
      expect(await finish()).toEqual(['success']);
      expect(await raw.hgetall(k.job(job.id))).toEqual(before);
      expect((await q.counts()).success).toBe(1);
      // A wrong token is refused.
      const { states: refused } = await finishRuns(store, [[job.id, String(Number(token) + 1), 's']], ends);
      expect(refused).toEqual(['']);
    } finally {
      raw.disconnect();
    }
  });
});

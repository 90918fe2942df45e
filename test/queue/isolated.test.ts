/**
 * Isolated tasks (src/executor/isolated.ts) in real worker threads and child processes: the
 * whole context crosses (args, job, log, progress, fanOut, the result, thrown errors), pools are
 * reused and recycled, and options are checked.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { isolated, type Job, PermanentError, serveMetrics, ValidationError, Worker } from '../../src/index.js';
import { closeAll, eventually, openQueue, openWorker, track, uniqueQueue, until } from '../helpers/setup.js';

const TASKS = new URL('../fixtures/isolated/tasks.ts', import.meta.url);

afterEach(closeAll);

describe.each(['thread', 'process'] as const)('an isolated task in a %s', (where) => {
  it('gets the whole context, and its result, logs, progress and fan-out reach Redis', async () => {
    const name = uniqueQueue(`iso-${where}`);
    const q = openQueue(name);
    const progress: number[] = [];
    const w = openWorker(name, { context: isolated(TASKS, { in: where }), noop: async () => 'child' });
    w.on('progress', (_j, n) => progress.push(n));
    const job = await q.submit({ task: 'context', args: { items: [1, 2, 3] } });
    const done = await eventually(async () => {
      const j = await q.getJob(job.id);
      return j?.state === 'success' && j;
    });
    const result = done.result as { pid: number; id: string; args: unknown; refused: string; aborted: boolean };
    expect(result.id).toBe(job.id);
    expect(result.args).toEqual({ items: [1, 2, 3] });
    // a process of its own, or this one's thread
    if (where === 'process') expect(result.pid).not.toBe(process.pid);
    else expect(result.pid).toBe(process.pid);
    // a refused call rejects there with the executor's error
    expect(result.refused).toMatch(/^ValidationError: progress: must be a finite number/);
    expect(result.aborted).toBe(false);
    expect(progress).toContain(50);
    expect((await q.jobLogs(job.id)).join('\n')).toMatch(/hello from \d+ \{"a":1\}/);
    // the fan-out's children were committed with its success
    const children = await eventually(async () => {
      const js = await Promise.all([0, 1, 2].map((i) => q.getJob(`${job.id}/${i}`)));
      return js.every((j) => j?.state === 'success') && js;
    });
    expect(children.map((c) => c?.args)).toEqual([1, 2, 3]);
  });

  it('gets the batch of a job of it, or of its callback, as ctx.batch: it adds jobs, reads the status and pages the jobs', async () => {
    const name = uniqueQueue(`iso-batch-${where}`);
    const q = openQueue(name);
    openWorker(name, { batched: isolated(TASKS, { in: where }), noop: async () => 'added' });
    const batch = await q.openBatch({ onSuccess: { task: 'batched' } });
    const job = await batch.submit({ task: 'batched', args: { add: 2 } });
    await batch.close();
    const callback = await eventually(async () => {
      const j = await q.getJob(`${batch.id}/success`);
      return j?.state === 'success' && j;
    });
    expect((await q.getJob(job.id))?.result).toMatchObject({ id: batch.id, total: 3 });
    expect(callback.result).toEqual({ id: batch.id, total: 3, listed: 3 });
    const added = await Promise.all([0, 1].map((i) => q.getJob(`${job.id}-${i}`)));
    expect(added.map((j) => [j?.state, j?.batch])).toEqual([
      ['success', batch.id],
      ['success', batch.id],
    ]);
    expect(await q.batch(batch.id)).toMatchObject({ total: 3, success: 3, state: 'succeeded' });
  });

  it('keeps a PermanentError permanent, and a plain error retried with its message and stack cut to the limit', async () => {
    const name = uniqueQueue(`iso-err-${where}`);
    const q = openQueue(name);
    const w = openWorker(name, { context: isolated(TASKS, { in: where }) }, { retryDelay: 0 });
    const failed: Array<[Job, Error]> = [];
    const stuck: Error[] = [];
    w.on('failed', (j, e) => failed.push([j, e]));
    w.on('stuck', (_j, e) => stuck.push(e));
    const perm = await q.submit({ task: 'context', args: { fail: 'permanent' }, maxRetries: 3 });
    const plain = await q.submit({ task: 'context', args: { fail: 'plain' }, maxRetries: 1 });
    await until(w, 'failed', () => failed.length === 2, 30_000);
    const p = await q.getJob(perm.id);
    expect(p?.retries).toBe(0);
    expect(p?.error).toMatch(/^PermanentError: no such invoice\n\s+at /);
    const f = await q.getJob(plain.id);
    expect(f?.retries).toBe(1);
    expect(stuck[0]).not.toBeInstanceOf(PermanentError);
    expect(f?.error).toMatch(/^TypeError: x+ … \[cut: \d+ bytes\]/);
    expect(Buffer.byteLength(f?.error ?? '')).toBeLessThanOrEqual(8 * 1024);
  });

  it('reuses its threads or processes, and recycles each after N jobs', async () => {
    const name = uniqueQueue(`iso-recycle-${where}`);
    const q = openQueue(name);
    const w = openWorker(name, { noop: isolated(TASKS, { in: where, recycleAfterJobs: 3 }) }, { concurrency: 1 });
    const results: Array<{ pid: number; ran: number }> = [];
    w.on('completed', (_j, r) => results.push(r as { pid: number; ran: number }));
    await q.submitBulk(Array.from({ length: 7 }, () => ({ task: 'noop' })));
    await until(w, 'completed', () => results.length === 7, 30_000);
    // one member at a time (concurrency 1): jobs 1-3 on the first, 4-6 on the second, 7 on a third
    expect(results.map((r) => r.ran)).toEqual([1, 2, 3, 1, 2, 3, 1]);
    if (where === 'process') expect(new Set(results.map((r) => r.pid)).size).toBe(3);
    await eventually(async () => (w.poolStats()[0].restarts.recycled ?? 0) >= 2);
    expect(w.poolStats()[0]).toMatchObject({ task: 'noop', in: where, max: 1 });
  });

  it('recycles one that a job left above its memory mark, not one below it', async () => {
    const name = uniqueQueue(`iso-mark-${where}`);
    const q = openQueue(name);
    const tasks = {
      noop: isolated(TASKS, { in: where, recycleAboveMb: 400 }),
      hoard: isolated(TASKS, { in: where, recycleAboveMb: 400 }),
    };
    const w = openWorker(name, tasks, { concurrency: 1 });
    const results: Array<{ task: string; pid: number; ran?: number }> = [];
    w.on('completed', (j, r) => results.push({ task: j.task, ...(r as { pid: number; ran?: number }) }));
    const pool = (task: string) => w.poolStats().find((p) => p.task === task)!;
    // a job that leaves its member small: kept
    await q.submitBulk([{ task: 'noop' }, { task: 'noop' }]);
    await until(w, 'completed', () => results.length === 2, 30_000);
    expect(results.map((r) => r.ran)).toEqual([1, 2]);
    expect(pool('noop').restarts.memory).toBeUndefined();
    // one that leaks 500 MB (heap used of a thread, RSS of a process, past the 400 MB mark): replaced
    await q.submit({ task: 'hoard', args: { mb: 500 } });
    await until(w, 'completed', () => results.length === 3, 30_000);
    await eventually(async () => pool('hoard').restarts.memory === 1, 20_000);
    await q.submit({ task: 'hoard', args: { mb: 1 } });
    await until(w, 'completed', () => results.length === 4, 30_000);
    if (where === 'process') expect(results[3].pid).not.toBe(results[2].pid);
    expect(pool('hoard').restarts.memory).toBe(1);
  });
});

describe('the pool of an isolated task that shares its members', () => {
  it.each(['thread', 'process'] as const)(
    'runs several jobs at once in one %s (jobsEach), and defaults to no more members than cores',
    async (where) => {
      const name = uniqueQueue(`iso-share-${where}`);
      const q = openQueue(name);
      const w = openWorker(name, { gather: isolated(TASKS, { in: where, max: 1 }) }, { concurrency: 3 });
      const results: Array<{ pid: number; seen: number }> = [];
      w.on('completed', (_j, r) => results.push(r as { pid: number; seen: number }));
      await q.submitBulk(Array.from({ length: 3 }, () => ({ task: 'gather', args: { n: 3 } })));
      await until(w, 'completed', () => results.length === 3, 30_000);
      // (one member took all three at once: each saw the other two)
      expect(results.map((r) => r.seen)).toEqual([3, 3, 3]);
      expect(new Set(results.map((r) => r.pid)).size).toBe(1);
      expect(w.poolStats()[0]).toMatchObject({ max: 1, size: 1 });
      expect(() => isolated(TASKS, { jobsEach: 0 })).toThrow(/^jobsEach:/);
      const wide = openWorker(uniqueQueue('iso-wide'), { gather: isolated(TASKS) }, { concurrency: 1000, autorun: false });
      expect(wide.poolStats()[0].max).toBe(Math.min(1000, availableParallelism()));
    },
  );
});

describe('the pool of an isolated task whose module could not load', () => {
  it('starts again by itself, and the executor becomes ready once the module loads, with no job to prompt it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rota-iso-'));
    try {
      const file = join(dir, 'late.mjs');
      const name = uniqueQueue('iso-late');
      const w = openWorker(name, { late: isolated(pathToFileURL(file)) });
      await w.run();
      expect(w.health().ready).toBe(false);
      expect(w.health().checks.pools.detail).toMatch(/task "late": its thread cannot start/);
      writeFileSync(file, 'export default () => "late";\n');
      await eventually(async () => w.health().ready, 20_000);
      expect(w.poolStats()[0].startError).toBeUndefined();
      expect(w.poolStats()[0].restarts.start).toBeGreaterThanOrEqual(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the pools of isolated tasks', () => {
  it('are measured: size, busy, and restarts by cause, per task', async () => {
    const name = uniqueQueue('iso-metrics');
    const q = openQueue(name);
    const w = openWorker(name, { noop: isolated(TASKS, { recycleAfterJobs: 1 }) }, { concurrency: 1 });
    const metrics = track(await serveMetrics({ port: 0, queue: q, workers: [w] }));
    const done: unknown[] = [];
    w.on('completed', (_j, r) => done.push(r));
    await q.submitBulk([{ task: 'noop' }, { task: 'noop' }]);
    await until(w, 'completed', () => done.length === 2, 30_000);
    await eventually(async () => w.poolStats()[0].restarts.recycled === 2);
    const text = await (await fetch(metrics.url)).text();
    expect(text).toContain(`rota_isolated_restarts_total{queue="${name}",task="noop",in="thread",cause="recycled"} 2`);
    expect(text).toMatch(new RegExp(`rota_isolated_pool_busy\\{queue="${name}",task="noop",in="thread"\\} 0`));
    expect(text).toMatch(new RegExp(`rota_isolated_pool_size\\{queue="${name}",task="noop",in="thread"\\} [01]`));
  });
});

describe('an in-process run that holds the main loop past a third of its lease', () => {
  it('logs a warning naming its task, whether it blocks before it returns or after an await', async () => {
    const name = uniqueQueue('iso-block');
    const q = openQueue(name);
    const warnings: Array<{ obj: { tasks?: string[]; blockedMs?: number }; msg?: string }> = [];
    const logger = { debug: () => undefined, warn: (obj: object, msg?: string) => warnings.push({ obj, msg }) };
    const spin = (ms: number) => {
      const end = performance.now() + ms;
      while (performance.now() < end);
    };
    const w = openWorker(
      name,
      {
        syncHeavy: () => spin(600),
        asyncHeavy: async () => {
          await new Promise((r) => setTimeout(r, 10));
          spin(600);
        },
        light: () => 'ok',
      },
      { leaseMs: 1000, logger },
    );
    const done: string[] = [];
    w.on('completed', (j) => done.push(j.task));
    for (const task of ['light', 'syncHeavy', 'asyncHeavy']) {
      await q.submit({ task });
      await until(w, 'completed', () => done.includes(task), 20_000);
    }
    const named = (task: string) => warnings.find((x) => x.obj.tasks?.includes(task));
    await eventually(async () => named('asyncHeavy'), 5000);
    expect(named('syncHeavy')?.msg).toMatch(
      /a run of task "syncHeavy" held the event loop for \d+ ms, more than a third of the lease/,
    );
    expect(named('syncHeavy')?.obj.blockedMs).toBeGreaterThan(333);
    expect(named('asyncHeavy')?.msg).toMatch(/make the task isolated/);
    expect(named('light')).toBeUndefined();
  });
});

describe('isolated()', () => {
  it('refuses bad options with a ValidationError naming them', () => {
    expect(() => isolated(TASKS, { in: 'fiber' as 'thread' })).toThrow(/^in: must be 'thread' or 'process'/);
    expect(() => isolated(TASKS, { max: 0 })).toThrow(ValidationError);
    expect(() => isolated(TASKS, { min: 3, max: 2 })).toThrow(/^min: must be at most max/);
    expect(() => isolated(TASKS, { memoryLimitMb: 1 })).toThrow(/^memoryLimitMb:/);
    expect(() => isolated(TASKS, { recycleAfterJobs: 1.5 })).toThrow(/^recycleAfterJobs:/);
    expect(() => isolated(TASKS, { bogus: 1 } as never)).toThrow(ValidationError);
    expect(() => isolated(new URL('https://example.com/x.js'))).toThrow(/^module: must be a file: URL/);
    expect(() => isolated('')).toThrow(/^module:/);
    // it fits a typed task map as a handler does (a compile-time check: never called)
    type Tasks = { ocr: { file: string }; other: number };
    const typed = () => new Worker<Tasks>('typed', { ocr: isolated(TASKS, { in: 'process' }) }, { connection: 'redis://x' });
    expect(typeof typed).toBe('function');
    // called outside an executor
    expect(() => (isolated(TASKS) as () => unknown)()).toThrow(ValidationError);
  });

  it('makes the executor not ready, saying why, when its module cannot load; its jobs fail as attempts', async () => {
    const name = uniqueQueue('iso-broken');
    const q = openQueue(name);
    const w = openWorker(name, { broken: isolated(new URL('../fixtures/isolated/broken.ts', import.meta.url)) });
    await w.run();
    const h = w.health();
    expect(h.ready).toBe(false);
    expect(h.checks.pools).toMatchObject({ ok: false });
    expect(h.checks.pools.detail).toMatch(/task "broken": its thread cannot start: .*this module does not load/);
    const stuck: Error[] = [];
    w.on('stuck', (_j, e) => stuck.push(e));
    await q.submit({ task: 'broken', maxRetries: 2 });
    await until(w, 'stuck', () => stuck.length > 0, 20_000);
    expect(stuck[0]).toBeInstanceOf(Error);
    expect(stuck[0].message).toMatch(/could not start: .*this module does not load/);
    expect(w.poolStats()[0].restarts.start).toBeGreaterThanOrEqual(2);
  });
});

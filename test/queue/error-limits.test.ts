/**
 * A run's error is bounded: its message and stack are cut at 8 KiB, marked with what was cut,
 * before the job hash, its attempts, the events stream, a periodic run's history, the `failed`
 * event or the executor's log get them; short errors are kept whole.
 */
import { describe, expect, it } from 'vitest';
import { cutError, MAX_ERROR_BYTES } from '../../src/executor/log-limits.js';
import { type Job, PeriodicTasks, PermanentError, Queue, Scheduler, ValidationError, Worker } from '../../src/index.js';
import { parseEntry } from '../../src/queue/events.js';
import { privateRedis } from '../helpers/setup.js';

// (a server of its own: the old, unbounded behaviour would put some 130 MB in it)
const own = privateRedis();

/** Bytes of a string in UTF-8. */
const size = (s: string) => Buffer.byteLength(s);
const CUT_MARK = / … \[cut: \d+ bytes\]$/;

describe("a run's error", () => {
  it('of 16 MiB, thrown by a periodic run with two retries, leaves every copy of it bounded and marked', async () => {
    const name = 'error-limits';
    const huge = `boom ${'x'.repeat(16 * 1024 * 1024)}`;
    const tasks = new PeriodicTasks(name, { connection: own.server.url });
    const queue = new Queue(name, { connection: own.server.url });
    const scheduler = new Scheduler(name, { connection: own.server.url });
    const logged: string[] = [];
    const logger = { debug: () => {}, warn: (obj: object, msg?: string) => void logged.push(JSON.stringify([obj, msg])) };
    const worker = new Worker(
      name,
      {
        explode: () => {
          throw new Error(huge);
        },
      },
      { connection: own.server.url, retryDelay: 10, logger },
    );
    const failures: Array<{ job: Job; error: Error }> = [];
    try {
      const failed = new Promise<void>((resolve) =>
        worker.on('failed', (job, error) => {
          failures.push({ job, error });
          resolve();
        }),
      );
      await tasks.upsert({ id: 'explode', task: 'explode', timer: 'every 1h', maxRetries: 2 });
      await scheduler.start();
      const { jobId } = (await tasks.trigger('explode'))!;
      await failed;

      // the job hash, and the job as read back
      const job = (await queue.getJob(jobId))!;
      expect(job).toMatchObject({ state: 'failed', retries: 2 });
      expect(size(job.error!)).toBeLessThanOrEqual(MAX_ERROR_BYTES);
      expect(job.error).toMatch(/^Error: boom x+ … \[cut: \d+ bytes\]$/);
      expect(await own.admin.hstrlen(queue.keys.job(jobId), 'error')).toBeLessThanOrEqual(MAX_ERROR_BYTES);

      // its attempts: three failed runs, each error bounded
      expect(job.attempts!.map((a) => a.outcome)).toEqual(['failed', 'failed', 'failed']);
      for (const a of job.attempts!) {
        expect(size(a.error!)).toBeLessThanOrEqual(MAX_ERROR_BYTES);
        expect(a.error).toMatch(CUT_MARK);
      }
      expect(await own.admin.memory('USAGE', queue.keys.attempts(jobId))).toBeLessThan(4 * MAX_ERROR_BYTES);

      // the events stream: the stuck and failed entries carry the cut error
      const entries = (await own.admin.xrange(queue.keys.events, '-', '+')) as Array<[string, string[]]>;
      const streamBytes = entries.reduce((n, [, fields]) => n + fields.reduce((m, f) => m + size(f), 0), 0);
      expect(streamBytes).toBeLessThan(4 * MAX_ERROR_BYTES + 64 * 1024);
      const withError = entries.flatMap(([sid, fields]) => parseEntry(sid, fields)).filter((e) => 'error' in e && e.id === jobId);
      expect(withError.length).toBeGreaterThanOrEqual(3);
      for (const e of withError) expect((e as { error: string }).error).toMatch(CUT_MARK);

      // the periodic run's history
      const [run] = await tasks.runs('explode');
      expect(run).toMatchObject({ jobId, status: 'failed' });
      expect(size(run.error!)).toBeLessThanOrEqual(MAX_ERROR_BYTES);
      expect(run.error).toMatch(CUT_MARK);

      // the failed event and the executor's log
      expect(failures).toHaveLength(1);
      expect(size(failures[0].error.message)).toBeLessThanOrEqual(MAX_ERROR_BYTES);
      expect(failures[0].error.message).toMatch(/^boom x+ … \[cut: \d+ bytes\]$/);
      expect(size(failures[0].job.error!)).toBeLessThanOrEqual(MAX_ERROR_BYTES);
      expect(logged).toHaveLength(3); // stuck, stuck, failed
      for (const line of logged) expect(size(line)).toBeLessThan(MAX_ERROR_BYTES + 1024);

      // (what the server holds in all: the 16 MiB stored nowhere)
      const used = Number(/used_memory:(\d+)/.exec(await own.admin.info('memory'))![1]);
      expect(used).toBeLessThan(16 * 1024 * 1024);
    } finally {
      await worker.close();
      await scheduler.close();
      await tasks.close();
      await queue.close();
    }
  }, 60_000);
});

describe('cutError', () => {
  it('gives a short error back as it is', () => {
    const e = new PermanentError('short');
    expect(cutError(e)).toBe(e);
  });

  it("keeps a long error's class, name and own fields, with its message and stack cut and marked", () => {
    const e = new ValidationError('args.x', 'é'.repeat(20_000));
    const cut = cutError(e) as ValidationError;
    expect(cut).not.toBe(e);
    expect(cut).toBeInstanceOf(ValidationError);
    expect(cut.name).toBe('ValidationError');
    expect(cut.field).toBe('args.x');
    expect(size(cut.message)).toBeLessThanOrEqual(MAX_ERROR_BYTES);
    expect(cut.message).toMatch(/^args\.x: é+ … \[cut: \d+ bytes\]$/);
    expect(size(cut.stack!)).toBeLessThanOrEqual(MAX_ERROR_BYTES);
    expect(cut.stack).toMatch(/^ValidationError: args\.x: é+ … \[cut: \d+ bytes\]$/);
    expect(cut.message).not.toContain('\uFFFD');
    const cutBytes = Number(/\[cut: (\d+) bytes\]$/.exec(cut.message)![1]);
    expect(size(cut.message) - size(` … [cut: ${cutBytes} bytes]`) + cutBytes).toBe(size(e.message));
    expect(e.message.length).toBe('args.x: '.length + 20_000); // the thrown error is left as it was
  });

  it('gives an error without a stack one, from its name and message', () => {
    const e = new Error('no stack');
    e.stack = undefined;
    expect(cutError(e).stack).toBe('Error: no stack');
  });
});

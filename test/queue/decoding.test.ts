/**
 * What a handler gets is what was submitted: a job whose stored args cannot be decoded is failed
 * at once with an UndecodableJobError naming it (the executor runs on), and an args key
 * `__proto__` reaches the handler, and the job read back, as the own property it was.
 */
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Job, PeriodicTasks, Scheduler, UndecodableJobError } from '../../src/index.js';
import { unpackValue } from '../../src/redis/job-codec.js';
import { closeAll, eventually, openQueue, openWorker, rawClient, redisUrl, track, uniqueQueue, until } from '../helpers/setup.js';

afterEach(closeAll);
let raw: Redis;
beforeAll(() => {
  raw = rawClient();
});
afterAll(() => raw.disconnect());

describe('a job whose args cannot be decoded', () => {
  it('is failed at once, without retries, with an UndecodableJobError naming it; the other jobs run', async () => {
    const name = uniqueQueue('undecodable');
    const q = openQueue(name);
    const broken = await q.submit({ id: 'broken-1', task: 'work', args: { note: 'a string the cut leaves unended' } });
    const fine = await q.submit({ task: 'work', args: { note: 'fine' } });
    // (a raw write, as another writer or a corruption would leave it: the args' last bytes gone)
    const d = (await raw.hgetBuffer(q.keys.job(broken.id), 'd'))!;
    await raw.hset(q.keys.job(broken.id), 'd', d.subarray(0, d.length - 5));

    const ran: unknown[] = [];
    const w = openWorker(name, { work: (ctx) => void ran.push(ctx.args) });
    const errors: Error[] = [];
    w.on('error', (e) => errors.push(e));
    const failed: Array<[Job, Error]> = [];
    const completed: Job[] = [];
    w.on('failed', (job, err) => failed.push([job, err]));
    w.on('completed', (job) => completed.push(job));
    await until(w, 'failed', () => failed.length === 1, 10_000);
    await until(w, 'completed', () => completed.length === 1, 10_000);

    const [job, err] = failed[0];
    expect(err).toBeInstanceOf(UndecodableJobError);
    expect(err).toMatchObject({ jobId: 'broken-1' });
    expect(err.message).toMatch(
      /^job "broken-1" cannot be run: its args cannot be decoded \(.+\); it was failed without running$/,
    );
    expect(job).toMatchObject({ id: 'broken-1', task: 'work', state: 'failed' });

    const stored = (await q.getJob(broken.id))!;
    expect(stored).toMatchObject({ state: 'failed', retries: 0, task: 'work' });
    expect(stored.args).toBeUndefined();
    expect(stored.error).toMatch(/^UndecodableJobError: job "broken-1" cannot be run: its args cannot be decoded/);
    expect(completed.map((j) => j.id)).toEqual([fine.id]);
    expect(ran).toEqual([{ note: 'fine' }]);
    expect(errors).toEqual([]);
  });

  it('fails as well a job whose whole description is garbage, with the runs finished beside it', async () => {
    const name = uniqueQueue('undecodable');
    const q = openQueue(name);
    const cut = await q.submit({ id: 'cut-fields', task: 'work' });
    const junk = await q.submit({ id: 'not-an-array', task: 'work', maxRetries: 2 });
    const fine = await q.submit({ task: 'work' });
    // an array of 3 whose first element is cut short; and bytes that are no array at all
    await raw.hset(q.keys.job(cut.id), 'd', Buffer.from([0x93, 0xa1]));
    await raw.hset(q.keys.job(junk.id), 'd', 'hello');

    const w = openWorker(name, { work: () => 'done' });
    const errors: Error[] = [];
    w.on('error', (e) => errors.push(e));
    const failed: Array<[Job, Error]> = [];
    w.on('failed', (job, err) => failed.push([job, err]));
    await until(w, 'failed', () => failed.length === 2, 10_000);
    expect(failed.map(([j]) => j.id).sort()).toEqual(['cut-fields', 'not-an-array']);
    for (const [job, err] of failed) {
      expect(err).toBeInstanceOf(UndecodableJobError);
      expect(err.message).toMatch(new RegExp(`^job "${job.id}" cannot be run: its description cannot be decoded \\(.+\\)`));
      expect(await q.getJob(job.id)).toMatchObject({ state: 'failed', retries: 0 });
    }
    expect((await eventually(() => q.getJob(fine.id).then((j) => j?.state === 'success' && j))).result).toBe('done');
    expect(errors).toEqual([]);
  });
});

describe('an args key __proto__', () => {
  /** An object with an own property `__proto__`, as JSON.parse makes it from a request. */
  const submitted = () => JSON.parse('{"__proto__":{"admin":true},"list":[{"__proto__":1,"b":2}],"__proto_":"x"}');

  it('reaches the handler, and the job and its result read back, as an own property; no prototype is set', async () => {
    const name = uniqueQueue('proto');
    const q = openQueue(name);
    const seen: Array<{ json: string; own: boolean; proto: unknown; innerOwn: boolean }> = [];
    const w = openWorker(name, {
      echo: (ctx) => {
        const args = ctx.args as Record<string, unknown> & { list: Array<Record<string, unknown>> };
        seen.push({
          json: JSON.stringify(args),
          own: Object.hasOwn(args, '__proto__'),
          proto: Object.getPrototypeOf(args),
          innerOwn: Object.hasOwn(args.list[0], '__proto__'),
        });
        return args;
      },
    });
    const job = await q.submit({ task: 'echo', args: submitted() });
    await until(w, 'completed', () => seen.length === 1);
    expect(seen[0]).toEqual({ json: JSON.stringify(submitted()), own: true, proto: Object.prototype, innerOwn: true });
    expect(({} as Record<string, unknown>).admin).toBeUndefined();

    const back = await eventually(async () => {
      const j = await q.getJob(job.id);
      return j?.state === 'success' && j;
    });
    expect(JSON.stringify(back.args)).toBe(JSON.stringify(submitted()));
    expect(JSON.stringify(back.result)).toBe(JSON.stringify(submitted()));
    expect(Object.hasOwn(back.result as object, '__proto__')).toBe(true);
    expect(Object.getPrototypeOf(back.result)).toBe(Object.prototype);
  });

  it("reaches a periodic task's handler, and the task read back, as an own property", async () => {
    const name = uniqueQueue('proto-periodic');
    const tasks = track(new PeriodicTasks(name, { connection: redisUrl() }));
    const seen: string[] = [];
    const w = openWorker(name, { echo: (ctx) => void seen.push(JSON.stringify(ctx.args)) });
    await tasks.upsert({ id: 'echo', task: 'echo', timer: 'every 1h', args: submitted() });
    const task = (await tasks.get('echo'))!;
    expect(Object.hasOwn(task.args as object, '__proto__')).toBe(true);
    expect(JSON.stringify(task.args)).toBe(JSON.stringify(submitted()));
    await track(new Scheduler(name, { connection: redisUrl() })).start();
    await tasks.trigger('echo');
    await until(w, 'completed', () => seen.length === 1);
    expect(seen).toEqual([JSON.stringify(submitted())]);
  });

  it('decodes values without the key as msgpackr does, and keeps a key __proto_ as it is', async () => {
    const { pack } = await import('msgpackr');
    const v = { a: [1, { b: new Date(5), c: Buffer.from('x') }], __proto_: 2 };
    expect(unpackValue(pack(v))).toEqual(v);
  });
});

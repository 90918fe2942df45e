import { afterEach, describe, expect, it } from 'vitest';
import { type Job, PayloadTooLargeError, PermanentError, type SubmitSpec, Worker } from '../../src/index.js';
import { packSubmits } from '../../src/redis/queue-store.js';
import { closeAll, openQueue, rawClient, redisUrl, track, uniqueQueue, until } from '../helpers/setup.js';

afterEach(closeAll);
const queue = (name: string) => openQueue(name);

describe('queue basics', () => {
  it('runs submitted jobs to success and records the lifecycle', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    const submitted = await q.submitBulk([
      { task: 'add', args: { a: 1, b: 2 } },
      { task: 'add', args: { a: 5, b: 7 }, group: 'g2', priority: 'high' },
    ]);
    expect(submitted.map((j) => j.state)).toEqual(['waiting', 'waiting']);
    const done: Job[] = [];
    const w = new Worker(
      name,
      { add: async ({ args }: { args: { a: number; b: number } }) => args.a + args.b },
      {
        connection: redisUrl(),
        concurrency: 2,
      },
    );
    track(w);
    w.on('completed', (job) => done.push(job));
    await until(w, 'completed', () => done.length === 2);
    const jobs = await Promise.all(submitted.map((j) => q.getJob(j.id)));
    expect(jobs.map((j) => j!.result).sort()).toEqual([12, 3]);
    for (const j of jobs) {
      expect(j!.state).toBe('success');
      expect(j!.worker).toBe(w.id);
      expect(j!.started).toBeGreaterThanOrEqual(j!.submitted);
      expect(j!.finished).toBeGreaterThanOrEqual(j!.started!);
      expect(j!.takeSeq).toBeGreaterThan(0);
    }
    const counts = await q.counts();
    expect(counts.success).toBe(2);
    expect(counts.waiting).toBe(0);
    expect(counts.running).toBe(0);
  });

  it('fails a job with a permanent error at once, and an unknown task with no grace without looping', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    const a = await q.submit({ task: 'boom', maxRetries: 5 });
    const b = await q.submit({ task: 'nope', maxRetries: 5 });
    const failed: Job[] = [];
    const w = new Worker(
      name,
      {
        boom: () => {
          throw new PermanentError('bad invoice');
        },
      },
      { connection: redisUrl(), unknownTaskGraceMs: 0 },
    );
    track(w);
    w.on('failed', (job) => failed.push(job));
    await until(w, 'failed', () => failed.length === 2);
    const ja = (await q.getJob(a.id))!;
    const jb = (await q.getJob(b.id))!;
    expect(ja.state).toBe('failed');
    expect(ja.retries).toBe(0);
    expect(ja.error).toContain('bad invoice');
    expect(jb.state).toBe('failed');
    expect(jb.retries).toBe(0);
    expect(jb.error).toContain('unknown task "nope"');
  });
});

describe('submitting', () => {
  it('stores every field of a bulk exactly, whatever the lengths and characters of its strings', async () => {
    const q = queue(uniqueQueue());
    // lengths on each side of the limits where a MessagePack string's header grows (32, 256, 65,536 bytes)
    const text = (bytes: number, fill = 'a') => fill.repeat(bytes);
    const specs: SubmitSpec[] = [
      { task: 't', group: text(31), id: text(31, 'i'), args: text(31) },
      { task: 't', group: text(32), id: text(32, 'j'), args: text(254) },
      { task: 't', group: 'Zürich/東京 {x}:y', id: 'ü'.repeat(100), args: { big: text(70_000) } },
      {
        task: 't',
        group: text(200),
        subject: text(1000, 's'),
        submitter: 'ops',
        priority: 'high' as const,
        maxRetries: 0,
        maxRuntime: 5000,
        args: [1, null, 'ä'],
      },
    ];
    const jobs = await q.submitBulk(specs);
    for (const [i, spec] of specs.entries()) {
      const stored = (await q.getJob(jobs[i].id))!;
      expect(stored.id).toBe(spec.id ?? jobs[i].id);
      expect(stored.group).toBe(spec.group);
      expect(stored.args).toEqual(spec.args);
      expect(stored.priority).toBe(spec.priority ?? 'low');
      expect(stored.maxRetries).toBe(spec.maxRetries ?? 3);
      expect(stored.subject).toBe(spec.subject ?? '');
      expect(stored.maxRuntime).toBe(spec.maxRuntime);
      expect(stored.state).toBe('waiting');
    }
    expect((await q.groups()).map((g) => g.group).sort()).toEqual(specs.map((s) => s.group).sort());
  });

  it('refuses a bulk that packs to more than one submit call carries, naming its size', () => {
    const q = queue(uniqueQueue());
    const specs = [0, 1].map(() => q.check({ task: 't', args: 'x'.repeat(100) }));
    const size = packSubmits(specs, Infinity).packed.length;
    expect(() => packSubmits(specs, size)).not.toThrow();
    const err = (() => {
      try {
        packSubmits(specs, size - 1);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(PayloadTooLargeError);
    expect(err).toMatchObject({ field: 'specs', size, limit: size - 1 });
  });

  it('keeps the groups hash a table from its first group (no field scan per group), and lists only groups', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    await q.submitBulk([
      { task: 'x', group: 'a' },
      { task: 'x', group: 'b' },
    ]);
    const raw = rawClient();
    try {
      expect(await raw.object('ENCODING', q.keys.groups)).toBe('hashtable');
    } finally {
      raw.disconnect();
    }
    expect((await q.groups()).map((g) => g.group).sort()).toEqual(['a', 'b']);
  });
});
